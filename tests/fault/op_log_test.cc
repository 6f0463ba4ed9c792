// The operation log read while it is written, as the control plane reads it
// while the calling thread issues and a progress thread marks groups done:
// every entry a snapshot shows must be one the writer wrote whole, never the
// fields of one operation under another's sequence number, nor of one
// message with another's, and a message shows done only if its group is.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include "op_log.h"

namespace {

using strata::fault::OpLog;
using strata::fault::OpSnapshot;

// What the writer stores with each operation, so that a reader can tell a
// torn entry from a whole one. A group has more messages than the log has
// slots, so its messages rewrite each other's slots.
uint64_t descOf(uint64_t seq) { return seq * 0x9E3779B97F4A7C15ull; }
constexpr int kPerGroup = OpSnapshot::kRecentP2p + 2;
uint64_t bytesOf(uint64_t group, int message) { return group * 16 + static_cast<uint64_t>(message); }
bool sendOf(uint64_t group, int message) { return ((group + static_cast<uint64_t>(message)) & 1) != 0; }

TEST(OpLog, ASnapshotTakenWhileWritingShowsOnlyWholeEntries) {
  OpLog log;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0}, lastGroup{0};
  std::thread writer([&] {
    uint64_t seq = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      ++seq;
      log.issued(seq, descOf(seq));
      const uint64_t group = log.p2pGroup();
      for (int m = 0; m < kPerGroup; ++m) log.p2pIssued(group, m, bytesOf(group, m), sendOf(group, m));
      lastGroup.store(group, std::memory_order_relaxed);
      log.done(seq);
    }
    written = seq;
  });
  // A progress thread's completions, of even groups only, racing the
  // writer's reuse of their slots.
  std::thread completer([&] {
    while (!stop.load(std::memory_order_relaxed)) log.p2pDone(lastGroup.load(std::memory_order_relaxed) & ~1ull);
  });
  std::string torn;
  uint64_t entries = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
  while (torn.empty() && std::chrono::steady_clock::now() < until) {
    const OpSnapshot snap = log.snapshot(0);
    for (const auto& op : snap.recent) {
      if (op.seq == 0) continue;
      ++entries;
      if (op.desc != descOf(op.seq))
        torn = "collective #" + std::to_string(op.seq) + " shows the description of another";
    }
    for (const auto& msg : snap.p2p) {
      if (msg.group == 0) continue;
      ++entries;
      if (msg.peer < 0 || msg.peer >= kPerGroup || msg.bytes != bytesOf(msg.group, msg.peer) ||
          msg.send != sendOf(msg.group, msg.peer))
        torn = "a message of group " + std::to_string(msg.group) + " shows another's bytes, peer or direction";
      else if (msg.done && (msg.group & 1))
        torn = "a message of group " + std::to_string(msg.group) + " shows done, though only even groups were";
    }
  }
  stop = true;
  writer.join();
  completer.join();
  EXPECT_EQ(torn, "");
  // Both sides ran: a check of nothing would pass as well.
  EXPECT_GT(written.load(), 1000u);
  EXPECT_GT(entries, 1000u);
}

}  // namespace
