// The shm connector's choice between regular and non-temporal slot stores:
// fed with the times a machine whose cores move apart and back would give,
// and driven by a connector's slots as operations come and go.
#include <gtest/gtest.h>

#include <vector>

#include "shm_slot_stores.h"

namespace strata::shm {
namespace {

constexpr uint64_t kBytes = 16 << 20;

// Runs `ops` operations, each taking `regular` or `nonTemporal` seconds
// depending on the way chosen; returns how many used non-temporal stores.
int run(StoreChoice& c, int ops, double regular, double nonTemporal) {
  int nts = 0;
  for (int i = 0; i < ops; ++i) {
    const bool s = c.next();
    nts += s;
    c.record(s, kBytes, s ? nonTemporal : regular);
  }
  return nts;
}

TEST(StoreChoice, MeasuresBothWaysThenKeepsTheFasterAndLooksAgain) {
  StoreChoice c;
  EXPECT_FALSE(c.best());
  // The first four alternate, whatever the times.
  std::vector<bool> first;
  for (int i = 0; i < 4; ++i) {
    first.push_back(c.next());
    c.record(first.back(), kBytes, first.back() ? 0.003 : 0.002);
  }
  EXPECT_EQ(first, (std::vector<bool>{false, true, false, true}));
  EXPECT_FALSE(c.best());  // regular is faster: cores close together
  // From then on regular, but for looks at non-temporal stores, each finding
  // regular still faster and doubling the wait for the next: operations 8,
  // 24 and 56 of 5-68 here; the next at 120.
  EXPECT_EQ(run(c, 64, 0.002, 0.003), 3);
  // The cores move apart: cache to cache collapses, non-temporal stores win at once
  // (operation 69, regular, is measured slow) and stay; looks at regular 8,
  // 16 and 32 operations apart (77, 93, 125) confirm them.
  EXPECT_EQ(run(c, 64, 0.008, 0.003), 60);
  EXPECT_TRUE(c.best());
  // Back together: non-temporal stores stand until the next look at
  // regular, 64 operations after the last (189), brings it back.
  EXPECT_EQ(run(c, 56, 0.002, 0.003), 56);
  EXPECT_TRUE(c.best());
  run(c, 1, 0.002, 0.003);
  EXPECT_FALSE(c.best());
  EXPECT_EQ(run(c, 64, 0.002, 0.003), 3);  // looks at 197, 213, 245
  // Non-temporal stores only a little faster (less than 1.25x) are not worth leaving
  // regular stores for: one measurement's noise is larger.
  EXPECT_EQ(run(c, 64, 0.0022, 0.002), 1);  // the look at 309
  EXPECT_FALSE(c.best());
}

// While the best holds, each look that confirms it doubles the wait for the
// next, up to 512 operations. A change of the best brings the wait back to 8.
TEST(StoreChoice, LooksLessOftenWhileTheBestHolds) {
  StoreChoice c;
  run(c, 4, 0.002, 0.003);
  std::vector<int> looks;
  for (int op = 5; op <= 2100; ++op) {
    const bool nt = c.next();
    if (nt) looks.push_back(op);
    c.record(nt, kBytes, nt ? 0.003 : 0.002);
  }
  EXPECT_EQ(looks, (std::vector<int>{8, 24, 56, 120, 248, 504, 1016, 1528, 2040}));
  // Apart: operation 2101 (regular) is slow and non-temporal stores take
  // over; the looks at regular come 8 and 16 operations later.
  looks.clear();
  for (int op = 2101; op <= 2140; ++op) {
    const bool nt = c.next();
    if (!nt) looks.push_back(op);
    c.record(nt, kBytes, nt ? 0.003 : 0.008);
  }
  EXPECT_EQ(looks, (std::vector<int>{2101, 2109, 2125}));
}

TEST(StoreChoice, IgnoresEmptyMeasurements) {
  StoreChoice c;
  c.record(true, 0, 0.001);
  c.record(true, kBytes, 0);
  EXPECT_FALSE(c.best());
  c.record(false, kBytes, 0.002);
  c.record(true, kBytes, 0.001);
  EXPECT_TRUE(c.best());
}

constexpr size_t kSlot = 4096;

// Publishes `slots` full slots of operation (seq, desc) on `stores`, asking
// for each how to fill it; returns how many were filled non-temporally.
int operation(SlotStores& stores, uint64_t seq, uint64_t desc, int slots) {
  int nt = 0;
  for (int i = 0; i < slots; ++i) {
    const SlotTag tag{seq, desc};
    nt += stores.nonTemporal(tag, kSlot);
    stores.published(tag, kSlot);
  }
  return nt;
}

TEST(SlotStores, TimesOnlyLargeOperationsAndAlternatesThemFirst) {
  SlotStores stores(kSlot, 8 * kSlot);
  uint64_t seq = 0;
  const uint64_t big = 1, small = 2;
  // A kind is first moved once with regular stores, to learn its size.
  EXPECT_EQ(operation(stores, ++seq, big, 8), 0);
  // Then each way twice, whole operations at a time.
  std::vector<int> nt;
  for (int i = 0; i < 4; ++i) nt.push_back(operation(stores, ++seq, big, 8));
  EXPECT_EQ(nt, (std::vector<int>{0, 8, 0, 8}));
  // Smaller operations never leave regular stores, and do not disturb the
  // large kind's count.
  for (int i = 0; i < 10; ++i) EXPECT_EQ(operation(stores, ++seq, small, 7), 0);
  // Partial slots (tails, small messages) are always regular.
  EXPECT_FALSE(stores.nonTemporal(SlotTag{++seq, big}, kSlot - 64));
}

TEST(SlotStores, ZeroThresholdMeansRegularStoresOnly) {
  SlotStores stores(kSlot, 0);
  for (uint64_t seq = 1; seq < 20; ++seq) EXPECT_EQ(operation(stores, seq, 1, 16), 0);
}

}  // namespace
}  // namespace strata::shm
