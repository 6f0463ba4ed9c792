// The connector contract (transports/core/connector.h), held against every
// transport: two ranks in two processes, connected by the transport's own
// connect() and driven through SendConnector/RecvConnector alone, with real
// shared memory, sockets or queue pairs and no mocks. Every message's tag
// and bytes are checked against message_pattern.h, which the receiver
// computes on its own. README.md lists what each case holds a transport to.
//
// A transport joins with one INSTANTIATE_TEST_SUITE_P line at the end.
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <vector>

#include "clock.h"
#include "handshake_wire.h"
#include "pair_end.h"
#include "socket.h"
#include "socket_mesh.h"

namespace strata::test {
namespace {

// How a receiver that holds its slots, while it keeps polling, stops a sender.
enum class Flow {
  Credits,    // after exactly nslots messages: the receiver's slots are all the buffer there is
  Buffered,   // after nslots messages and what the transport buffers on the way (socket buffers)
  Unbounded,  // not at all: what arrives before its slot is free waits inside the receiving transport
};

struct TransportUnderTest {
  const char* name;  // Transport::name()
  Flow flow;
};

// gtest names a failing case's parameter with this instead of its bytes.
void PrintTo(const TransportUnderTest& t, std::ostream* os) { *os << t.name; }

constexpr double kCaseSeconds = 120;       // a rank's process, connect and teardown included
constexpr double kFailureSeconds = 10;     // a dead or aborting peer is noticed within this
constexpr double kRefusedSeconds = 0.3;    // a sender refused this long in a row is stopped
constexpr double kAfterFailureSeconds = 0.3;
// What a transport may buffer between a sender and a receiver that holds its
// slots, beyond the FIFO, before the test calls the sender unbounded.
constexpr size_t kBufferedBytes = size_t(64) << 20;

constexpr uint64_t kReady = 1, kSeen = 2, kAwake = 3;  // words the two ranks post each other

const char* flowText(Flow f) {
  return f == Flow::Credits ? "credits" : f == Flow::Buffered ? "buffered" : "unbounded";
}

// Publishes full-slot messages from `first` on, until acquire() has refused
// for kRefusedSeconds in a row; returns the index after the last published.
// A transport that never refuses fails once `first` + what kBufferedBytes
// holds are out. Where a free slot waits only for bytes to leave (not
// Credits), a refused sender must have bytes left to send: flushed() false.
uint64_t fillUntilRefused(PairEnd& end, Reporter& rep, uint64_t first, Flow flow) {
  const uint64_t cap = first + end.nslots() + kBufferedBytes / end.slotBytes();
  const double deadline = nowSeconds() + kWaitSeconds;
  double refusedSince = -1;
  uint64_t m = first;
  while (!rep.failed()) {
    if (m == cap) {
      rep.fail("rank %d: %llu messages went out to a receiver that released none, and the sender was never "
               "refused (%s flow)", end.rank(), (unsigned long long)(m - first), flowText(flow));
      break;
    }
    if (end.trySend(0, m, end.slotBytes(), rep)) {
      ++m;
      refusedSince = -1;
      continue;
    }
    if (rep.failed()) break;
    if (flow != Flow::Credits && end.flushed(0)) {
      rep.fail("rank %d: acquire() refused message %llu although flushed() says nothing waits to be sent",
               end.rank(), (unsigned long long)m);
      break;
    }
    const double now = nowSeconds();
    if (refusedSince < 0) refusedSince = now;
    if (now - refusedSince >= kRefusedSeconds) break;
    Status s = end.health({&end.send(0)});
    if (!s.isOk()) rep.fail("rank %d: health() reports %s while the receiver merely holds its slots", end.rank(),
                            describe(s).c_str());
    if (now > deadline) rep.fail("rank %d: filling the FIFO took more than %.0f s", end.rank(), kWaitSeconds);
    end.pump();
    sched_yield();
  }
  return m;
}

// Both ranks send `count` messages on every channel and receive as many,
// at once; with `pauseEvery`, the receiver pauses a millisecond every so many
// messages, so that the sender meets a full FIFO now and then.
void exchange(PairEnd& end, Reporter& rep, uint64_t count, const std::function<size_t(uint64_t, int)>& size,
              uint64_t pauseEvery = 0) {
  std::vector<uint64_t> sent(end.nchannels()), got(end.nchannels());
  auto done = [&] {
    bool all = true;
    for (int ch = 0; ch < end.nchannels(); ++ch) {
      if (sent[ch] < count && end.trySend(ch, sent[ch], size(sent[ch], ch), rep)) ++sent[ch];
      if (got[ch] < count && end.tryReceive(ch, got[ch], size(got[ch], ch), rep) == 1) {
        ++got[ch];
        if (pauseEvery && got[ch] % pauseEvery == 0) usleep(1000);
      }
      all = all && sent[ch] == count && got[ch] == count;
    }
    return all;
  };
  if (end.waitUntil(rep, "the exchange's messages", done) && end.waitFlushed(rep)) end.meet(rep, "the exchange's end");
}

// Sizes that cross every boundary a transport may have: none, the inline
// payloads of a shm slot header (32 bytes), a page, and a full slot.
size_t boundarySize(uint64_t i, size_t slot) {
  const size_t kSizes[] = {0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 127, 4095, 4096, 4097, slot - 1, slot, 0, slot, 1, 0};
  return kSizes[i % (sizeof(kSizes) / sizeof(kSizes[0]))];
}

class Conformance : public ::testing::TestWithParam<TransportUnderTest> {
 protected:
  const char* name() const { return GetParam().name; }
  Flow flow() const { return GetParam().flow; }

  // Runs body on both ranks and checks that each ended as `ends` says; a
  // rank that reports a skip (the transport cannot run here) skips the test.
  void run(const PairBody& body, std::array<Ends, 2> ends = {Ends::Passed, Ends::Passed},
           const PairOptions& options = PairOptions()) {
    const PairRun r = runPair(name(), options, kCaseSeconds, body);
    std::string skipped;
    for (int rank = 0; rank < 2; ++rank) {
      if (!r.here[rank]) continue;
      const RankOutcome& o = r.outcomes[rank];
      for (const auto& f : o.failures) ADD_FAILURE() << "rank " << rank << ": " << f;
      if (!o.skips.empty()) skipped = o.skips.front();
    }
    if (!skipped.empty()) GTEST_SKIP() << skipped;
    for (int rank = 0; rank < 2; ++rank) {
      if (!r.here[rank]) continue;
      const RankOutcome& o = r.outcomes[rank];
      if (ends[rank] == Ends::Killed)
        EXPECT_EQ(o.exitText, "killed by signal 9") << "rank " << rank << " was to be killed";
      else
        EXPECT_TRUE(o.exited) << "rank " << rank << ": " << o.exitText;
    }
  }
};

// Messages arrive in the order published, with their tags and bytes, on
// each of two channels, while both directions run at once.
TEST_P(Conformance, InOrderOnTwoChannelsBothWays) {
  PairOptions options;
  options.nchannels = 2;
  run([](PairEnd& end, Reporter& rep) {
    const size_t slot = end.slotBytes();
    exchange(end, rep, 64, [slot](uint64_t m, int ch) {
      const size_t kSizes[] = {1, 100, 4096, 17, slot, 0, 33, 2051};
      return kSizes[(m * 5 + ch) % 8];
    });
  }, {Ends::Passed, Ends::Passed}, options);
}

// Many more messages than slots, each one's bytes its own: a slot reused
// without its new contents, or a stale header, shows.
TEST_P(Conformance, SlotsReusedManyTimesOver) {
  run([](PairEnd& end, Reporter& rep) {
    const size_t slot = end.slotBytes();
    exchange(end, rep, 64 * end.nslots(), [slot](uint64_t m, int) {
      const size_t kSizes[] = {slot, 33, 4096 + 13, 0, 1000, 32};
      return kSizes[m % 6];
    }, 5);
  });
}

// Zero bytes (publish(0, tag) arrives with bytes == 0 and its tag), the
// inline sizes around 32 bytes, a page either side and a full slot.
TEST_P(Conformance, ZeroInlineAndFullSlotSizes) {
  run([](PairEnd& end, Reporter& rep) {
    const size_t slot = end.slotBytes();
    exchange(end, rep, 40, [slot](uint64_t m, int) { return boundarySize(m, slot); });
  });
}

// A receiver that keeps polling but releases nothing stops the sender:
// acquire() returns nullptr (at once) and goes on doing so; once slots are
// released the sender proceeds, and everything arrives in order.
TEST_P(Conformance, ReceiverHoldingItsSlotsStopsTheSender) {
  if (flow() == Flow::Unbounded)
    GTEST_SKIP() << name() << " takes every message into a receiver that keeps polling (those that arrive before "
                 "their slot is free wait inside the transport: see its README, Flow control), so only a silent "
                 "receiver stops its sender (SilentPeerIsNoFailure checks that)";
  const Flow flow = this->flow();
  run([flow](PairEnd& end, Reporter& rep) {
    const size_t full = end.slotBytes();
    const uint64_t nslots = end.nslots();
    const uint64_t extra = 2 * nslots;
    if (end.rank() == 0) {
      uint64_t out = fillUntilRefused(end, rep, 0, flow);
      if (rep.failed()) return;
      if (out < nslots || (flow == Flow::Credits && out != nslots))
        rep.fail("the sender was stopped after %llu messages; a FIFO of %llu slots should take %s",
                 (unsigned long long)out, (unsigned long long)nslots,
                 flow == Flow::Credits ? "exactly that many" : "at least that many");
      std::printf("rank 0: refused after %llu messages to a receiver holding its %llu slots\n",
                  (unsigned long long)out, (unsigned long long)nslots);
      if (!end.oob().post(out).isOk()) return;
      if (flow == Flow::Credits) {
        // The receiver releases one slot: exactly one more message goes.
        if (!end.sendMessage(0, out, full, rep)) return;
        const uint64_t after = fillUntilRefused(end, rep, ++out, flow);
        if (after != out)
          rep.fail("one released slot let %llu messages go", (unsigned long long)(after - out + 1));
        if (!end.oob().post(out = after).isOk()) return;
      }
      for (uint64_t m = out; m < out + extra; ++m)
        if (!end.sendMessage(0, m, full, rep)) return;
      if (end.waitFlushed(rep)) end.meet(rep, "the end");
      return;
    }
    uint64_t out = 0, m = 0;
    if (!end.waitWord(rep, "the sender to be refused", &out)) return;
    if (flow == Flow::Credits) {
      if (!end.receiveMessage(0, m++, full, rep)) return;
      if (!end.waitWord(rep, "the sender to check what one release let go", &out)) return;
    }
    for (; m < out + extra; ++m)
      if (!end.receiveMessage(0, m, full, rep)) return;
    end.meet(rep, "the end");
  });
}

// A peer that is alive but makes no call at all for kSilenceSeconds: the
// other side's acquire() fills the FIFO and then refuses, peek() finds
// nothing, nothing blocks and health() stays OK throughout (liveness without
// progress is no failure: timeouts are the channel's business). Then the
// peer wakes and everything arrives.
TEST_P(Conformance, SilentPeerIsNoFailure) {
  const Flow flow = this->flow();
  run([flow](PairEnd& end, Reporter& rep) {
    const size_t full = end.slotBytes();
    const uint64_t replies = end.nslots();
    if (end.rank() == 1) {
      usleep(static_cast<useconds_t>(kSilenceSeconds * 1e6));
      uint64_t out = 0;
      if (!end.oob().post(kAwake).isOk() || !end.waitWord(rep, "how many messages went out", &out)) return;
      for (uint64_t m = 0; m < out; ++m)
        if (!end.receiveMessage(0, m, full, rep)) return;
      for (uint64_t m = 0; m < replies; ++m)
        if (!end.sendMessage(0, m, 100, rep)) return;
      if (end.waitFlushed(rep)) end.meet(rep, "the end");
      return;
    }
    const double start = nowSeconds();
    uint64_t out = fillUntilRefused(end, rep, 0, flow);
    if (rep.failed()) return;
    if (out < static_cast<uint64_t>(end.nslots()) || (flow == Flow::Credits && out != uint64_t(end.nslots())))
      rep.fail("a silent receiver stopped the sender after %llu messages; the FIFO has %d slots",
               (unsigned long long)out, end.nslots());
    uint64_t word = 0;
    while (!end.oob().poll(&word)) {
      end.pump();
      size_t bytes = 0;
      SlotTag tag;
      if (end.peek(0, &bytes, &tag)) {
        rep.fail("peek() returned a slot from a rank that has sent nothing");
        return;
      }
      // Where sockets buffer, the kernel may still take a message now and then.
      if (end.trySend(0, out, full, rep)) {
        if (flow == Flow::Credits) {
          rep.fail("a slot came free while the receiver made no call at all");
          return;
        }
        ++out;
      }
      Status s = end.health();
      if (!s.isOk()) {
        rep.fail("health() reports %s after %.2f s of the peer's silence", describe(s).c_str(),
                 nowSeconds() - start);
        return;
      }
      if (rep.failed() || nowSeconds() - start > kWaitSeconds) {
        rep.fail("the silent rank did not wake within %.0f s", kWaitSeconds);
        return;
      }
      sched_yield();
    }
    if (word != kAwake) rep.fail("the silent rank posted %llu, want %llu", (unsigned long long)word,
                                 (unsigned long long)kAwake);
    std::printf("rank 0: %llu messages went out to a silent receiver; refused, all well, for %.2f s\n",
                (unsigned long long)out, nowSeconds() - start);
    if (!end.oob().post(out).isOk()) return;
    for (uint64_t m = 0; m < replies; ++m)
      if (!end.receiveMessage(0, m, 100, rep)) return;
    if (end.waitFlushed(rep)) end.meet(rep, "the end");
  });
}

// What the survivor of a killed peer sees on the connector it waits on:
// health() turns into a remote error within kFailureSeconds of the peer's
// death, and nothing blocks. `step` drives the connector once (true if it
// moved); the error is looked for only when it did not, as a channel does.
void expectFailureNoticed(PairEnd& end, Reporter& rep, Connector& watched, const char* role,
                          const std::function<bool()>& step) {
  const double deadline = nowSeconds() + kWaitSeconds;
  double goneAt = -1, failedAt = -1;
  Status error;
  for (;;) {
    end.pump();
    const bool moved = step();
    if (rep.failed()) return;
    const double now = nowSeconds();
    if (goneAt < 0 && end.oob().peerGone()) goneAt = now;
    if (!moved && failedAt < 0) {
      error = watched.health();
      if (!error.isOk()) failedAt = now;
    }
    // Driven on a while after the failure: no garbage, no block, no crash.
    if (failedAt >= 0 && now - failedAt > kAfterFailureSeconds) break;
    if (failedAt < 0 && goneAt >= 0 && now - goneAt > kFailureSeconds) {
      Status s = watched.health();
      if (s.isOk())
        rep.fail("rank %d: the %s's health() is still OK %.0f s after the peer died", end.rank(), role,
                 kFailureSeconds);
      else
        rep.fail("rank %d: the %s kept moving for %.0f s after the peer died, so a channel, which asks health() "
                 "only when nothing moves, never learns of it (health() reports %s)", end.rank(), role,
                 kFailureSeconds, describe(s).c_str());
      return;
    }
    if (now > deadline) {
      rep.fail("rank %d: the peer neither died nor failed within %.0f s", end.rank(), kWaitSeconds);
      return;
    }
    sched_yield();
  }
  if (error.code() != STRATA_ERR_REMOTE)
    rep.fail("rank %d: the %s's health() reports %s; want a remote error", end.rank(), role,
             describe(error).c_str());
  std::printf("rank %d: the %s's health() failed %.3f s after the peer's test socket closed: %s\n", end.rank(),
              role, goneAt >= 0 ? failedAt - goneAt : -1.0, describe(error).c_str());
}

// The sender is killed (SIGKILL) right after publishing its last message,
// with slots in flight. The receiver gets already published messages, intact
// and in order, or nothing, and never more than was published.
TEST_P(Conformance, SenderKilledMidStream) {
  run([](PairEnd& end, Reporter& rep) {
    const size_t full = end.slotBytes();
    const uint64_t total = 3 * end.nslots();
    if (end.rank() == 0) {
      for (uint64_t m = 0; m < total; ++m)
        if (!end.sendMessage(0, m, full, rep)) return;
      raise(SIGKILL);
    }
    uint64_t m = 0;
    expectFailureNoticed(end, rep, end.recv(0), "receiver", [&] {
      if (m < total) {
        const int got = end.tryReceive(0, m, full, rep);
        if (got == 1 && ++m % 4 == 0) usleep(2000);  // slower than the sender: it dies with slots in flight
        return got == 1;
      }
      size_t bytes = 0;
      SlotTag tag;
      if (end.peek(0, &bytes, &tag)) rep.fail("peek() returned a slot after all %llu published messages",
                                              (unsigned long long)total);
      return false;
    });
    std::printf("rank 1: received %llu of the %llu messages published before the sender died\n",
                (unsigned long long)m, (unsigned long long)total);
  }, {Ends::Killed, Ends::Passed});
}

// The receiver is killed holding a slot it peeked at; the sender, which
// goes on publishing whenever acquire() lets it, learns of it.
TEST_P(Conformance, ReceiverKilledMidStream) {
  run([](PairEnd& end, Reporter& rep) {
    const size_t full = end.slotBytes();
    if (end.rank() == 1) {
      for (uint64_t m = 0; m < 2; ++m)
        if (!end.receiveMessage(0, m, full, rep)) return;
      size_t bytes = 0;
      SlotTag tag;
      if (end.waitUntil(rep, "message 2", [&] { return end.peek(0, &bytes, &tag) != nullptr; }, {&end.recv(0)}))
        raise(SIGKILL);
      return;
    }
    uint64_t m = 0;
    expectFailureNoticed(end, rep, end.send(0), "sender", [&] {
      const bool sent = end.trySend(0, m, full, rep);
      m += sent;
      return sent;
    });
  }, {Ends::Passed, Ends::Killed});
}

// One side calls abort() on its connector; the other end of that connector
// reports an error within kFailureSeconds, and finds nothing more to peek.
// The aborting rank stays alive (and keeps polling) until then: its death
// must not be what the peer notices.
void abortReachesPeer(PairEnd& end, Reporter& rep, int aborter) {
  for (uint64_t m = 0; m < 2; ++m) {
    const bool ok = end.rank() == 0 ? end.sendMessage(0, m, 100, rep) : end.receiveMessage(0, m, 100, rep);
    if (!ok) return;
  }
  uint64_t word = 0;
  if (end.rank() == aborter) {
    if (!end.waitWord(rep, "the other rank to be ready", &word)) return;
    Connector& mine = end.rank() == 0 ? static_cast<Connector&>(end.send(0)) : end.recv(0);
    mine.abort();
    if (!end.waitWord(rep, "the other rank's word that it saw the abort", &word, false)) return;
    if (word != kSeen) rep.fail("rank %d: the other rank posted %llu", end.rank(), (unsigned long long)word);
    end.meet(rep, "the end");
    return;
  }
  if (!end.oob().post(kReady).isOk()) return;
  Connector& watched = end.rank() == 0 ? static_cast<Connector&>(end.send(0)) : end.recv(0);
  const double start = nowSeconds();
  Status s;
  while ((s = watched.health()).isOk()) {
    end.pump();
    size_t bytes = 0;
    SlotTag tag;
    if (end.rank() == 1 && end.peek(0, &bytes, &tag)) {
      rep.fail("peek() returned a slot although the sender published no more");
      return;
    }
    if (nowSeconds() - start > kFailureSeconds) {
      rep.fail("rank %d: health() still OK %.0f s after the other end's abort()", end.rank(), kFailureSeconds);
      return;
    }
    sched_yield();
  }
  if (s.code() != STRATA_ERR_REMOTE) rep.fail("rank %d: health() reports %s; want a remote error", end.rank(),
                                              describe(s).c_str());
  std::printf("rank %d: the abort was seen after %.3f s: %s\n", end.rank(), nowSeconds() - start,
              describe(s).c_str());
  if (end.oob().post(kSeen).isOk()) end.meet(rep, "the end");
}

TEST_P(Conformance, AbortBySenderReachesReceiver) {
  run([](PairEnd& end, Reporter& rep) { abortReachesPeer(end, rep, 0); });
}

TEST_P(Conformance, AbortByReceiverReachesSender) {
  run([](PairEnd& end, Reporter& rep) { abortReachesPeer(end, rep, 1); });
}

// sendsFromCaller(): publishFrom() sends the caller's bytes, in order with
// slots, refusing (and sending nothing) only when no FIFO entry is free; once
// flushed() the transport no longer reads them (they are overwritten and
// freed). Transports that do not offer it refuse publishFrom() and send
// nothing.
TEST_P(Conformance, SendFromCallerOrRefused) {
  run([](PairEnd& end, Reporter& rep) {
    const size_t full = end.slotBytes();
    auto size = [full](uint64_t m) { return boundarySize(m * 3, full); };
    const uint64_t total = 4 * end.nslots() + 2;
    if (end.rank() == 1) {
      usleep(300000);  // the sender meets a full FIFO first
      for (uint64_t m = 0; m < total; ++m) {
        if (!end.receiveMessage(0, m, size(m), rep)) return;
        if (m % 3 == 0) usleep(1000);
      }
      end.meet(rep, "the end");
      return;
    }
    const bool offered = end.send(0).sendsFromCaller();
    uint64_t refused = 0;
    for (uint64_t m = 0; m < total; ++m) {
      const size_t bytes = size(m);
      if (!offered || m % 2 == 1) {
        if (!offered && m == 0) {
          // Anything this sent would reach the receiver ahead of message 0.
          std::vector<char> decoy(100, '\xee');
          if (end.publishFrom(0, decoy.data(), decoy.size(), tagOf(end.outgoing(0), 0)))
            rep.fail("publishFrom() accepted a message although sendsFromCaller() is false");
        }
        if (!end.sendMessage(0, m, bytes, rep)) return;
        continue;
      }
      std::vector<char> buffer(bytes + 8);
      char* data = buffer.data() + m % 7;  // not aligned
      fillMessage(data, bytes, end.outgoing(0), m);
      bool sent = false;
      auto tryPublish = [&] {
        const bool entryFree = end.acquire(0, 0) != nullptr;
        sent = end.publishFrom(0, data, bytes, tagOf(end.outgoing(0), m));
        if (entryFree && !sent) rep.fail("acquire(0) found a free slot for message %llu but publishFrom() refused",
                                         (unsigned long long)m);
        refused += !sent;
        return sent;
      };
      if (!end.waitUntil(rep, "room for a message from the caller's memory", tryPublish, {&end.send(0)}) ||
          !end.waitUntil(rep, "flushed() after publishFrom()", [&] { return end.flushed(0); }, {&end.send(0)}))
        return;
      std::memset(data, 0x5a, bytes);  // what a transport still reading would send instead
    }
    std::printf("rank 0: sendsFromCaller() %s; publishFrom() refused %llu times for a full FIFO\n",
                offered ? "true" : "false", (unsigned long long)refused);
    if (end.waitFlushed(rep)) end.meet(rep, "the end");
  });
}

// landsInCaller(): a message posted with a destination and its own tag and
// size lands there (peek() returns the destination, the bytes intact), one
// posted with another tag or size, with none, or after its header came
// lands in its slot; no more postings than slots are taken, consuming makes
// room for more, and dropPostings() forgets them all. Transports that do
// not offer it refuse post().
TEST_P(Conformance, LandsInCallerOrRefused) {
  run([](PairEnd& end, Reporter& rep) {
    const size_t full = end.slotBytes();
    auto size = [full](uint64_t m) { return m % 2 ? full : 1000 + m; };
    const uint64_t n = static_cast<uint64_t>(end.nslots());
    const uint64_t total = n + 3;
    if (end.rank() == 0) {
      // Messages 0..n-1 once the receiver has posted, the rest once it has
      // posted again.
      if (!end.meet(rep, "the first postings")) return;
      for (uint64_t m = 0; m < total; ++m) {
        if (m == n && !end.meet(rep, "the second postings")) return;
        if (!end.sendMessage(0, m, size(m), rep)) return;
      }
      if (end.waitFlushed(rep)) end.meet(rep, "the end");
      return;
    }
    RecvConnector& recv = end.recv(0);
    if (!recv.landsInCaller()) {
      char decoy[8];
      if (recv.post(decoy, sizeof(decoy), tagOf(end.incoming(0), 0)))
        rep.fail("post() took a posting although landsInCaller() is false");
      if (!end.meet(rep, "the first postings")) return;
      for (uint64_t m = 0; m < total; ++m) {
        if (m == n && !end.meet(rep, "the second postings")) return;
        if (!end.receiveMessage(0, m, size(m), rep)) return;
      }
      end.meet(rep, "the end");
      return;
    }
    std::vector<std::vector<char>> buffers(total);
    std::vector<char*> dst(total);
    for (uint64_t m = 0; m < total; ++m) {
      buffers[m].assign(size(m) + 8, '\x11');
      dst[m] = buffers[m].data() + m % 5;  // not aligned
    }
    // Which of 0..n-1 may land: 0 and from 4 on; 1 is posted with the next
    // message's tag, 2 one byte short, 3 without a destination.
    auto lands = [](uint64_t m) { return m == 0 || m >= 4; };
    for (uint64_t m = 0; m < n; ++m) {
      SlotTag tag = tagOf(end.incoming(0), m == 1 ? m + 1 : m);
      if (!recv.post(m == 3 ? nullptr : dst[m], size(m) - (m == 2), tag))
        rep.fail("post() refused posting %llu of %llu, one per slot", (unsigned long long)m, (unsigned long long)n);
    }
    if (recv.post(dst[n], size(n), tagOf(end.incoming(0), n)))
      rep.fail("post() took %llu postings with %llu slots", (unsigned long long)n + 1, (unsigned long long)n);
    if (!end.meet(rep, "the first postings")) return;
    // Receives message m, checks where it landed and what it holds.
    auto receive = [&](uint64_t m, bool landed) {
      size_t got = 0;
      SlotTag tag{};
      const void* at = nullptr;
      if (!end.waitUntil(rep, "a posted message", [&] { return (at = end.peek(0, &got, &tag)) != nullptr; }))
        return false;
      if (landed != (at == dst[m]))
        rep.fail("message %llu landed %s", (unsigned long long)m,
                 landed ? "in a slot, not at its posting's destination" : "at a destination its posting did not allow");
      const std::string bad = checkMessage(at, got, tag, end.incoming(0), m, size(m));
      if (!bad.empty()) rep.fail("message %llu: %s", (unsigned long long)m, bad.c_str());
      if (at != dst[m] && buffers[m][m % 5] != '\x11')
        rep.fail("message %llu landed in its slot but its destination was written", (unsigned long long)m);
      end.release(0);
      return !rep.failed();
    };
    for (uint64_t m = 0; m < n; ++m)
      if (!receive(m, lands(m))) return;
    // The window moved: n and n+1 posted in time, then dropped (a failed
    // operation's) and posted again, n without a destination this time; n+2
    // only once it is in.
    for (uint64_t m : {n, n + 1})
      if (!recv.post(dst[m], size(m), tagOf(end.incoming(0), m)))
        rep.fail("post() refused posting %llu with every slot free", (unsigned long long)m);
    recv.dropPostings();
    if (!recv.post(nullptr, size(n), tagOf(end.incoming(0), n)) ||
        !recv.post(dst[n + 1], size(n + 1), tagOf(end.incoming(0), n + 1)))
      rep.fail("post() refused postings after dropPostings()");
    if (!end.meet(rep, "the second postings") || !receive(n, false) || !receive(n + 1, true)) return;
    size_t got = 0;
    SlotTag tag{};
    if (!end.waitUntil(rep, "the last message", [&] { return end.peek(0, &got, &tag) != nullptr; })) return;
    if (!recv.post(dst[n + 2], size(n + 2), tagOf(end.incoming(0), n + 2)))
      rep.fail("post() refused a posting with room for it");
    if (!receive(n + 2, false)) return;
    end.expectNothingBlocked(rep);
    end.meet(rep, "the end");
  });
}

// progress() and flushed(): connectors that need no progress move nothing in
// it and have no descriptors to sleep on; every connector starts flushed;
// a send connector becomes flushed once its messages are out, and a memory
// transport's is flushed at once after publish().
TEST_P(Conformance, ProgressAndFlushed) {
  run([](PairEnd& end, Reporter& rep) {
    for (Connector* c : end.all()) {
      if (!c->flushed()) rep.fail("rank %d: a connector is not flushed before any message", end.rank());
      if (c->needsProgress()) continue;
      std::vector<pollfd> fds;
      c->addPollFds(fds);
      if (c->progress() || !fds.empty())
        rep.fail("rank %d: a connector that needs no progress() moved something in it or has %zu fds to sleep on",
                 end.rank(), fds.size());
    }
    const size_t full = end.slotBytes();
    const uint64_t total = 3 * end.nslots();
    if (end.rank() == 1) {
      for (uint64_t m = 0; m < total; ++m)
        if (!end.receiveMessage(0, m, full, rep)) return;
      end.meet(rep, "the end");
      return;
    }
    for (uint64_t m = 0; m < total; ++m) {
      if (!end.sendMessage(0, m, full, rep)) return;
      if (!end.send(0).needsProgress() && !end.flushed(0))
        rep.fail("a connector that needs no progress() is not flushed right after publish()");
    }
    if (end.waitFlushed(rep)) end.meet(rep, "the end");
  });
}

// flushed() covers every message published, not only the last one: the
// caller's memory behind every publishFrom() is overwritten (and freed) as
// soon as flushed() says so, while a receiver slow to start makes the
// transport hold messages back. A transport that sends from its slots alone
// has nothing of the caller's to read after publish(): ProgressAndFlushed
// covers it.
TEST_P(Conformance, FlushedCoversEveryMessage) {
  run([](PairEnd& end, Reporter& rep) {
    if (!end.send(0).sendsFromCaller()) {
      rep.skip("%s does not send from the caller's memory", end.transportName());
      return;
    }
    const size_t full = end.slotBytes();
    const uint64_t total = 32 * end.nslots();
    auto size = [full](uint64_t m) { return m % 2 == 0 ? full : 1; };
    if (end.rank() == 1) {
      usleep(300000);
      for (uint64_t m = 0; m < total; ++m)
        if (!end.receiveMessage(0, m, size(m), rep)) return;
      end.meet(rep, "the end");
      return;
    }
    uint64_t m = 0;
    std::vector<char> next;                // message m's bytes, while publishFrom() refuses them
    std::vector<std::vector<char>> lent;   // what the transport may still read
    auto forget = [&] {
      for (auto& b : lent) std::memset(b.data(), 0x5a, b.size());
      lent.clear();
    };
    auto step = [&] {
      if (end.flushed(0)) forget();
      if (m == total) return true;
      if (m % 2 == 1) {
        m += end.trySend(0, m, size(m), rep);
        return false;
      }
      if (next.empty()) {
        next.resize(size(m));
        fillMessage(next.data(), next.size(), end.outgoing(0), m);
      }
      if (end.publishFrom(0, next.data(), next.size(), tagOf(end.outgoing(0), m))) {
        lent.push_back(std::move(next));  // the bytes stay where publishFrom() saw them
        next = std::vector<char>();
        ++m;
      }
      return false;
    };
    if (end.waitUntil(rep, "every message out", step, {&end.send(0)}) && end.waitFlushed(rep)) {
      forget();
      end.meet(rep, "the end");
    }
  });
}

// A receiver may sleep in poll() on the descriptors its connectors list
// (addPollFds), as a channel's waiting thread does: they turn ready when a
// message comes, well before the poll's 2 s timeout. Connectors that list
// none are polled in a loop instead.
// An attacker who saw the out-of-band traffic (rank 1's data port and the
// communicator's tag cross it in the clear) connects to rank 1 as rank 0
// before rank 0 does: once with the hello of earlier strata versions, which
// the tag alone made good, and once with a well-formed handshake whose
// proof it cannot compute. Both are refused, and rank 0's own connection
// carries the exchange intact. Only transports with a data port to attack.
void strangerAtDataPort(uint64_t purpose, const void* all, size_t bytes, uint64_t commTag, Reporter& rep) {
  if (bytes != 2 * sizeof(sockets::ListenRecord)) return;
  SockAddr port;
  if (!sockets::decodeListenRecord(static_cast<const sockets::ListenRecord*>(all)[1], 1, &port).isOk()) return;
  // Held open for the whole case: the strangers never leave on their own.
  static std::vector<int> strangers;
  const double deadline = nowSeconds() + 10;
  int oldStyle = -1, forger = -1;
  if (!net::connectTo(port, deadline, "rank 1's data port", &oldStyle).isOk() ||
      !net::connectTo(port, deadline, "rank 1's data port", &forger).isOk())
    return rep.fail("cannot reach rank 1's data port");
  strangers.insert(strangers.end(), {oldStyle, forger});
  const uint64_t oldHello[4] = {purpose, commTag, 0 /* rank 0, index 0 */, 1 /* one per peer */};
  (void)!send(oldStyle, oldHello, sizeof(oldHello), MSG_NOSIGNAL);
  security::ClientHello hello;
  std::memset(&hello, 0, sizeof(hello));
  hello.magic = security::kHandshakeMagic;
  hello.version = security::kHandshakeVersion;
  hello.claim = security::Claim{purpose, commTag, 0, 1, 0, 1, 0, 0};
  security::ServerProof answer;
  if (!net::sendAll(forger, &hello, sizeof(hello), deadline, "rank 1").isOk() ||
      !net::recvAll(forger, &answer, sizeof(answer), deadline, "rank 1").isOk())
    return rep.fail("rank 1 did not answer a well-formed hello");
  security::ClientProof forged;
  forged.mac.fill(0x5a);
  (void)!send(forger, &forged, sizeof(forged), MSG_NOSIGNAL);
  char byte;
  if (net::recvAll(forger, &byte, 1, deadline, "rank 1").code() != STRATA_ERR_REMOTE)
    rep.fail("rank 1 kept a connection whose proof was forged");
}

TEST_P(Conformance, StrangerWithTheRightTagIsRefused) {
  const std::string transport = name();
  // The tcp and ib transports' handshake purposes ("TCPHELLO", "IBBHELLO").
  const uint64_t purpose = transport == "tcp" ? 0x4f4c4c4548504354ull : transport == "ib" ? 0x4f4c4c4548424249ull : 0;
  if (purpose == 0) GTEST_SKIP() << transport << " listens on no data port of its own";
  PairOptions options;
  options.eavesdropper = [purpose](int rank, const void* all, size_t bytes, uint64_t commTag, Reporter& rep) {
    if (rank == 0) strangerAtDataPort(purpose, all, bytes, commTag, rep);
  };
  run([](PairEnd& end, Reporter& rep) {
    exchange(end, rep, 64, [&end](uint64_t m, int) { return boundarySize(m, end.slotBytes()); });
  }, {Ends::Passed, Ends::Passed}, options);
}

TEST_P(Conformance, ReceiverCanSleepOnPollFds) {
  run([](PairEnd& end, Reporter& rep) {
    const int rounds = 5;
    auto size = [](uint64_t m) { return 100 + 5000 * m; };
    if (end.rank() == 0) {
      for (uint64_t m = 0; m < rounds; ++m) {
        usleep(100000);
        if (!end.sendMessage(0, m, size(m), rep) || !end.waitFlushed(rep)) return;
      }
      end.meet(rep, "the end");
      return;
    }
    for (uint64_t m = 0; m < rounds; ++m) {
      const double start = nowSeconds();
      int got = 0;
      size_t slept = 0;
      while ((got = end.tryReceive(0, m, size(m), rep)) == 0) {
        Status s = end.health({&end.recv(0)});
        if (!s.isOk() || nowSeconds() - start > kWaitSeconds) {
          rep.fail("message %llu did not come: %s", (unsigned long long)m, describe(s).c_str());
          return;
        }
        std::vector<pollfd> fds;
        for (Connector* c : end.all()) c->addPollFds(fds);
        if (fds.empty()) {
          sched_yield();
        } else {
          ++slept;
          poll(fds.data(), fds.size(), 2000);
        }
        end.pump();
      }
      if (got < 0) return;
      const double waited = nowSeconds() - start;
      if (waited > 1.0)
        rep.fail("message %llu woke the receiver only after %.2f s, sleeping %zu times on its connectors' fds "
                 "(sent 0.1 s in): they did not turn ready", (unsigned long long)m, waited, slept);
    }
    end.meet(rep, "the end");
  });
}

std::string paramName(const ::testing::TestParamInfo<TransportUnderTest>& info) { return info.param.name; }

}  // namespace

// One line per transport: its name() and how its receivers stop a sender.
INSTANTIATE_TEST_SUITE_P(shm, Conformance, ::testing::Values(TransportUnderTest{"shm", Flow::Credits}), paramName);
INSTANTIATE_TEST_SUITE_P(tcp, Conformance, ::testing::Values(TransportUnderTest{"tcp", Flow::Buffered}), paramName);
INSTANTIATE_TEST_SUITE_P(ucx, Conformance, ::testing::Values(TransportUnderTest{"ucx", Flow::Unbounded}), paramName);
INSTANTIATE_TEST_SUITE_P(ib, Conformance, ::testing::Values(TransportUnderTest{"ib", Flow::Credits}), paramName);
INSTANTIATE_TEST_SUITE_P(cuda, Conformance, ::testing::Values(TransportUnderTest{"cuda", Flow::Credits}), paramName);

}  // namespace strata::test
