#include "pair_end.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <type_traits>

#include "clock.h"
#include "cuda_seam.h"
#include "host.h"
#include "transport_factories.h"
#include "socket.h"

namespace strata::test {
namespace {

constexpr uint64_t kMeetWord = 0x4d454554'4d454554ull;  // "MEETMEET"

}  // namespace

std::string describe(const Status& s) {
  return std::string(strata_result_string(s.code())) + ": " + s.message();
}

std::unique_ptr<PairEnd> PairEnd::connect(const std::string& transport, std::unique_ptr<PairOob> oob,
                                          const PairOptions& options, Reporter& rep) {
  std::unique_ptr<PairEnd> end(new PairEnd(std::move(oob), options));
  const int me = end->rank();
  const int peer = end->peer();
  topo::HostInfo self = topo::probeHost(gpu::currentDevice());
  end->transports_ = makeTransports(&self);
  // Not among makeTransports() (its slots are GPU memory): built on request.
  if (transport == "cuda") {
    end->transports_.push_back(makeCudaTransport());
    end->transports_.back()->describeSelf(&self);
  }
  Transport* chosen = nullptr;
  std::string built;
  for (auto& t : end->transports_) {
    built += (built.empty() ? "" : ", ") + std::string(t->name());
    if (transport == t->name()) chosen = t.get();
  }
  std::vector<topo::HostInfo> hosts(2);
  Status s = end->oob_->allgather(&self, hosts.data(), sizeof(self));
  // Both ranks take the same way: on, or skipped, unless both can connect.
  const uint8_t can = chosen && chosen->canConnect(self, hosts[peer]);
  uint8_t both[2] = {0, 0};
  if (s.isOk()) s = end->oob_->allgather(&can, both, 1);
  if (!s.isOk()) {
    rep.fail("rank %d: exchanging host infos: %s", me, describe(s).c_str());
    return nullptr;
  }
  if (!both[0] || !both[1]) {
    if (!chosen)
      rep.skip("%s is not built into this library (built: %s)", transport.c_str(), built.c_str());
    else if (transport == "cuda")
      rep.skip("cuda cannot connect the two ranks here: %s",
               gpu::runtime().usable ? "the topology's cost model stages between their GPUs (strata-topo says why)"
                                     : ("no usable GPU: " + gpu::runtime().why).c_str());
    else
      rep.skip("%s cannot connect rank 0 (host %s, RDMA device '%s') and rank 1 (host %s, RDMA device '%s') here",
               transport.c_str(), hosts[0].hostname, hosts[0].rdma, hosts[1].hostname, hosts[1].rdma);
    return nullptr;
  }

  // Rank 0's tag names the pair's resources (shm segments) on both ranks,
  // and its secret is the one their connections prove.
  struct Shared {
    uint64_t tag;
    security::Secret secret;
  } mine, shared[2];
  mine.tag = std::random_device{}() * 0x100000001ull ^ static_cast<uint64_t>(getpid());
  s = security::randomBytes(mine.secret.bytes, sizeof(mine.secret.bytes));
  if (s.isOk()) s = end->oob_->allgather(&mine, shared, sizeof(mine));
  if (!s.isOk()) {
    rep.fail("rank %d: exchanging the tag and secret: %s", me, describe(s).c_str());
    return nullptr;
  }
  end->hosts_ = hosts;
  end->transport_ = chosen;
  const ConnectRequest req{end->oob_.get(),  &end->hosts_,     {peer},        shared[0].tag,
                           shared[0].secret, options.nchannels, options.slotBytes, options.nslots};
  Connections& c = end->connections_;
  c.resize(options.nchannels, 2);
  if (options.eavesdropper)
    end->oob_->watch([&](const void* all, size_t bytes) { options.eavesdropper(me, all, bytes, req.commTag, rep); });
  s = chosen->connect(req, c);
  end->oob_->watch(nullptr);
  if (!s.isOk()) {
    rep.fail("rank %d: %s connect() failed: %s", me, transport.c_str(), describe(s).c_str());
    return nullptr;
  }
  for (int ch = 0; ch < options.nchannels; ++ch) {
    if (!c.send[ch][peer] || !c.recv[ch][peer] || c.send[ch][me] || c.recv[ch][me]) {
      rep.fail("rank %d: %s connect() filled channel %d wrongly: want a send and a receive connector to rank %d "
               "and none to this rank", me, transport.c_str(), ch, peer);
      return nullptr;
    }
    if (c.send[ch][peer]->slotBytes() < options.slotBytes) {
      rep.fail("rank %d: %s offers %zu-byte slots, asked for %zu", me, transport.c_str(),
               c.send[ch][peer]->slotBytes(), options.slotBytes);
      return nullptr;
    }
  }
  return end;
}

PairEnd::~PairEnd() {
  connections_ = Connections();
  transports_.clear();
}

template <typename Call>
auto PairEnd::timed(const char* name, Call call) {
  const double start = nowSeconds();
  auto note = [&] {
    const double took = nowSeconds() - start;
    if (took > slowest_) {
      slowest_ = took;
      slowestCall_ = name;
    }
  };
  if constexpr (std::is_void_v<decltype(call())>) {
    call();
    note();
  } else {
    auto result = call();
    note();
    return result;
  }
}

void* PairEnd::acquire(int channel, size_t bytes) {
  return timed("acquire", [&] { return send(channel).acquire(bytes); });
}

void PairEnd::publish(int channel, size_t bytes, const SlotTag& tag) {
  timed("publish", [&] { send(channel).publish(bytes, tag); });
}

bool PairEnd::publishFrom(int channel, const void* data, size_t bytes, const SlotTag& tag) {
  return timed("publishFrom", [&] { return send(channel).publishFrom(data, bytes, tag); });
}

const void* PairEnd::peek(int channel, size_t* bytes, SlotTag* tag) {
  return timed("peek", [&] { return recv(channel).peek(bytes, tag); });
}

void PairEnd::release(int channel) {
  timed("release", [&] { recv(channel).release(); });
}

bool PairEnd::flushed(int channel) {
  return timed("flushed", [&] { return send(channel).flushed(); });
}

bool PairEnd::pump() {
  bool moved = false;
  for (Connector* c : all())
    if (c->needsProgress()) moved |= timed("progress", [&] { return c->progress(); });
  return moved;
}

std::vector<Connector*> PairEnd::all() const {
  std::vector<Connector*> out;
  for (int ch = 0; ch < nchannels(); ++ch) {
    out.push_back(&send(ch));
    out.push_back(&recv(ch));
  }
  return out;
}

Status PairEnd::health(const std::vector<Connector*>& which) const {
  for (Connector* c : which.empty() ? all() : which) {
    Status s = c->health();
    if (!s.isOk()) return s;
  }
  return Status::ok();
}

bool PairEnd::trySend(int channel, uint64_t m, size_t bytes, Reporter& rep) {
  // Only this rank's own publish can take a free entry away; the receiver
  // may free one between the two calls.
  const bool entryFree = acquire(channel, 0) != nullptr;
  void* slot = acquire(channel, bytes);
  if (entryFree && !slot) {
    rep.fail("rank %d, channel %d: acquire(0) found a free slot for message %llu but acquire(%zu) did not", rank(),
             channel, (unsigned long long)m, bytes);
    return false;
  }
  if (!slot) return false;
  if (void* stream = send(channel).deviceStream()) {
    // GPU memory: the bytes go in by a copy on the connector's stream.
    staging_.resize(std::max<size_t>(bytes, 1));
    fillMessage(staging_.data(), bytes, outgoing(channel), m);
    Status s = onStream(stream, slot, staging_.data(), bytes);
    if (!s.isOk()) {
      rep.fail("rank %d: copying message %llu into its slot: %s", rank(), (unsigned long long)m, describe(s).c_str());
      return false;
    }
  } else {
    fillMessage(slot, bytes, outgoing(channel), m);
  }
  publish(channel, bytes, tagOf(outgoing(channel), m));
  return true;
}

const void* PairEnd::readable(int channel, const void* slot, size_t bytes, Reporter& rep) {
  void* stream = recv(channel).deviceStream();
  if (!stream || !slot) return slot;
  // GPU memory: read through a copy on the connector's stream.
  landed_.resize(std::max<size_t>(bytes, 1));
  Status s = onStream(stream, landed_.data(), slot, bytes);
  if (!s.isOk()) {
    rep.fail("rank %d: copying a received slot out: %s", rank(), describe(s).c_str());
    return nullptr;
  }
  return landed_.data();
}

Status PairEnd::onStream(void* stream, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::ok();
  std::unique_ptr<gpu::StreamLane> lane = gpu::cudaLane(stream);
  STRATA_CHECK(lane->copy(dst, src, bytes));
  return gpu::synchronize(stream);
}

int PairEnd::tryReceive(int channel, uint64_t m, size_t bytes, Reporter& rep) {
  size_t got = 0;
  SlotTag tag{};
  const void* slot = peek(channel, &got, &tag);
  if (slot && got > slotBytes()) {
    rep.fail("rank %d: peek() says a slot holds %zu bytes, more than the %zu a slot has", rank(), got, slotBytes());
    return -1;
  }
  const void* data = readable(channel, slot, got, rep);
  if (rep.failed()) return -1;
  if (!data) return 0;
  std::string bad = checkMessage(data, got, tag, incoming(channel), m, bytes);
  if (bad.empty()) {
    // peek() only looks: a second look before release() sees the same message.
    size_t again = 0;
    SlotTag tagAgain{};
    const void* dataAgain = readable(channel, peek(channel, &again, &tagAgain), std::min(again, slotBytes()), rep);
    if (rep.failed()) return -1;
    bad = dataAgain ? checkMessage(dataAgain, again, tagAgain, incoming(channel), m, bytes) : "nothing";
    if (!bad.empty()) bad = "on a second peek() before release(): " + bad;
  }
  if (!bad.empty()) {
    rep.fail("rank %d received %s", rank(), bad.c_str());
    return -1;
  }
  release(channel);
  return 1;
}

bool PairEnd::waitUntil(Reporter& rep, const char* what, const std::function<bool()>& done,
                        const std::vector<Connector*>& watched) {
  const double deadline = nowSeconds() + kWaitSeconds;
  for (;;) {
    pump();
    if (done()) return true;
    if (rep.failed()) return false;
    Status s = health(watched);
    if (!s.isOk()) {
      rep.fail("rank %d, waiting for %s: health() reports %s", rank(), what, describe(s).c_str());
      return false;
    }
    if (nowSeconds() > deadline) {
      rep.fail("rank %d: %s did not come within %.0f s", rank(), what, kWaitSeconds);
      return false;
    }
    sched_yield();
  }
}

bool PairEnd::sendMessage(int channel, uint64_t m, size_t bytes, Reporter& rep) {
  const std::string what = "a free slot for message " + std::to_string(m);
  return waitUntil(rep, what.c_str(), [&] { return trySend(channel, m, bytes, rep); }, {&send(channel)});
}

bool PairEnd::receiveMessage(int channel, uint64_t m, size_t bytes, Reporter& rep) {
  const std::string what = "message " + std::to_string(m) + " on channel " + std::to_string(channel);
  int got = 0;
  return waitUntil(rep, what.c_str(), [&] { return (got = tryReceive(channel, m, bytes, rep)) != 0; },
                   {&recv(channel)}) &&
         got == 1;
}

bool PairEnd::waitFlushed(Reporter& rep) {
  std::vector<Connector*> sends;
  for (int ch = 0; ch < nchannels(); ++ch) sends.push_back(&send(ch));
  return waitUntil(rep, "flushed() on every send connector", [&] {
    for (int ch = 0; ch < nchannels(); ++ch)
      if (!flushed(ch)) return false;
    return true;
  }, sends);
}

bool PairEnd::waitWord(Reporter& rep, const char* what, uint64_t* word, bool checkHealth) {
  if (checkHealth) return waitUntil(rep, what, [&] { return oob_->poll(word); });
  const double deadline = nowSeconds() + kWaitSeconds;
  for (;;) {
    if (oob_->poll(word)) return true;
    // Its word and its end-of-stream may come in one read: look once more.
    if (oob_->peerGone()) {
      if (oob_->poll(word)) return true;
      rep.fail("rank %d: the other rank exited before %s", rank(), what);
      return false;
    }
    if (nowSeconds() > deadline) {
      rep.fail("rank %d: %s did not come within %.0f s", rank(), what, kWaitSeconds);
      return false;
    }
    pump();
    sched_yield();
  }
}

bool PairEnd::meet(Reporter& rep, const char* where) {
  Status s = oob_->post(kMeetWord);
  if (!s.isOk()) {
    rep.fail("rank %d at %s: %s", rank(), where, describe(s).c_str());
    return false;
  }
  const std::string what = std::string("the other rank at ") + where;
  uint64_t word = 0;
  if (!waitWord(rep, what.c_str(), &word, false)) return false;
  if (word != kMeetWord) rep.fail("rank %d at %s: the other rank was somewhere else", rank(), where);
  return word == kMeetWord;
}

void PairEnd::expectNothingBlocked(Reporter& rep) const {
  if (slowest_ > kCallLimitSeconds)
    rep.fail("rank %d: a call to %s() took %.2f s (more than %.1f s: it blocked)", rank(), slowestCall_, slowest_,
             kCallLimitSeconds);
}

namespace {

// Set by run_in_guests.sh: this process is one rank of a job across guests.
struct GuestJob {
  bool active = false;
  int rank = 0;
  std::string master;
  int port = 0;
};

GuestJob guestJob() {
  GuestJob job;
  const char* rank = std::getenv("RANK");
  const char* master = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("RDMA_TEST_PORT");
  if (!rank || !master || !port) return job;
  job.active = true;
  job.rank = std::atoi(rank);
  job.master = master;
  job.port = std::atoi(port);
  return job;
}

Status listenAt(const char* address, int port, int* fd, int* boundPort) {
  SockAddr addr;
  STRATA_CHECK(net::resolve(address, port, &addr));
  STRATA_CHECK(net::listenOn(&addr, fd));
  *boundPort = portOf(addr);
  return Status::ok();
}

}  // namespace

PairRun runPair(const std::string& transport, const PairOptions& options, double seconds, const PairBody& body) {
  using Link = std::function<Status(std::unique_ptr<PairOob>*)>;
  // Every guest runs the same cases in the same order, so their ports agree.
  static int runs = 0;
  ++runs;
  auto rankBody = [&](int rank, Link link) -> ChildBody {
    return [&, rank, link](Reporter& rep) {
      std::unique_ptr<PairOob> oob;
      Status s = link(&oob);
      if (!s.isOk()) {
        rep.fail("rank %d: the test's own socket: %s", rank, describe(s).c_str());
        return;
      }
      std::unique_ptr<PairEnd> end = PairEnd::connect(transport, std::move(oob), options, rep);
      if (!end) return;
      body(*end, rep);
      end->expectNothingBlocked(rep);
    };
  };

  PairRun run;
  const GuestJob guest = guestJob();
  if (guest.active) {
    const int port = guest.port + runs;
    Link link = [&guest, port](std::unique_ptr<PairOob>* oob) {
      const double deadline = nowSeconds() + kWaitSeconds;
      if (guest.rank != 0) return PairOob::dial(guest.master, port, deadline, oob);
      int fd = -1, bound = 0;
      STRATA_CHECK(listenAt("0.0.0.0", port, &fd, &bound));
      return PairOob::accept(fd, deadline, oob);
    };
    run.outcomes[guest.rank] = runChildren({rankBody(guest.rank, link)}, seconds).front();
    run.here[guest.rank] = true;
    return run;
  }
  int listenFd = -1, port = 0;
  Status s = listenAt("127.0.0.1", 0, &listenFd, &port);
  if (!s.isOk()) {
    ADD_FAILURE() << "cannot listen for the test's own socket: " << describe(s);
    return run;
  }
  Link accept = [listenFd](std::unique_ptr<PairOob>* oob) {
    return PairOob::accept(listenFd, nowSeconds() + kWaitSeconds, oob);
  };
  Link dial = [listenFd, port](std::unique_ptr<PairOob>* oob) {
    close(listenFd);
    return PairOob::dial("127.0.0.1", port, nowSeconds() + kWaitSeconds, oob);
  };
  run.outcomes = runChildren({rankBody(0, accept), rankBody(1, dial)}, seconds);
  run.here = {true, true};
  close(listenFd);
  return run;
}

}  // namespace strata::test
