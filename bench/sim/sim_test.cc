// strata-sim against references that do not come from it: the ring's
// alpha-beta closed form, a 2-rank exchange timed by hand, its own full play
// (for the symmetry and the extrapolation it uses at scale), the cost
// model's pick against the simulated best, and the memory rates of a
// working set past the caches against their blend worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "planner.h"
#include "sweep.h"

namespace strata::sim {
namespace {

// n ranks, one per node, all on one leaf: every hop is alpha + bytes/beta.
// The closed forms count no copies in a rank's memory (the executor's copy
// of a slot into the output), so here they cost nothing.
Scenario uniform(int n) {
  Scenario sc;
  sc.topo = {n, 1, 1, n, 1.0};
  sc.model.shm.gbps = 1e9;
  sc.model.nic = {1.5, 25};
  sc.model.msgOverheadUs = 0.1;
  sc.model.reduceGBps = 10;
  return sc;
}

// One slice on one channel (the buffer is at most a slot per rank): the
// ring is 2(n-1) hops in a row, which is what the closed form counts.
TEST(Sim, RingMatchesClosedFormWithoutPipelining) {
  for (int n : {4, 16, 64}) {
    const Scenario sc = uniform(n);
    for (uint64_t bytes : {uint64_t(64) << 10, uint64_t(n) * sc.slotBytes}) {
      const Outcome o = simulate(kRingAllreduce, sc, bytes);
      ASSERT_TRUE(o.carried && !o.stuck);
      EXPECT_EQ(o.nchannels, 1);
      EXPECT_NEAR(o.timeUs / closedFormUs("ring", sc, bytes), 1.0, 0.03) << n << " ranks, " << bytes << " bytes";
    }
  }
}

// A set that a cache holds goes at its rates; one twice the largest cache
// at rates whose time per byte is half the cache's and half DRAM's.
TEST(Sim, WorkingSetRatesBlendPastTheLargestCache) {
  NetModel m;
  m.shm.gbps = 10;
  m.reduceGBps = 5;
  m.handoff = {8, 8, 4};
  m.caches = {{4e6, 40, 20, {30, 30, 15}}};
  const NetModel held = m.forWorkingSet(1e6, {1e6, 1e6, 1e6}, 2);
  EXPECT_DOUBLE_EQ(held.shm.gbps, 40);
  EXPECT_DOUBLE_EQ(held.reduceGBps, 20);
  EXPECT_DOUBLE_EQ(held.handoff.writeGBps, 30);
  const NetModel half = m.forWorkingSet(4e6, {4e6, 4e6, 4e6}, 2);
  auto harmonic = [](double a, double b) { return 1 / (0.5 / a + 0.5 / b); };
  EXPECT_NEAR(half.shm.gbps, harmonic(40, 10), 1e-9);
  EXPECT_NEAR(half.outputGBps, harmonic(40, 10), 1e-9);
  EXPECT_NEAR(half.reduceGBps, harmonic(20, 5), 1e-9);
  EXPECT_NEAR(half.handoff.writeGBps, harmonic(30, 8), 1e-9);
  EXPECT_NEAR(half.handoff.foldGBps, harmonic(15, 4), 1e-9);
}

// A slot refilled past the cache's share of the refill set writes at the
// blended rate while its receiver still copies and folds it at the
// cache's rates: the two sides take different sets (sweep.cc says why).
TEST(Sim, RefillSetDecidesOnlyTheHandoffWrite) {
  NetModel m;
  m.handoff = {8, 8, 4};
  m.caches = {{4e6, 40, 20, {30, 30, 15}}};
  const NetModel r = m.forWorkingSet(1e6, {1e6, 1e6, 4e6}, 2);
  EXPECT_NEAR(r.handoff.writeGBps, 1 / (0.5 / 30 + 0.5 / 8), 1e-9);
  EXPECT_DOUBLE_EQ(r.handoff.copyOutGBps, 30);
  EXPECT_DOUBLE_EQ(r.handoff.foldGBps, 15);
  EXPECT_DOUBLE_EQ(r.shm.gbps, 40);
}

// A slot stays in a smaller cache while what passes between two fills
// fits there, whatever the set: past it, the largest serves the share of
// what it must hold, the refill's and the reads' each their own.
TEST(Sim, SlotsLeaveTheSmallerCacheByWhatPassesAndTheLargestByWhatItHolds) {
  NetModel m;
  m.handoff = {8, 8, 4};
  m.caches = {{2e6, 80, 40, {9, 41, 28}}, {32e6, 40, 20, {30, 30, 15}, {{16e6, 1.0}, {24e6, 0.8}, {32e6, 0.6}}}};
  const NetModel inL2 = m.forWorkingSet(1e6, {0.5e6, 12e6, 12e6}, 2);
  EXPECT_DOUBLE_EQ(inL2.handoff.writeGBps, 9);
  EXPECT_DOUBLE_EQ(inL2.handoff.copyOutGBps, 41);
  const NetModel inL3 = m.forWorkingSet(1e6, {10e6, 4e6, 12e6}, 2);
  EXPECT_NEAR(inL3.handoff.writeGBps, 1 / (0.8 / 30 + 0.2 / 8), 1e-9);
  EXPECT_DOUBLE_EQ(inL3.handoff.copyOutGBps, 30);
  EXPECT_DOUBLE_EQ(inL3.handoff.foldGBps, 15);
  EXPECT_DOUBLE_EQ(inL3.shm.gbps, 80);
}

// Two ranks of one core hand a slot over in that core's cache, at its plain
// copy and fold rates; across cores at the hand-off's (network.h). Four
// ranks on two cores in blocks: 0 and 1 share one, 2 and 3 the other; the
// slots and buffers in the L2 (copy 40, fold 20, hand-off 2, 4, 5 GB/s).
TEST(Sim, RanksOfOneCoreHandOffThroughItsCache) {
  Topology topo{1, 4, 1, 1, 1.0, 2};
  EXPECT_TRUE(topo.shareCore(0, 1));
  EXPECT_TRUE(topo.shareCore(2, 3));
  EXPECT_FALSE(topo.shareCore(1, 2));
  EXPECT_FALSE((Topology{1, 4, 1, 1, 1.0, 0}.shareCore(0, 1)));  // a core per rank
  NetModel base;
  base.caches = {{2e6, 40, 20, {2, 4, 5}, {}}};
  const NetModel m = base.forWorkingSet(1e5, {1e5, 1e5, 1e5}, 4);
  EXPECT_DOUBLE_EQ(m.sameCore.writeGBps, 40);
  EXPECT_DOUBLE_EQ(m.sameCore.foldGBps, 20);
  Network net(topo, m);
  const uint64_t b = 4000;  // bytes: 1 us at 4 GB/s
  EXPECT_DOUBLE_EQ(net.copyOutUs(0, 2, b), 1.0);  // 4 GB/s
  EXPECT_DOUBLE_EQ(net.copyOutUs(0, 1, b), 0.1);  // the cache's copy, 40
  EXPECT_DOUBLE_EQ(net.foldUs(0, 2, b, true), 0.8);  // 5
  EXPECT_DOUBLE_EQ(net.foldUs(0, 1, b, true), 0.2);  // the cache's fold, 20
  EXPECT_DOUBLE_EQ(net.transfer(0, 2, 0, 2, b, 0).sentUs, 2.0);  // a slot write at 2
  EXPECT_DOUBLE_EQ(net.transfer(1, 0, 1, 0, b, 0).sentUs, 0.1);  // 40
}

// A cache's own output and input rates, where measured, replace its copy
// rate for those streams and for a same-core slot's fill (an output
// written into the slot) and copy-out (an input read from it), blended past
// the cache like the others; a rank's own copies keep the copy rate.
TEST(Sim, CacheOutputAndInputRatesReplaceItsCopyRate) {
  NetModel m;
  m.shm.gbps = 10;
  m.outputGBps = 12;
  m.inputGBps = 14;
  m.caches = {{4e6, 40, 20, {30, 30, 15}, {}, 60, 70}};
  const NetModel held = m.forWorkingSet(1e6, {1e6, 1e6, 1e6}, 2);
  EXPECT_DOUBLE_EQ(held.shm.gbps, 40);
  EXPECT_DOUBLE_EQ(held.outputGBps, 60);
  EXPECT_DOUBLE_EQ(held.inputGBps, 70);
  EXPECT_DOUBLE_EQ(held.sameCore.writeGBps, 60);
  EXPECT_DOUBLE_EQ(held.sameCore.copyOutGBps, 70);
  EXPECT_DOUBLE_EQ(held.sameCore.foldGBps, 20);
  const NetModel half = m.forWorkingSet(4e6, {4e6, 4e6, 4e6}, 2);
  EXPECT_NEAR(half.outputGBps, 1 / (0.5 / 60 + 0.5 / 12), 1e-9);
  EXPECT_NEAR(half.inputGBps, 1 / (0.5 / 70 + 0.5 / 14), 1e-9);
  EXPECT_NEAR(half.sameCore.copyOutGBps, 1 / (0.5 / 70 + 0.5 / 10), 1e-9);
}

// A connector that carries shmNtBytes in a call fills its slots with the
// faster of regular and non-temporal stores, as strata's shared-memory
// connectors time both: 2 ranks at 16 MiB (16 MiB through the one
// connector) with slow cached hand-offs play as if the non-temporal rates
// were the cache's; with slower non-temporal rates, or a threshold past
// what the connector carries, the cached rates stay.
TEST(Sim, BusyConnectorsTakeTheFasterSlotStores) {
  Scenario sc;
  sc.topo = {1, 2, 1, 1, 1.0, 2};
  sc.nchannels = 1;
  sc.model.shm = {0.1, 20};
  sc.model.reduceGBps = 10;
  // A cache that holds everything, so its hand-off rates are the cached ones
  // unblended, and the non-temporal ones are nonTemporal's (DRAM carries the
  // slots alone).
  const NetModel::Handoff slow{2, 20, 15}, fast{20, 20, 15};
  sc.model.handoff = {4, 10, 8};
  sc.model.nonTemporal = fast;
  sc.model.caches = {{1e12, 20, 10, slow, {}}};
  const uint64_t bytes = uint64_t(16) << 20;
  const double chosen = simulate(kHalvingDoubling, sc, bytes).timeUs;
  Scenario reference = sc;
  reference.model.caches[0].handoff = fast;
  reference.shmNtBytes = 0;
  EXPECT_DOUBLE_EQ(chosen, simulate(kHalvingDoubling, reference, bytes).timeUs);
  Scenario regular = sc;
  regular.shmNtBytes = bytes + 1;
  const double cached = simulate(kHalvingDoubling, regular, bytes).timeUs;
  EXPECT_GT(cached, 1.5 * chosen) << cached << " " << chosen;
  Scenario slower = sc;
  slower.model.nonTemporal = {1, 20, 15};
  EXPECT_DOUBLE_EQ(simulate(kHalvingDoubling, slower, bytes).timeUs, cached);
}

// Connectors that time their slot stores take the faster of the cached
// hand-off rates and the non-temporal ones (a slot ring's, measured alone),
// however much of the ranks' buffers the caches hold; untimed, the cached
// rates stay. A 48 MB set in a 32 MB cache: h = 2/3 of it cached.
TEST(Sim, TimedSlotStoresTakeTheNonTemporalRatesWhereFaster) {
  NetModel m;
  m.shm.gbps = 10;
  m.handoff = {6, 8, 7};
  m.nonTemporal = {30, 24, 21};
  m.caches = {{32e6, 40, 20, {2, 20, 15}, {}}};
  const NetModel::SlotSets timed{48e6, 24e6, 24e6, true};
  const NetModel got = m.forWorkingSet(24e6, timed, 2);
  EXPECT_DOUBLE_EQ(got.handoff.writeGBps, 30);
  EXPECT_DOUBLE_EQ(got.handoff.copyOutGBps, 24);
  EXPECT_DOUBLE_EQ(got.handoff.foldGBps, 21);
  NetModel::SlotSets untimed = timed;
  untimed.timedStores = false;
  const double h = 2.0 / 3;
  EXPECT_NEAR(m.forWorkingSet(24e6, untimed, 2).handoff.writeGBps, 1 / (h / 2 + (1 - h) / 6), 1e-9);
  // Non-temporal stores slower than the cached ones lose.
  m.nonTemporal = {1, 1, 1};
  EXPECT_NEAR(m.forWorkingSet(24e6, timed, 2).handoff.writeGBps, 1 / (h / 2 + (1 - h) / 6), 1e-9);
}

// Measured shares: interpolated between two points, the first's below
// them, falling as 1 / size past the last; a set that a smaller cache
// holds takes that cache's rates whatever the largest's shares.
TEST(Sim, CacheSharesInterpolateAndFallPastTheLast) {
  NetModel::Cache l3{32e6, 40, 20, {}, {{16e6, 1.0}, {24e6, 0.8}, {32e6, 0.6}}};
  EXPECT_DOUBLE_EQ(l3.shareOf(8e6), 1.0);
  EXPECT_NEAR(l3.shareOf(20e6), 0.9, 1e-12);
  EXPECT_NEAR(l3.shareOf(28e6), 0.7, 1e-12);
  EXPECT_NEAR(l3.shareOf(64e6), 0.3, 1e-12);
  NetModel m;
  m.shm.gbps = 10;
  m.caches = {{2e6, 80, 40, {}, {}}, l3};
  EXPECT_DOUBLE_EQ(m.forWorkingSet(1e6, {1e6, 1e6, 1e6}, 2).shm.gbps, 80);
  EXPECT_NEAR(m.forWorkingSet(14e6, {14e6, 14e6, 14e6}, 2).shm.gbps, 1 / (0.7 / 40 + 0.3 / 10), 1e-9);
}

// Recursive doubling on 2 ranks, 3 chunks each way, 2 slots per FIFO. Each
// chunk: 1 us on the wire (4096 B at 4.096 GB/s), 2 us of latency, 2 us to
// fold (4096 B at 2.048 GB/s). Both ranks alike:
//   send 0  [0, 1]               arrives 3
//   send 1  [1, 2]               arrives 4
//   recv 0  max(2, 3) + 2 = 5    (frees the peer's slot 0)
//   send 2  slot 0 free at 5: [5, 6], arrives 8
//   recv 1  max(6, 4) + 2 = 8
//   recv 2  max(8, 8) + 2 = 10
TEST(Sim, TwoRanksByHand) {
  Scenario sc;
  sc.topo = {2, 1, 1, 2, 1.0};
  sc.model.nic = {2.0, 4.096};
  sc.model.msgOverheadUs = 0;
  sc.model.reduceGBps = 2.048;
  sc.slotBytes = 4096;
  sc.nslots = 2;
  sc.nchannels = 1;
  const Layout layout = Layout::blocks(2, 2);
  PlanSet plans;
  buildPlans(kRecursiveDoubling, sc, layout, 0, 3 * 1024, 1, plans);
  std::string shape;
  for (const Step& s : plans[0].steps)
    shape += s.prim == Prim::Send ? "S" : (s.prim == Prim::RecvReduceCopy ? "R" : "?");
  ASSERT_EQ(shape, "SSRSRR");
  const Outcome o = simulate(kRecursiveDoubling, sc, 3 * 4096);
  EXPECT_NEAR(o.timeUs, 10.0, 1e-9);
  // One slot per FIFO: each rank's second send waits for a receive that
  // comes after it in the peer's plan. The player must see it stuck.
  sc.nslots = 1;
  EXPECT_TRUE(simulate(kRecursiveDoubling, sc, 3 * 4096).stuck);
}

// Links shared: recursive doubling's crossing round sends all 8 ranks of a
// node across at once, through one NIC or through eight; halving-doubling
// on 8 nodes, 2 a leaf, sends both of a leaf's nodes across the spine at
// once, through two uplink lanes or (2:1) through one.
TEST(Sim, NicAndSpineContention) {
  Scenario sc;
  sc.topo = {2, 8, 1, 2, 1.0};
  const uint64_t bytes = uint64_t(16) << 20;
  const double oneNic = simulate(kRecursiveDoubling, sc, bytes).timeUs;
  sc.topo.nicsPerNode = 8;
  const double eightNics = simulate(kRecursiveDoubling, sc, bytes).timeUs;
  // The crossing round: 8 x 16 MiB through 25 GB/s is 5.4 ms, 0.7 ms on 8 NICs.
  EXPECT_GT(oneNic - eightNics, 4000) << oneNic << " " << eightNics;

  sc.topo = {8, 1, 1, 2, 1.0};
  const double full = simulate(kHalvingDoubling, sc, bytes).timeUs;
  sc.topo.oversub = 2;
  const double half = simulate(kHalvingDoubling, sc, bytes).timeUs;
  EXPECT_GT(half / full, 1.2) << full << " " << half;
  std::printf("rd 2x8 16 MiB: 1 NIC %.1f us, 8 NICs %.1f us; hd 8x1 16 MiB: spine 1:1 %.1f us, 2:1 %.1f us\n",
              oneNic, eightNics, full, half);
}

// 256 ranks on 32 nodes, 4 nodes a leaf, a spine at 2:1: the leaf's 32
// ranks played for all give the full play's time.
Scenario cluster256() {
  Scenario sc;
  sc.topo = {32, 8, 1, 4, 2.0};
  return sc;
}

TEST(Sim, LeafSymmetryMatchesFullPlay) {
  const Scenario sc = cluster256();
  const int n = sc.topo.nranks();
  int symmetric = 0;
  for (const AllreduceAlgorithm* a : allreduceAlgorithms()) {
    for (uint64_t bytes : {uint64_t(4) << 10, uint64_t(4) << 20}) {
      if (a->has(kOneSlot) && bytes > sc.slotBytes) continue;
      const int nch = a->has(kOneSlot) ? 1 : PlanShape{0, n, sc.nchannels, sc.slotBytes, 4}.channelsFor(bytes);
      const Symmetry sym = symmetryOf(*a, sc, bytes / 4, nch);
      if (sym.kind == Symmetry::None) continue;
      ++symmetric;
      const Outcome leaf = simulateWith(*a, sc, bytes, sym);
      const Outcome full = simulateWith(*a, sc, bytes, {});
      ASSERT_FALSE(leaf.stuck || full.stuck) << a->name;
      EXPECT_LT(leaf.steps * 4, full.steps) << a->name;
      EXPECT_NEAR(leaf.timeUs / full.timeUs, 1.0, 0.01) << a->name << " " << bytes << " bytes";
      std::printf(
          "%-8s %8llu B: leaf %.2f us (%llu steps), full %.2f us (%llu "
          "steps)\n",
          a->name, (unsigned long long)bytes, leaf.timeUs, (unsigned long long)leaf.steps, full.timeUs,
          (unsigned long long)full.steps);
    }
  }
  // ring, hd and rd at 4 MiB at least.
  EXPECT_GE(symmetric, 3);
}

// What the sweep extends linearly from two smaller plays, against the exact
// play: the tree and the hierarchical algorithm (whose steps grow with the
// size) at 64 MiB on 256 ranks.
TEST(Sim, ExtrapolationMatchesExactPlay) {
  Scenario sc = cluster256();
  for (const AllreduceAlgorithm* a : {&kTreeAllreduce, &kHierarchicalAllreduce}) {
    const uint64_t bytes = uint64_t(64) << 20;
    sc.stepBudget = uint64_t(1) << 40;
    const Outcome exact = simulate(*a, sc, bytes);
    sc.stepBudget = exact.steps / 16;
    const Outcome coarse = simulate(*a, sc, bytes);
    ASSERT_NE(coarse.method.find("extrap"), std::string::npos) << a->name;
    EXPECT_LT(coarse.steps * 4, exact.steps) << a->name;
    EXPECT_NEAR(coarse.timeUs / exact.timeUs, 1.0, 0.05) << a->name;
    std::printf(
        "%-8s 64 MiB: extrapolated %.1f us (%llu steps), exact %.1f us "
        "(%llu steps)\n",
        a->name, coarse.timeUs, (unsigned long long)coarse.steps, exact.timeUs, (unsigned long long)exact.steps);
  }
}

// The cost-model check's nodes of 8 ranks. 1,024 ranks take 40 s of the
// ASan leg and run no code that 64 do not: under the sanitizers, 64 alone.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr int kCheckedNodes[] = {8};
#else
constexpr int kCheckedNodes[] = {8, 128};
#endif

// Issue 21's bound: the cost model's pick (Tuning, with strata-sim's levels:
// a NIC's in-flight latency and shared bandwidth) is within 10% of the best
// the simulator finds among the algorithms it may pick, at 64 and 1,024
// ranks (8 and 128 nodes of 8, the default InfiniBand model) and the sweep's
// sizes, 8 B and 16 B to 4 GiB by 4 (bench/sim/run; 16,384 ranks take
// minutes: bench/README.md has strata-sim's count there). Plays beyond 2^18
// steps are extended linearly from two smaller ones (sweep.cc), which keeps
// the test to seconds; it moves no time that decides a case (hier on 1,024
// ranks at 1 and 4 GiB comes out 10-16% high, 1.3-1.5x the ring either way).
//
// 64 ranks at 256 KiB missed (hd 84.7 us played, hier 74.8) while the model
// charged every step of hier's rings the node's queued per-message time
// (LinkCost::burstUs): the played rings fall that far apart once and stay
// so. On a shared level a step now costs one latency where that queue is
// shorter (hierarchical.cc), which picks hier there and moves no other pick
// at 64, 1,024 or 16,384 ranks but 1,024 at 4 MiB (hd 1.09x -> hier).
TEST(Sim, CostModelPicksWithinTenPercentOfTheBest) {
  std::vector<uint64_t> sizes = {8};
  for (int k = 4; k <= 32; k += 2) sizes.push_back(uint64_t(1) << k);
  std::vector<std::string> wrong;
  for (int nodes : kCheckedNodes) {
    Scenario sc;
    sc.topo.nodes = nodes;
    sc.stepBudget = uint64_t(1) << 18;
    for (uint64_t bytes : sizes) {
      const AllreduceAlgorithm* pick = pickOf(sc, bytes);
      ASSERT_NE(pick, nullptr);
      double bestUs = INFINITY, pickUs = NAN;
      std::string best;
      for (const AllreduceAlgorithm* a : allreduceAlgorithms()) {
        if (a->has(kReproducibleOnly) || (a->has(kUpToOneshotBytes) && bytes > sc.oneshotBytes)) continue;
        const Outcome o = simulate(*a, sc, bytes);
        if (!o.carried) continue;
        if (o.timeUs < bestUs) bestUs = o.timeUs, best = a->name;
        if (a == pick) pickUs = o.timeUs;
      }
      if (!(pickUs <= 1.10 * bestUs)) {
        wrong.push_back(std::to_string(sc.topo.nranks()) + ":" + std::to_string(bytes) + ":" + pick->name);
        std::printf("%d ranks, %llu B: picked %s %.1f us, %s %.1f us (%.2fx)\n", sc.topo.nranks(),
                    (unsigned long long)bytes, pick->name, pickUs, best.c_str(), bestUs, pickUs / bestUs);
      }
    }
  }
  EXPECT_EQ(wrong, std::vector<std::string>{});
}

}  // namespace
}  // namespace strata::sim
