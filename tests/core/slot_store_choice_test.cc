// The choice between regular and streaming slot writes, fed with the times a
// machine whose cores move apart and back would give.
#include <gtest/gtest.h>

#include <vector>

#include "slot_store_choice.h"

namespace strata {
namespace {

constexpr uint64_t kBytes = 16 << 20;

// Runs `ops` operations, each taking `regular` or `streamed` seconds
// depending on the way chosen; returns how many streamed.
int run(SlotStoreChoice& c, int ops, double regular, double streamed) {
  int streams = 0;
  for (int i = 0; i < ops; ++i) {
    const bool s = c.next();
    streams += s;
    c.record(s, kBytes, s ? streamed : regular);
  }
  return streams;
}

TEST(SlotStoreChoice, MeasuresBothWaysThenKeepsTheFasterAndLooksAgain) {
  SlotStoreChoice c;
  EXPECT_FALSE(c.best());
  // The first four alternate, whatever the times.
  std::vector<bool> first;
  for (int i = 0; i < 4; ++i) {
    first.push_back(c.next());
    c.record(first.back(), kBytes, first.back() ? 0.003 : 0.002);
  }
  EXPECT_EQ(first, (std::vector<bool>{false, true, false, true}));
  EXPECT_FALSE(c.best());  // regular is faster: cores close together
  // From then on regular, but for one streamed operation in every 32.
  EXPECT_EQ(run(c, 64, 0.002, 0.003), 2);
  // The cores move apart: cache to cache collapses, streaming wins at once
  // (the next regular operation is measured slow) and stays.
  EXPECT_GE(run(c, 64, 0.008, 0.003), 61);
  EXPECT_TRUE(c.best());
  // Back together: the next look at regular (within 32 operations) brings it back.
  run(c, 32, 0.002, 0.003);
  EXPECT_FALSE(c.best());
  EXPECT_LE(run(c, 64, 0.002, 0.003), 2);
  // Streaming only a little faster (less than 1.25x) is not worth leaving
  // regular stores for: one measurement's noise is larger.
  EXPECT_LE(run(c, 64, 0.0022, 0.002), 2);
  EXPECT_FALSE(c.best());
}

TEST(SlotStoreChoice, IgnoresEmptyMeasurements) {
  SlotStoreChoice c;
  c.record(true, 0, 0.001);
  c.record(true, kBytes, 0);
  EXPECT_FALSE(c.best());
  c.record(false, kBytes, 0.002);
  c.record(true, kBytes, 0.001);
  EXPECT_TRUE(c.best());
}

}  // namespace
}  // namespace strata
