// The operation log read while it is written, as the control plane reads it
// while the calling thread issues: every entry a snapshot shows must be one
// the writer wrote whole, never the fields of one operation under another's
// sequence number or group.
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

// What the writer stores with each key, so that a reader can tell a torn
// entry from a whole one.
uint64_t descOf(uint64_t seq) { return seq * 0x9E3779B97F4A7C15ull; }
uint64_t bytesOf(uint64_t group) { return group * 3 + 1; }
int peerOf(uint64_t group) { return static_cast<int>(group % 1000); }

TEST(OpLog, ASnapshotTakenWhileWritingShowsOnlyWholeEntries) {
  OpLog log;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> written{0};
  std::thread writer([&] {
    uint64_t seq = 0;
    while (!stop.load(std::memory_order_relaxed)) {
      ++seq;
      log.issued(seq, descOf(seq));
      const uint64_t group = log.p2pGroup();
      log.p2pIssued(group, peerOf(group), bytesOf(group), group & 1);
      log.done(seq);
    }
    written = seq;
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
      if (msg.bytes != bytesOf(msg.group) || msg.peer != peerOf(msg.group) || msg.send != (msg.group & 1))
        torn = "message group " + std::to_string(msg.group) + " shows another's bytes, peer or direction";
    }
  }
  stop = true;
  writer.join();
  EXPECT_EQ(torn, "");
  // Both sides ran: a check of nothing would pass as well.
  EXPECT_GT(written.load(), 1000u);
  EXPECT_GT(entries, 1000u);
}

}  // namespace
