// Plans on in-memory connectors: every allreduce algorithm, forced, on 1..16
// ranks as threads laid out on 1..3 simulated nodes (even, uneven and
// interleaved), odd counts, several datatypes and ops, against a reference
// computed independently (exact integers, or double for floats whose inputs
// make every partial sum exact), and bitwise agreement between ranks where
// rounding makes the result depend on the order of the sums. Then Bruck's
// allgather and its reduce-scatter on 1..17 ranks, and where the planner
// picks them.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <set>
#include <thread>

#include "allreduce.h"
#include "executor.h"
#include "layout.h"
#include "mem_connector.h"
#include "node_tree.h"
#include "op_desc.h"
#include "p2p_group.h"
#include "params.h"
#include "planner.h"
#include "reduce_scatter.h"
#include "rooted.h"
#include "selection.h"

namespace strata {
namespace {

constexpr size_t kSlotBytes = 4096;
constexpr int kSlots = 4;

struct Mesh {
  // links[rank] for channel c: links[c][rank]
  std::vector<std::vector<ChannelLinks>> links;
  std::vector<std::unique_ptr<SendConnector>> sends;
  std::vector<std::unique_ptr<RecvConnector>> recvs;

  Mesh(int n, int channels, int nslots = kSlots) : links(channels, std::vector<ChannelLinks>(n)) {
    for (int c = 0; c < channels; ++c) {
      for (int r = 0; r < n; ++r) {
        links[c][r].send.assign(n, nullptr);
        links[c][r].recv.assign(n, nullptr);
      }
      for (int s = 0; s < n; ++s)
        for (int d = 0; d < n; ++d) {
          if (s == d) continue;
          auto fifo = std::make_shared<test::MemFifo>(kSlotBytes, nslots);
          sends.push_back(std::make_unique<test::MemSend>(fifo));
          recvs.push_back(std::make_unique<test::MemRecv>(fifo));
          links[c][s].send[d] = sends.back().get();
          links[c][d].recv[s] = recvs.back().get();
        }
    }
  }
};

// A layout from each rank's node index (and package, default 0).
Layout layoutOf(const std::vector<int>& nodeOfRank, const std::vector<int>& packageOfRank = {}) {
  std::vector<topo::HostInfo> hosts(nodeOfRank.size());
  for (size_t r = 0; r < hosts.size(); ++r) {
    std::memset(&hosts[r], 0, sizeof(hosts[r]));
    std::snprintf(hosts[r].hostId, sizeof(hosts[r].hostId), "node%d", nodeOfRank[r]);
    hosts[r].package = packageOfRank.empty() ? 0 : packageOfRank[r];
  }
  return Layout::of(topo::buildHierarchy(hosts));
}

// Runs one operation on n threads: each rank builds its plans with `build`
// (which returns the channels they use) and runs them on in-memory
// connectors of `nslots` slots; returns each rank's status.
using BuildFn = std::function<int(const PlanShape&, std::vector<ChannelPlan>&)>;
std::vector<Status> runPlans(int n, int channels, const BuildFn& build, uint64_t desc, strata_datatype_t dt,
                             strata_op_t op, const std::vector<const char*>& inputs,
                             const std::vector<char*>& outputs, uint64_t descOverride = 0,
                             const Layout* layout = nullptr, size_t slotBytes = kSlotBytes, int nslots = kSlots,
                             const std::vector<char*>& scratch = {}) {
  Mesh mesh(n, channels, nslots);
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  const size_t elem = strata_datatype_size(dt);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      PlanShape shape{r, n, channels, slotBytes, elem, layout};
      std::vector<ChannelPlan> plans(channels);
      const int used = build(shape, plans);
      OpContext ctx;
      ctx.input = inputs[r];
      ctx.output = outputs[r];
      ctx.datatype = dt;
      ctx.op = op;
      ctx.elemSize = elem;
      ctx.rank = r;
      ctx.nranks = n;
      ctx.tag = SlotTag{1, (descOverride && r == 0) ? descOverride : desc};
      ctx.reduceFn = kernels::kernel(dt, op, kernels::Isa::Portable);
      ctx.ntOutput = false;
      ctx.scratch = scratch.empty() ? nullptr : scratch[r];
      std::vector<PlanExecutor> execs(used);
      std::vector<size_t> cursors(used, 0);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      int done = 0;
      std::vector<bool> finished(used, false);
      while (done < used) {
        for (int c = 0; c < used; ++c) {
          if (finished[c]) continue;
          Status err;
          Advance a = execs[c].advance(plans[c], &cursors[c], ctx, mesh.links[c][r], &err);
          if (a == Advance::Failed) {
            results[r] = err;
            // Tell the peers, as the real engine does.
            for (auto* s : mesh.links[c][r].send) if (s) s->abort();
            for (auto* rc : mesh.links[c][r].recv) if (rc) rc->abort();
            return;
          }
          if (a == Advance::Blocked) {
            Status h = execs[c].blockedHealth(plans[c], cursors[c], mesh.links[c][r]);
            if (!h.isOk()) { results[r] = h; return; }
          }
          if (a == Advance::Done) { finished[c] = true; ++done; }
        }
        if (std::chrono::steady_clock::now() > deadline) {
          results[r] = makeErrorQuiet(STRATA_ERR_TIMEOUT, "plan did not finish");
          return;
        }
        std::this_thread::yield();
      }
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// Runs one allreduce with `algo` on n threads; returns each rank's status.
std::vector<Status> runAllreduce(int n, int channels, const AllreduceAlgorithm& algo, strata_datatype_t dt,
                                 strata_op_t op, uint64_t count,
                                 std::vector<std::vector<char>>& inputs,
                                 std::vector<std::vector<char>>& outputs, bool inPlace,
                                 uint64_t descOverride = 0, const Layout* layout = nullptr,
                                 size_t slotBytes = kSlotBytes) {
  std::vector<const char*> in(n);
  std::vector<char*> out(n);
  for (int r = 0; r < n; ++r) {
    in[r] = inputs[r].data();
    out[r] = inPlace ? inputs[r].data() : outputs[r].data();
  }
  auto build = [&](const PlanShape& shape, std::vector<ChannelPlan>& plans) {
    const int used = algo.has(kOneSlot) ? 1 : channels;
    algo.build(shape, count, used, plans);
    return used;
  };
  return runPlans(n, channels, build, OpDesc{Coll::Allreduce, dt, op, count}.pack(), dt, op, in, out,
                  descOverride, layout, slotBytes);
}

// Inputs: small integers (scaled by 0.25 for floats), exact in every type.
double inputValue(int rank, uint64_t i, strata_op_t op) {
  if (op == STRATA_PROD) return ((rank + i) % 3 == 0) ? 2.0 : ((rank * 7 + i) % 5 == 0 ? -1.0 : 1.0);
  return static_cast<double>(static_cast<int64_t>((rank * 131 + i * 17) % 23) - 11);
}

template <typename T>
void fillAndCheck(int n, int channels, const AllreduceAlgorithm& algo, strata_datatype_t dt, strata_op_t op,
                  uint64_t count, bool inPlace, const Layout* layout = nullptr) {
  const double scale = std::is_floating_point<T>::value ? 0.25 : 1.0;
  std::vector<std::vector<char>> in(n, std::vector<char>(count * sizeof(T) + 1));
  std::vector<std::vector<char>> out(n, std::vector<char>(count * sizeof(T) + 1, 0x5a));
  for (int r = 0; r < n; ++r)
    for (uint64_t i = 0; i < count; ++i)
      reinterpret_cast<T*>(in[r].data())[i] = static_cast<T>(inputValue(r, i, op) * (op == STRATA_PROD ? 1 : scale));
  auto results = runAllreduce(n, channels, algo, dt, op, count, in, out, inPlace, 0, layout);
  const int nodes = layout ? layout->nodes() : 1;
  for (int r = 0; r < n; ++r)
    ASSERT_TRUE(results[r].isOk()) << "rank " << r << " of " << n << " on " << nodes << " nodes, "
                                   << algo.name << ", count " << count << ": " << results[r].message();
  for (uint64_t i = 0; i < count; ++i) {
    double acc = inputValue(0, i, op) * (op == STRATA_PROD ? 1 : scale);
    for (int r = 1; r < n; ++r) {
      double v = inputValue(r, i, op) * (op == STRATA_PROD ? 1 : scale);
      switch (op) {
        case STRATA_SUM: case STRATA_AVG: acc += v; break;
        case STRATA_PROD: acc *= v; break;
        case STRATA_MIN: acc = std::min(acc, v); break;
        case STRATA_MAX: acc = std::max(acc, v); break;
        default: break;
      }
    }
    double expect = acc;
    if (op == STRATA_AVG) expect = std::is_floating_point<T>::value ? acc / n : std::trunc(acc / n);
    for (int r = 0; r < n; ++r) {
      const auto& buf = inPlace ? in[r] : out[r];
      T got = reinterpret_cast<const T*>(buf.data())[i];
      ASSERT_EQ(got, static_cast<T>(expect)) << "rank " << r << " element " << i << " of " << count
                                              << " n=" << n << " nodes=" << nodes << " "
                                              << algo.name << (inPlace ? " in place" : "");
    }
  }
  // Nothing written past the end.
  for (int r = 0; r < n; ++r) ASSERT_EQ(out[r].back(), 0x5a);
}

class RingPlans : public ::testing::TestWithParam<int> {};

TEST_P(RingPlans, MatchReferenceForOddCounts) {
  const int n = GetParam();
  const uint64_t slotElems = kSlotBytes / 4;
  for (int channels : {1, 3})
    for (uint64_t count : {uint64_t(1), uint64_t(7), uint64_t(1023), slotElems + 1, slotElems * n * 2 + 13})
      for (bool inPlace : {false, true}) {
        fillAndCheck<float>(n, channels, kRingAllreduce, STRATA_FLOAT32, STRATA_SUM, count, inPlace);
        fillAndCheck<int32_t>(n, channels, kRingAllreduce, STRATA_INT32, STRATA_MAX, count, inPlace);
      }
  fillAndCheck<double>(n, 2, kRingAllreduce, STRATA_FLOAT64, STRATA_AVG, 5000, false);
  fillAndCheck<int64_t>(n, 2, kRingAllreduce, STRATA_INT64, STRATA_PROD, 3001, true);
  fillAndCheck<int32_t>(n, 1, kRingAllreduce, STRATA_INT32, STRATA_AVG, 999, false);
}

TEST_P(RingPlans, OneShotMatchesReference) {
  const int n = GetParam();
  for (uint64_t count : {1, 8, 9, 1000})
    for (bool inPlace : {false, true}) {
      fillAndCheck<float>(n, 1, kOneShotAllreduce, STRATA_FLOAT32, STRATA_SUM, count, inPlace);
      fillAndCheck<int32_t>(n, 1, kOneShotAllreduce, STRATA_INT32, STRATA_MIN, count, inPlace);
      fillAndCheck<double>(n, 1, kOneShotAllreduce, STRATA_FLOAT64, STRATA_AVG, count, inPlace);
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, RingPlans, ::testing::Values(1, 2, 3, 4, 5, 7, 8, 16));

TEST(Plans, RingStepsCoverEveryElementOnce) {
  // Each element of the buffer must be finalised (written to the output) by
  // exactly one output-writing step per rank.
  for (int n : {2, 3, 5})
    for (uint64_t count : {uint64_t(1), uint64_t(100), uint64_t(12345)}) {
      for (int r = 0; r < n; ++r) {
        std::vector<ChannelPlan> plans(2);
        kRingAllreduce.build(PlanShape{r, n, 2, kSlotBytes, 4}, count, 2, plans);
        std::vector<int> written(count, 0);
        for (const auto& p : plans)
          for (const auto& s : p.steps)
            if (s.prim == Prim::RecvReduceCopySend || s.prim == Prim::RecvCopySend || s.prim == Prim::Recv)
              for (uint64_t i = s.outOffset; i < s.outOffset + s.count; ++i) written[i]++;
        for (uint64_t i = 0; i < count; ++i) ASSERT_EQ(written[i], 1) << "n=" << n << " r=" << r << " i=" << i;
      }
    }
}

TEST(Plans, MismatchedOperationIsReported) {
  // Rank 0 claims a different count: its peers must fail with INVALID_USAGE
  // naming both operations, not reduce unrelated bytes.
  const int n = 3;
  std::vector<std::vector<char>> in(n, std::vector<char>(400)), out(n, std::vector<char>(400));
  uint64_t wrong = OpDesc{Coll::Allreduce, STRATA_FLOAT32, STRATA_SUM, 99}.pack();
  auto results = runAllreduce(n, 1, kOneShotAllreduce, STRATA_FLOAT32, STRATA_SUM, 100, in, out, false, wrong);
  int mismatches = 0;
  for (int r = 0; r < n; ++r) {
    ASSERT_FALSE(results[r].isOk()) << "rank " << r;
    if (results[r].code() == STRATA_ERR_INVALID_USAGE) {
      ++mismatches;
      EXPECT_NE(results[r].message().find("count=99"), std::string::npos) << results[r].message();
    }
  }
  EXPECT_GE(mismatches, 1);
}

TEST(Plans, ForeignDescStaysInsideItsEnums) {
  // A peer's tag may carry any bits (found by tests/fuzz/tcp_frame_fuzz: an
  // op of 15 loaded into strata_op_t, whose values stop at 4).
  const OpDesc d = OpDesc::unpack(~uint64_t(0));
  EXPECT_EQ(d.datatype, STRATA_NUM_DATATYPES);
  EXPECT_EQ(d.op, STRATA_NUM_OPS);
  EXPECT_EQ(d.describe(), "unknown-operation(count=281474976710655, invalid)");
  const OpDesc honest{Coll::Reduce, STRATA_BFLOAT16, STRATA_AVG, 7};
  const OpDesc back = OpDesc::unpack(honest.pack());
  EXPECT_EQ(back.datatype, STRATA_BFLOAT16);
  EXPECT_EQ(back.op, STRATA_AVG);
  EXPECT_EQ(back.describe(), "reduce(count=7, bfloat16, avg)");
}

TEST(Plans, SelectionFollowsTheModelAndOverrides) {
  const Layout twoByTwo = Layout::blocks(4, 2);
  PlanShape shape{0, 4, 2, 262144, 4, &twoByTwo};
  const CostModel model{{1, 4}, {30, 1}};
  Tuning t;
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, false, &t).isOk());
  // The table holds the model's cheapest algorithm at each size.
  for (uint64_t bytes : {uint64_t(8), uint64_t(4096), uint64_t(1) << 20, uint64_t(256) << 20}) {
    AllreduceChoice c;
    ASSERT_TRUE(t.chooseAllreduce(shape, bytes / 4, &c).isOk());
    double chosen = estimateUs(model, *c.algo, shape, bytes, 16384);
    for (const AllreduceAlgorithm* a : allreduceAlgorithms()) {
      if (a->has(kReproducibleOnly)) continue;
      EXPECT_LE(chosen, estimateUs(model, *a, shape, bytes, 16384) * 1.0000001)
          << bytes << " bytes: " << c.algo->name << " chosen over " << a->name << " (" << t.describe() << ")";
    }
  }
  // Small sizes are latency-bound: the ring's 6 network hops lose.
  AllreduceChoice c;
  ASSERT_TRUE(t.chooseAllreduce(shape, 2, &c).isOk());
  EXPECT_NE(c.algo, &kRingAllreduce);
  EXPECT_EQ(c.nchannels, 1);
  // One-shot is never picked beyond its limit.
  ASSERT_TRUE(Tuning::create("", 0, model, shape, false, &t).isOk());
  ASSERT_TRUE(t.chooseAllreduce(shape, 2, &c).isOk());
  EXPECT_NE(c.algo, &kOneShotAllreduce);

  ASSERT_TRUE(Tuning::create("ring", 16384, model, shape, false, &t).isOk());
  ASSERT_TRUE(t.chooseAllreduce(shape, 2, &c).isOk());
  EXPECT_EQ(c.algo, &kRingAllreduce);
  EXPECT_FALSE(t.useDirect(8));
  ASSERT_TRUE(Tuning::create("oneshot", 16384, model, shape, false, &t).isOk());
  EXPECT_EQ(t.chooseAllreduce(shape, 1 << 20, &c).code(), STRATA_ERR_INVALID_USAGE);
  EXPECT_TRUE(t.useDirect(1 << 20));
  ASSERT_TRUE(Tuning::create("hd", 16384, model, shape, false, &t).isOk());
  ASSERT_TRUE(t.chooseAllreduce(shape, 1 << 20, &c).isOk());
  EXPECT_EQ(c.algo, &kHalvingDoubling);
  EXPECT_EQ(c.nchannels, 2);
  Status bad = Tuning::create("bogus", 16384, model, shape, false, &t);
  EXPECT_EQ(bad.code(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.message().find("STRATA_ALGO='bogus'"), std::string::npos) << bad.message();
  // Every registered name is one STRATA_ALGO takes, and the error lists it.
  for (const AllreduceAlgorithm* a : allreduceAlgorithms()) {
    ASSERT_TRUE(Tuning::create(a->name, 16384, model, shape, false, &t).isOk()) << a->name;
    EXPECT_EQ(t.describe(), std::string(a->name) + " (STRATA_ALGO)");
    EXPECT_NE(bad.message().find(a->name), std::string::npos) << bad.message();
  }
  LinkCost l;
  EXPECT_TRUE(parseLinkCost("30,1.5", "X", &l).isOk());
  EXPECT_EQ(l.latencyUs, 30);
  EXPECT_EQ(l.gbps, 1.5);
  EXPECT_EQ(l.burstUs(4), 120);  // over TCP all of a crossing's latency queues
  EXPECT_TRUE(parseLinkCost("1.6,25,1.5", "X", &l).isOk());
  EXPECT_NEAR(l.burstUs(8), 2.3, 1e-9);  // over RDMA only the NIC's 0.1 us per message
  EXPECT_EQ(l.sharers(8), 1);              // each connection its own bandwidth, as over TCP here
  EXPECT_TRUE(parseLinkCost("1.6,25,1.5,shared", "X", &l).isOk());
  EXPECT_EQ(l.sharers(8), 8);  // a NIC's bandwidth, which the node's 8 crossing ranks share
  EXPECT_NEAR(l.inFlightUs, 1.5, 1e-9);
  EXPECT_TRUE(parseLinkCost("20,0.6,shared", "X", &l).isOk());
  EXPECT_TRUE(l.shared);
  EXPECT_EQ(l.inFlightUs, 0);
  for (const char* text : {"", "30", "30,", "30,0", "-1,2", "a,b", "1,2,3", "1,2,-1", "1,2,", "1,2,1,1", "1,inf",
                           "1,2,1,", "1,2,1,sharedx", "1,2,shared,1", "1,2,,shared"}) {
    Status s = parseLinkCost(text, "STRATA_COST_NET", &l);
    EXPECT_EQ(s.code(), STRATA_ERR_INVALID_ARGUMENT) << text;
    EXPECT_NE(s.message().find("STRATA_COST_NET"), std::string::npos) << s.message();
  }
}

// The two sweeps below end with a count of several slots per rank. Under
// ThreadSanitizer it takes most of their minute and hands data between the
// rank threads no differently than the slot-and-a-bit before it: the other
// legs run it, TSan stops there.
#if defined(__SANITIZE_THREAD__)
constexpr bool kManySlotsPerRank = false;
#else
constexpr bool kManySlotsPerRank = true;
#endif

// Under ThreadSanitizer, where every rank is a thread it watches, this test
// program is the leg's longest (55 s alone, 143 s beside two others): the
// layout sweep below runs its main counts on two channels only (one channel
// hands data between the rank threads as each of two does), and the Bruck
// sweeps stop at 9 ranks (odd, even, powers of two and one past; their
// rounds' threads meet the same way at 17). The other legs run all of it.
#if defined(__SANITIZE_THREAD__)
constexpr std::initializer_list<int> kSweepChannels = {2};
constexpr int kBruckSweepRanks = 9;
#else
constexpr std::initializer_list<int> kSweepChannels = {1, 2};
constexpr int kBruckSweepRanks = 17;
#endif

// Every algorithm on every layout of 1..6 ranks over 1..3 nodes.
TEST(Plans, EveryAlgorithmOnEveryLayout) {
  std::vector<std::vector<int>> layouts;
  for (int n = 1; n <= 6; ++n)
    for (int nodes = 1; nodes <= std::min(n, 3); ++nodes) {
      std::vector<int> v(n);
      for (int r = 0; r < n; ++r) v[r] = r * nodes / n;
      layouts.push_back(v);
    }
  layouts.push_back({0, 0, 0, 1});        // 3 + 1
  layouts.push_back({0, 1, 1, 1, 1});     // 1 + 4
  layouts.push_back({0, 1, 0, 1, 0, 1});  // interleaved
  layouts.push_back({0, 1, 1, 2, 2, 2});  // 1 + 2 + 3
  layouts.push_back({2, 0, 1, 0, 2});     // nodes numbered out of rank order
  layouts.push_back({0, 1, 2, 3});        // 4 nodes: the tree's two roots with a child each
  layouts.push_back({0, 1, 2, 3, 4, 5});  // 6 nodes: two roots with two children each
  layouts.push_back({0, 1, 2, 3, 4, 5, 6});  // 7 nodes: one root (fewer crossings)
  const uint64_t slotElems = kSlotBytes / 4;
  for (const auto& nodeOf : layouts) {
    const int n = static_cast<int>(nodeOf.size());
    const Layout layout = layoutOf(nodeOf);
    for (const AllreduceAlgorithm* a : allreduceAlgorithms()) {
      const AllreduceAlgorithm& algo = *a;
      for (uint64_t count : {uint64_t(1), uint64_t(13), uint64_t(1000), slotElems * 3 + 7, slotElems * n * 2 + 29}) {
        if (algo.has(kOneSlot) && count > slotElems) continue;
        if (!kManySlotsPerRank && count > slotElems * 3 + 7) continue;
        for (int channels : kSweepChannels) {
          fillAndCheck<float>(n, channels, algo, STRATA_FLOAT32, STRATA_SUM, count, false, &layout);
          fillAndCheck<int32_t>(n, channels, algo, STRATA_INT32, STRATA_MAX, count, true, &layout);
        }
      }
      fillAndCheck<double>(n, 1, algo, STRATA_FLOAT64, STRATA_AVG, 777, false, &layout);
      fillAndCheck<int64_t>(n, 2, algo, STRATA_INT64, STRATA_PROD, 901, true, &layout);
      fillAndCheck<int32_t>(n, 1, algo, STRATA_INT32, STRATA_AVG, 555, true, &layout);
      fillAndCheck<int8_t>(n, 1, algo, STRATA_INT8, STRATA_MIN, 333, false, &layout);
    }
  }
}

// Beyond 8 nodes hier's slices span several slots per local rank, and the
// node rings take each block a slot at a time: even and uneven nodes, counts
// from under a slot to several slices, in place or not, on 1 and 2 channels.
TEST(Plans, HierOnManyNodesMatchesReference) {
  std::vector<std::vector<int>> layouts;
  std::vector<int> even(18), uneven;
  for (int r = 0; r < 18; ++r) even[r] = r / 2;  // 9 nodes x 2
  for (int node = 0; node < 17; ++node)          // 17 nodes of 1, 2 or 3 ranks
    for (int k = 0; k <= node % 3; ++k) uneven.push_back(node);
  layouts.push_back(even);
  layouts.push_back(uneven);
  const AllreduceAlgorithm& hier = *findAllreduce("hier");
  const uint64_t slotElems = kSlotBytes / 4;
  for (const auto& nodeOf : layouts) {
    const int n = static_cast<int>(nodeOf.size());
    const Layout layout = layoutOf(nodeOf);
    for (uint64_t count : {uint64_t(13), slotElems * 3 + 7, slotElems * n * 5 + 29})
      for (int channels : {1, 2}) {
        if (!kManySlotsPerRank && count > slotElems * 3 + 7) continue;
        fillAndCheck<float>(n, channels, hier, STRATA_FLOAT32, STRATA_SUM, count, channels == 2, &layout);
        fillAndCheck<int32_t>(n, channels, hier, STRATA_INT32, STRATA_MAX, count, channels == 1, &layout);
      }
  }
}

// hier's plan at 16,384 ranks (2,048 nodes x 8) stays O(n) steps up to
// 4 GiB: its ring between nodes never cuts a block below an eighth of a slot
// (at a slot per local rank and slice it grew with bytes x nodes: 8.4 M steps
// at 4 GiB), and no step exceeds a slot.
TEST(Plans, HierPlanAtScaleIsLinearInRanks) {
  const int n = 16384;
  const Layout layout = Layout::blocks(n, 2048);
  const size_t slotBytes = 256 << 10;
  const AllreduceAlgorithm& hier = *findAllreduce("hier");
  for (uint64_t bytes : {uint64_t(64) << 20, uint64_t(1) << 30, uint64_t(4) << 30}) {
    const PlanShape shape{n / 2 + 1, n, 4, slotBytes, 4, &layout};
    const int nch = shape.channelsFor(bytes);
    std::vector<ChannelPlan> plans(nch);
    hier.build(shape, bytes / 4, nch, plans);
    size_t steps = 0;
    for (const auto& p : plans) {
      steps += p.steps.size();
      for (const Step& s : p.steps) ASSERT_LE(s.count * 4, slotBytes) << primName(s.prim);
    }
    EXPECT_LE(steps, size_t(5) * n) << bytes << " bytes";
  }
}

// The tree over nodes: every node reaches a root by its parent links, each
// link matches a child entry, and the crossings are the fewer of the two
// shapes', counted here by walking the parent links of each.
TEST(Plans, NodeTreeCrossesBetweenNodesTheFewestTimes) {
  auto depthOf = [](int k, int firstChildOfRoot) {
    int d = 0;
    for (; k >= firstChildOfRoot; k = (k - firstChildOfRoot) / 2) ++d;
    return d;
  };
  for (int nodes = 1; nodes <= 40; ++nodes) {
    const NodeTree t = NodeTree::of(nodes);
    int heapDepth = 0, pairDepth = 0;
    for (int k = 0; k < nodes; ++k) {
      heapDepth = std::max(heapDepth, depthOf(k, 1));
      pairDepth = std::max(pairDepth, depthOf(k, 2));
    }
    const int expected = nodes == 1 ? 0 : std::min(2 * heapDepth, 2 * pairDepth + 1);
    EXPECT_EQ(t.crossings(), expected) << nodes << " nodes";
    EXPECT_EQ(t.pairedRoots(), nodes > 1 && 2 * pairDepth + 1 < 2 * heapDepth) << nodes << " nodes";
    int roots = 0;
    for (int k = 0; k < nodes; ++k) {
      const int p = t.parent(k);
      if (p < 0) {
        ++roots;
        if (t.pairedRoots()) {
          EXPECT_EQ(t.partner(t.partner(k)), k);
        }
        continue;
      }
      ASSERT_LT(p, k) << nodes << " nodes, node " << k;
      const auto c = t.children(p);
      EXPECT_TRUE(c[0] == k || c[1] == k) << nodes << " nodes, node " << k;
    }
    EXPECT_EQ(roots, t.pairedRoots() ? 2 : 1) << nodes << " nodes";
  }
}

TEST(Plans, LayoutWalksNodesThenSockets) {
  // Two nodes; on node 0 the launcher alternated packages between ranks.
  const Layout l = layoutOf({0, 0, 0, 0, 1, 1}, {1, 0, 1, 0, 0, 0});
  EXPECT_EQ(l.order, (std::vector<int>{1, 3, 0, 2, 4, 5}));
  for (int p = 0; p < 6; ++p) EXPECT_EQ(l.posOf[l.order[p]], p);
  for (const AllreduceAlgorithm* algo : allreduceAlgorithms()) {
    fillAndCheck<float>(6, 1, *algo, STRATA_FLOAT32, STRATA_SUM, 1001, false, &l);
    fillAndCheck<int32_t>(6, 2, *algo, STRATA_INT32, STRATA_MAX, 3333, true, &l);
  }
  const Layout flat = Layout::blocks(5, 2);
  EXPECT_EQ(flat.nodes(), 2);
  EXPECT_EQ(flat.order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_FALSE(flat.crossesNodes(0, 2));
  EXPECT_TRUE(flat.crossesNodes(2, 3));
}

// Floats of very different magnitudes, so that sums round differently in
// different orders, with signed zeros for min.
float inexactValue(int rank, uint64_t i) {
  if (i % 7 == 0) return (rank % 2) ? -0.0f : 0.0f;
  return static_cast<float>(std::sin(double(rank * 7919 + i)) * std::pow(10.0, double(i % 9) - 4));
}

// Inexact float sums: whatever order an algorithm adds in, every rank must
// hold the same bits (and be close to the double-precision sum).
TEST(Plans, EveryRankGetsTheSameBits) {
  for (const auto& nodeOf :
       std::vector<std::vector<int>>{{0, 1}, {0, 0, 1, 1}, {0, 0, 0, 1, 1}, {0, 1, 0, 1, 2, 2}, {0, 1, 2, 3, 4, 4}}) {
    const int n = static_cast<int>(nodeOf.size());
    const Layout layout = layoutOf(nodeOf);
    for (const AllreduceAlgorithm* algo : allreduceAlgorithms())
      for (strata_op_t op : {STRATA_SUM, STRATA_AVG, STRATA_MIN}) {
        const uint64_t count = algo->has(kOneSlot) ? 1000 : 5000;
        std::vector<std::vector<char>> in(n, std::vector<char>(count * 4)), out(n, std::vector<char>(count * 4));
        std::vector<double> ref(count, 0);
        for (int r = 0; r < n; ++r)
          for (uint64_t i = 0; i < count; ++i) {
            const float v = inexactValue(r, i);
            reinterpret_cast<float*>(in[r].data())[i] = v;
            ref[i] += v;
          }
        auto results = runAllreduce(n, 2, *algo, STRATA_FLOAT32, op, count, in, out, false, 0, &layout);
        for (int r = 0; r < n; ++r) ASSERT_TRUE(results[r].isOk()) << results[r].message();
        for (int r = 1; r < n; ++r)
          ASSERT_EQ(std::memcmp(out[0].data(), out[r].data(), count * 4), 0)
              << algo->name << " op " << op << ": rank " << r << " differs from rank 0";
        if (op == STRATA_SUM) {
          for (uint64_t i = 0; i < count; ++i)
            ASSERT_NEAR(reinterpret_cast<float*>(out[0].data())[i], ref[i], 1e-4 * (1 + std::fabs(ref[i]))) << i;
        }
      }
  }
}

// An algorithm with kSameBitsAnyChunking gives the same bits on one channel
// of the test's slots as on two channels of quarter slots, for inexact sums
// and for min over signed zeros.
TEST(Plans, SameBitsAtAnyChunkingWhereTheRegistrySaysSo) {
  for (const auto& nodeOf : std::vector<std::vector<int>>{{0, 0, 0}, {0, 0, 1, 1, 1}, {0, 1, 0, 1, 2, 2}}) {
    const int n = static_cast<int>(nodeOf.size());
    const Layout layout = layoutOf(nodeOf);
    for (const AllreduceAlgorithm* algo : allreduceAlgorithms()) {
      if (!algo->has(kSameBitsAnyChunking)) continue;
      for (strata_op_t op : {STRATA_SUM, STRATA_MIN}) {
        const uint64_t count = algo->has(kOneSlot) ? kSlotBytes / 4 / 4 : 5000;
        std::vector<std::vector<char>> in(n, std::vector<char>(count * 4));
        for (int r = 0; r < n; ++r)
          for (uint64_t i = 0; i < count; ++i) reinterpret_cast<float*>(in[r].data())[i] = inexactValue(r, i);
        std::vector<std::vector<char>> wide(n, std::vector<char>(count * 4)), narrow = wide;
        for (const Status& s : runAllreduce(n, 1, *algo, STRATA_FLOAT32, op, count, in, wide, false, 0, &layout))
          ASSERT_TRUE(s.isOk()) << s.message();
        for (const Status& s :
             runAllreduce(n, 2, *algo, STRATA_FLOAT32, op, count, in, narrow, false, 0, &layout, kSlotBytes / 4))
          ASSERT_TRUE(s.isOk()) << s.message();
        EXPECT_EQ(std::memcmp(wide[0].data(), narrow[0].data(), count * 4), 0)
            << algo->name << " op " << op << " on " << n << " ranks";
      }
    }
  }
}

// The algorithms with kRankOrder (reproducible mode's) give the rank-order
// fold in_0 + in_1 + ... + in_{n-1}, computed here in float: bit for bit, at
// any rank count, layout, channel count and slot size, in place or not.
TEST(Plans, RankOrderAlgorithmsGiveTheRankOrderFoldBitForBit) {
  for (const auto& nodeOf : std::vector<std::vector<int>>{
           {0}, {0, 0}, {0, 1}, {0, 0, 0}, {0, 0, 1, 1}, {0, 0, 1, 1, 1}, {0, 1, 0, 1, 2, 2}, {0, 0, 0, 0, 1, 1, 1, 1}}) {
    const int n = static_cast<int>(nodeOf.size());
    const Layout layout = layoutOf(nodeOf);
    int ran = 0;
    for (const AllreduceAlgorithm* algo : allreduceAlgorithms()) {
      if (!algo->has(kRankOrder)) continue;
      for (int channels : {1, 2, 3})
        for (size_t slot : {kSlotBytes, kSlotBytes / 4})
          for (bool inPlace : {false, true}) {
            // Oneshot carries one slot; the others also a buffer of many slots.
            const uint64_t count = algo->has(kOneSlot) ? slot / 4 / 2 - 3 : 3 * kSlotBytes / 4 + 37;
            if (algo->has(kOneSlot) && channels > 1) continue;
            std::vector<std::vector<char>> in(n, std::vector<char>(count * 4)), out = in;
            std::vector<float> want(count, 0.0f);
            for (int r = 0; r < n; ++r)
              for (uint64_t i = 0; i < count; ++i) {
                const float v = inexactValue(r, i);
                reinterpret_cast<float*>(in[r].data())[i] = v;
                want[i] = r == 0 ? v : want[i] + v;
              }
            for (const Status& st :
                 runAllreduce(n, channels, *algo, STRATA_FLOAT32, STRATA_SUM, count, in, out, inPlace, 0, &layout, slot))
              ASSERT_TRUE(st.isOk()) << st.message();
            for (int r = 0; r < n; ++r)
              ASSERT_EQ(std::memcmp((inPlace ? in : out)[r].data(), want.data(), count * 4), 0)
                  << algo->name << " on " << n << " ranks, " << channels << " channels, slot " << slot
                  << (inPlace ? ", in place" : "") << ": rank " << r << " differs from the rank-order fold";
            ++ran;
          }
    }
    EXPECT_GT(ran, 0);
  }
}

// Reproducible mode picks rank-order algorithms at every size, forces the
// direct forms of reduce and reduce_scatter, and refuses a forced algorithm
// that folds in another order.
TEST(Plans, ReproducibleTuningUsesRankOrderFoldsOnly) {
  const Layout twoByTwo = Layout::blocks(4, 2);
  PlanShape shape{0, 4, 2, 262144, 4, &twoByTwo};
  const CostModel model{{1, 4}, {30, 1}};
  Tuning t;
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, true, &t).isOk());
  EXPECT_TRUE(t.reproducible());
  for (uint64_t bytes = 4; bytes <= (uint64_t(1) << 30); bytes *= 4) {
    AllreduceChoice c;
    ASSERT_TRUE(t.chooseAllreduce(shape, bytes / 4, &c).isOk());
    EXPECT_TRUE(c.algo->has(kRankOrder)) << bytes << " bytes: " << c.algo->name;
    EXPECT_TRUE(t.useDirect(bytes));
  }
  EXPECT_NE(t.describe().find("reproducible"), std::string::npos) << t.describe();
  ASSERT_TRUE(Tuning::create("ordered", 16384, model, shape, true, &t).isOk());
  Status refused = Tuning::create("ring", 16384, model, shape, true, &t);
  EXPECT_EQ(refused.code(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(refused.message().find("STRATA_ALGO=ring"), std::string::npos) << refused.message();
  EXPECT_NE(refused.message().find("ordered"), std::string::npos) << refused.message();
  // Outside the mode the cost model never picks "ordered" by itself.
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, false, &t).isOk());
  for (uint64_t bytes = 4; bytes <= (uint64_t(1) << 30); bytes *= 4) {
    AllreduceChoice c;
    ASSERT_TRUE(t.chooseAllreduce(shape, bytes / 4, &c).isOk());
    EXPECT_FALSE(c.algo->has(kReproducibleOnly)) << bytes << " bytes: " << c.algo->name;
  }
}

// `use`, a Tuning's choice of a log-depth form, says no at every size from
// 1 byte to 1 GiB on one node of each of `counts` ranks under `model`.
void expectNeverOnOneNode(const CostModel& model, bool (Tuning::*use)(uint64_t) const,
                          std::initializer_list<int> counts) {
  Tuning t;
  for (int n : counts) {
    PlanShape shape{0, n, 2, 262144, 4};
    ASSERT_TRUE(Tuning::create("", 16384, model, shape, false, &t).isOk());
    for (uint64_t bytes = 1; bytes <= (uint64_t(1) << 30); bytes *= 8)
      EXPECT_FALSE((t.*use)(bytes)) << n << " ranks on one node, " << bytes << " bytes";
  }
}

// A call of 2 float32 elements with no buffers: all that Planner::choose
// reads to pick a form.
CollCall choiceCall(Coll coll) {
  return CollCall{coll, nullptr, nullptr, 2, STRATA_FLOAT32, STRATA_SUM, 0, nullptr, nullptr, nullptr, nullptr};
}

// What one rank's plans do: the peers they send to and receive from, and how
// many of their steps write each element of the output (those whose
// primitive is one of `writers`).
struct Traffic {
  std::set<int> to, from;
  std::vector<int> written;
};
Traffic trafficOf(const std::vector<ChannelPlan>& plans, uint64_t outElems, std::initializer_list<Prim> writers) {
  Traffic t;
  t.written.assign(outElems, 0);
  for (const auto& p : plans)
    for (const Step& s : p.steps) {
      if (s.sendPeer >= 0) t.to.insert(s.sendPeer);
      if (s.recvPeer >= 0) t.from.insert(s.recvPeer);
      if (std::find(writers.begin(), writers.end(), s.prim) != writers.end())
        for (uint64_t i = s.outOffset; i < s.outOffset + s.count; ++i) t.written[i]++;
    }
  return t;
}

// Bruck's allgather (bruck.cc) on n threads; every rank's output must hold
// every rank's input at its block, and nothing past the end may change.
// Inputs are distinct per rank and element, so a block in the wrong place
// or a piece sent twice shows.
template <typename T>
void checkBruckAllgather(int n, int channels, uint64_t count, bool inPlace, size_t slotBytes, int nslots = kSlots,
                         const Layout* layout = nullptr) {
  const size_t bytes = count * sizeof(T);
  auto value = [](int r, uint64_t i) { return static_cast<T>((r * 7919 + i * 13) % 30011) / static_cast<T>(4); };
  std::vector<std::vector<char>> in(n, std::vector<char>(bytes)), out(n, std::vector<char>(n * bytes + 8, 0x5a));
  std::vector<char> want(n * bytes);
  std::vector<const char*> inPtr(n);
  std::vector<char*> outPtr(n);
  for (int r = 0; r < n; ++r) {
    for (uint64_t i = 0; i < count; ++i) reinterpret_cast<T*>(in[r].data())[i] = value(r, i);
    std::memcpy(want.data() + r * bytes, in[r].data(), bytes);
    if (inPlace) std::memcpy(out[r].data() + r * bytes, in[r].data(), bytes);
    inPtr[r] = inPlace ? out[r].data() + r * bytes : in[r].data();
    outPtr[r] = out[r].data();
  }
  auto build = [&](const PlanShape& shape, std::vector<ChannelPlan>& plans) {
    buildBruckAllgather(shape, count, channels, plans);
    return channels;
  };
  const strata_datatype_t dt = std::is_floating_point<T>::value ? (sizeof(T) == 4 ? STRATA_FLOAT32 : STRATA_FLOAT64)
                                                                  : (sizeof(T) == 4 ? STRATA_INT32 : STRATA_INT8);
  const std::string what = "n=" + std::to_string(n) + " channels=" + std::to_string(channels) + " count=" +
                           std::to_string(count) + " slot=" + std::to_string(slotBytes) + " nslots=" +
                           std::to_string(nslots) + (inPlace ? " in place" : "") + (layout ? " (layout)" : "");
  auto results = runPlans(n, channels, build, OpDesc{Coll::Allgather, dt, STRATA_SUM, count}.pack(), dt, STRATA_SUM,
                          inPtr, outPtr, 0, layout, slotBytes, nslots);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(results[r].isOk()) << what << ": rank " << r << ": " << results[r].message();
  for (int r = 0; r < n; ++r) {
    for (size_t b = 0; b < n * bytes; ++b)
      ASSERT_EQ(out[r][b], want[b]) << what << ": rank " << r << ", block " << b / bytes << ", byte " << b % bytes;
    for (size_t b = n * bytes; b < out[r].size(); ++b) ASSERT_EQ(out[r][b], 0x5a) << what << ": rank " << r;
  }
}

TEST(BruckAllgather, MatchesTheInputsOnAnyRankCount) {
  for (int n = 1; n <= kBruckSweepRanks; ++n) {
    const int channels = 1 + n % 3;
    // 256-byte slots: 64 floats or 32 doubles a piece.
    for (uint64_t count : {uint64_t(1), uint64_t(63), uint64_t(64), uint64_t(65), uint64_t(1000)})
      for (bool inPlace : {false, true}) {
        checkBruckAllgather<float>(n, channels, count, inPlace, 256);
        if (HasFatalFailure()) return;
      }
    checkBruckAllgather<int32_t>(n, 3, 777, false, 256);
    checkBruckAllgather<double>(n, 2, 301, true, 256);
    checkBruckAllgather<int8_t>(n, 1, 13, false, 256);
    // One slot per FIFO: the header's deadlock argument needs no more.
    checkBruckAllgather<float>(n, 2, 999, false, 256, 1);
    if (HasFatalFailure()) return;
  }
}

TEST(BruckAllgather, FollowsTheLayoutsOrder) {
  // Ranks walked out of rank order (nodes interleaved, and numbered out of
  // order): runs of consecutive ranks break where the walk jumps.
  for (const auto& nodeOf : std::vector<std::vector<int>>{{0, 1, 0, 1, 0, 1}, {2, 0, 1, 0, 2}, {0, 0, 1, 1, 1, 2, 2}})
    for (int channels : {1, 2}) {
      const Layout layout = layoutOf(nodeOf);
      const int n = static_cast<int>(nodeOf.size());
      checkBruckAllgather<float>(n, channels, 100, false, 256, kSlots, &layout);
      checkBruckAllgather<int32_t>(n, channels, 1, true, 256, kSlots, &layout);
    }
}

TEST(BruckAllgather, TalksToLog2nPeersAndWritesEveryElementOnce) {
  for (int n = 1; n <= 40; ++n)
    for (uint64_t count : {uint64_t(1), uint64_t(70)})
      for (int channels : {1, 3}) {
        int log2n = 0;
        while ((1 << log2n) < n) ++log2n;
        for (int r = 0; r < n; ++r) {
          std::vector<ChannelPlan> plans(channels);
          buildBruckAllgather(PlanShape{r, n, channels, 256, 4}, count, channels, plans);
          const Traffic t = trafficOf(plans, n * count, {Prim::Recv, Prim::CopySend, Prim::Copy});
          EXPECT_LE(t.to.size(), size_t(log2n)) << "n=" << n << " rank " << r;
          EXPECT_LE(t.from.size(), size_t(log2n)) << "n=" << n << " rank " << r;
          for (uint64_t i = 0; i < n * count; ++i)
            ASSERT_EQ(t.written[i], 1) << "n=" << n << " rank " << r << " element " << i << " count " << count;
        }
      }
}

// The one-hop exchange stays where the model has it cheaper (every rank
// count on one node, two nodes, large blocks anywhere); Bruck's rounds take
// small blocks on many nodes. STRATA_ALLGATHER_ALGO and a call's pick force
// either.
TEST(BruckAllgather, ChosenWhereTheModelSaysAndWhenForced) {
  const CostModel model{{2, 6}, {20, 0.6}};
  expectNeverOnOneNode(model, &Tuning::useBruckAllgather, {2, 3, 4, 5, 8, 16, 64, 1024});
  Tuning t;
  // Two nodes of two ranks: Bruck's second round has both ranks of a node
  // crossing at once, which the model rates no cheaper than the exchange.
  const Layout twoByTwo = Layout::blocks(4, 2);
  PlanShape four{0, 4, 2, 262144, 4, &twoByTwo};
  ASSERT_TRUE(Tuning::create("", 16384, model, four, false, &t).isOk());
  for (uint64_t bytes = 1; bytes <= (uint64_t(1) << 30); bytes *= 8)
    EXPECT_FALSE(t.useBruckAllgather(bytes)) << "2 nodes x 2 ranks, " << bytes << " bytes";
  const Layout wide = Layout::blocks(128, 16);
  PlanShape shape{0, 128, 2, 262144, 4, &wide};
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, false, &t).isOk());
  EXPECT_TRUE(t.useBruckAllgather(8));
  EXPECT_TRUE(t.useBruckAllgather(16384));
  EXPECT_FALSE(t.useBruckAllgather(32768));
  EXPECT_FALSE(t.useBruckAllgather(64 << 20));
  const Layout eight = Layout::blocks(64, 8);
  PlanShape sixtyFour{0, 64, 2, 262144, 4, &eight};
  ASSERT_TRUE(Tuning::create("", 16384, model, sixtyFour, false, &t).isOk());
  EXPECT_TRUE(t.useBruckAllgather(8192));
  EXPECT_FALSE(t.useBruckAllgather(16384));
  CollCall call = choiceCall(Coll::Allgather);
  PlanChoice choice;
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "bruck");
  call.pick.bruck = 0;
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "pairwise");
  EXPECT_FALSE(choice.bruck);

  PlanShape small{0, 4, 2, 262144, 4};
  setenv("STRATA_ALLGATHER_ALGO", "bruck", 1);
  params::reload();
  Status forced = Tuning::create("", 16384, model, small, false, &t);
  setenv("STRATA_ALLGATHER_ALGO", "bogus", 1);
  params::reload();
  Status bad = Tuning::create("", 16384, model, small, false, &t);
  unsetenv("STRATA_ALLGATHER_ALGO");
  params::reload();
  ASSERT_TRUE(forced.isOk()) << forced.message();
  EXPECT_EQ(bad.code(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.message().find("STRATA_ALLGATHER_ALGO='bogus'"), std::string::npos) << bad.message();
  ASSERT_TRUE(Tuning::create("", 16384, model, small, false, &t).isOk());
  EXPECT_FALSE(t.useBruckAllgather(8));
}


// Bruck's reduce-scatter (reduce_scatter/bruck.cc) on n threads, each rank
// with the scratch region its plan declares and a guard past it: rank r's
// output must be op over every rank's block r, computed here in double from
// inputs whose every partial sum is exact, so any fold order gives the
// reference; avg divides once (twice, or never, would show). Nothing past
// the output or the scratch may change.
template <typename T>
void checkBruckReduceScatter(int n, int channels, uint64_t count, bool inPlace, strata_op_t op, size_t slotBytes,
                             int nslots = kSlots, const Layout* layout = nullptr) {
  const size_t bytes = count * sizeof(T);
  const double scale = std::is_floating_point<T>::value ? 0.25 : 1.0;
  const size_t scratchBytes = bruckReduceScatterScratch(n, count) * sizeof(T);
  constexpr size_t kGuard = 64;
  std::vector<std::vector<char>> in(n, std::vector<char>(n * bytes)), out(n, std::vector<char>(bytes + 8, 0x5a));
  std::vector<std::vector<char>> scratch(n, std::vector<char>(scratchBytes + kGuard, 0x5a));
  std::vector<const char*> inPtr(n);
  std::vector<char*> outPtr(n), scratchPtr(n);
  for (int r = 0; r < n; ++r) {
    for (uint64_t i = 0; i < n * count; ++i)
      reinterpret_cast<T*>(in[r].data())[i] = static_cast<T>(inputValue(r, i, op) * scale);
    inPtr[r] = in[r].data();
    outPtr[r] = inPlace ? in[r].data() + r * bytes : out[r].data();
    scratchPtr[r] = scratch[r].data();
  }
  auto build = [&](const PlanShape& shape, std::vector<ChannelPlan>& plans) {
    buildBruckReduceScatter(shape, count, channels, plans);
    return channels;
  };
  const strata_datatype_t dt = std::is_floating_point<T>::value ? (sizeof(T) == 4 ? STRATA_FLOAT32 : STRATA_FLOAT64)
                                                                  : STRATA_INT32;
  const std::string what = "n=" + std::to_string(n) + " channels=" + std::to_string(channels) + " count=" +
                           std::to_string(count) + " op=" + std::to_string(op) + " slot=" + std::to_string(slotBytes) +
                           " nslots=" + std::to_string(nslots) + (inPlace ? " in place" : "") +
                           (layout ? " (layout)" : "");
  auto results = runPlans(n, channels, build, OpDesc{Coll::ReduceScatter, dt, op, count}.pack(), dt, op, inPtr,
                          outPtr, 0, layout, slotBytes, nslots, scratchPtr);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(results[r].isOk()) << what << ": rank " << r << ": " << results[r].message();
  for (int r = 0; r < n; ++r) {
    for (uint64_t e = 0; e < count; ++e) {
      const uint64_t i = uint64_t(r) * count + e;
      double acc = inputValue(0, i, op) * scale;
      for (int p = 1; p < n; ++p) {
        const double v = inputValue(p, i, op) * scale;
        acc = op == STRATA_MAX ? std::max(acc, v) : acc + v;
      }
      if (op == STRATA_AVG) acc = std::is_floating_point<T>::value ? acc / n : std::trunc(acc / n);
      ASSERT_EQ(reinterpret_cast<const T*>(outPtr[r])[e], static_cast<T>(acc)) << what << ": rank " << r << " element " << e;
    }
    if (!inPlace) {
      for (size_t b = bytes; b < out[r].size(); ++b) ASSERT_EQ(out[r][b], 0x5a) << what << ": rank " << r;
    }
    for (size_t b = scratchBytes; b < scratch[r].size(); ++b) {
      ASSERT_EQ(scratch[r][b], 0x5a) << what << ": rank " << r << " wrote past its scratch";
    }
  }
}

TEST(BruckReduceScatter, MatchesTheReferenceOnAnyRankCount) {
  for (int n = 1; n <= kBruckSweepRanks; ++n) {
    const int channels = 1 + n % 3;
    // 256-byte slots: 64 floats or 32 doubles a piece, so blocks pipeline.
    for (uint64_t count : {uint64_t(1), uint64_t(63), uint64_t(65), uint64_t(1000)})
      for (bool inPlace : {false, true}) {
        checkBruckReduceScatter<float>(n, channels, count, inPlace, STRATA_SUM, 256);
        if (HasFatalFailure()) return;
      }
    checkBruckReduceScatter<int32_t>(n, 3, 777, false, STRATA_MAX, 256);
    checkBruckReduceScatter<float>(n, 1, 130, true, STRATA_MAX, 256);
    checkBruckReduceScatter<double>(n, 2, 301, true, STRATA_AVG, 256);
    checkBruckReduceScatter<int32_t>(n, 1, 99, false, STRATA_AVG, 256);
    checkBruckReduceScatter<double>(n, 3, 5, false, STRATA_SUM, 256);
    // One slot per FIFO: the header's deadlock argument needs no more.
    checkBruckReduceScatter<float>(n, 2, 999, false, STRATA_SUM, 256, 1);
    if (HasFatalFailure()) return;
  }
}

TEST(BruckReduceScatter, FollowsTheLayoutsOrder) {
  for (const auto& nodeOf : std::vector<std::vector<int>>{{0, 1, 0, 1, 0, 1}, {2, 0, 1, 0, 2}, {0, 0, 1, 1, 1, 2, 2}})
    for (int channels : {1, 2}) {
      const Layout layout = layoutOf(nodeOf);
      const int n = static_cast<int>(nodeOf.size());
      checkBruckReduceScatter<float>(n, channels, 100, false, STRATA_SUM, 256, kSlots, &layout);
      checkBruckReduceScatter<int32_t>(n, channels, 1, true, STRATA_MAX, 256, kSlots, &layout);
    }
}

// Floats whose sums round: the fold order is fixed by n alone, so the same
// inputs give the same bits whatever the channels and slots.
TEST(BruckReduceScatter, SameBitsWhateverTheChunking) {
  const int n = 7;
  const uint64_t count = 700;
  std::vector<std::vector<char>> in(n, std::vector<char>(n * count * 4));
  std::vector<const char*> inPtr(n);
  for (int r = 0; r < n; ++r) {
    for (uint64_t i = 0; i < n * count; ++i)
      reinterpret_cast<float*>(in[r].data())[i] = 1.0f / float(1 + (r * 31 + i * 7) % 97) * (r % 2 ? 1e4f : 1e-3f);
    inPtr[r] = in[r].data();
  }
  std::vector<std::vector<char>> first;
  for (auto [channels, slot] : std::vector<std::pair<int, size_t>>{{1, 4096}, {3, 256}, {2, 64}}) {
    std::vector<std::vector<char>> out(n, std::vector<char>(count * 4)),
        scratch(n, std::vector<char>(bruckReduceScatterScratch(n, count) * 4));
    std::vector<char*> outPtr(n), scratchPtr(n);
    for (int r = 0; r < n; ++r) {
      outPtr[r] = out[r].data();
      scratchPtr[r] = scratch[r].data();
    }
    auto build = [&](const PlanShape& shape, std::vector<ChannelPlan>& plans) {
      buildBruckReduceScatter(shape, count, channels, plans);
      return channels;
    };
    auto results = runPlans(n, channels, build, OpDesc{Coll::ReduceScatter, STRATA_FLOAT32, STRATA_SUM, count}.pack(),
                            STRATA_FLOAT32, STRATA_SUM, inPtr, outPtr, 0, nullptr, slot, kSlots, scratchPtr);
    for (int r = 0; r < n; ++r) ASSERT_TRUE(results[r].isOk()) << results[r].message();
    if (first.empty()) first = out;
    for (int r = 0; r < n; ++r) EXPECT_EQ(out[r], first[r]) << channels << " channels, " << slot << "-byte slots";
  }
}

TEST(BruckReduceScatter, TalksToLog2nPeersWithinItsScratch) {
  for (int n = 1; n <= 40; ++n)
    for (uint64_t count : {uint64_t(1), uint64_t(70)})
      for (int channels : {1, 3}) {
        int log2n = 0;
        while ((1 << log2n) < n) ++log2n;
        const uint64_t scratch = bruckReduceScatterScratch(n, count);
        EXPECT_LE(scratch, n / 2 * count) << "n=" << n;
        for (int r = 0; r < n; ++r) {
          std::vector<ChannelPlan> plans(channels);
          buildBruckReduceScatter(PlanShape{r, n, channels, 256, 4}, count, channels, plans);
          std::set<int> to, from;
          std::vector<int> finished(count, 0);
          for (const auto& p : plans)
            for (const Step& s : p.steps) {
              if (s.sendPeer >= 0) to.insert(s.sendPeer);
              if (s.recvPeer >= 0) from.insert(s.recvPeer);
              if (s.flags & kInFromScratch) {
                ASSERT_LE(s.inOffset + s.count, scratch) << "n=" << n;
              }
              if (s.flags & kOutToScratch) {
                ASSERT_LE(s.outOffset + s.count, scratch) << "n=" << n;
              }
              if (!(s.flags & kOutToScratch) && s.sendPeer < 0) {
                EXPECT_FALSE(s.flags & kPartial);
                for (uint64_t i = s.outOffset; i < s.outOffset + s.count; ++i) finished[i]++;
              }
            }
          EXPECT_LE(to.size(), size_t(log2n)) << "n=" << n << " rank " << r;
          EXPECT_LE(from.size(), size_t(log2n)) << "n=" << n << " rank " << r;
          for (uint64_t i = 0; i < count; ++i) ASSERT_EQ(finished[i], 1) << "n=" << n << " rank " << r << " element " << i;
        }
      }
}

// The ring and the direct form stay on one node and at small rank counts
// across two nodes; Bruck's rounds take small blocks on many nodes, host
// memory only, never in reproducible mode. STRATA_REDUCE_SCATTER_ALGO and a
// call's pick force one; the plan declares the scratch it needs.
TEST(BruckReduceScatter, ChosenWhereTheModelSaysAndWhenForced) {
  const CostModel model{{2, 6}, {20, 0.6}};
  expectNeverOnOneNode(model, &Tuning::useBruckReduceScatter, {2, 3, 4, 5, 8, 16, 64, 1024});
  Tuning t;
  for (int nodes : {2, 3}) {
    const Layout layout = Layout::blocks(2 * nodes, nodes);
    PlanShape shape{0, 2 * nodes, 2, 262144, 4, &layout};
    ASSERT_TRUE(Tuning::create("", 16384, model, shape, false, &t).isOk());
    for (uint64_t bytes = 1; bytes <= (uint64_t(1) << 30); bytes *= 8)
      EXPECT_FALSE(t.useBruckReduceScatter(bytes)) << nodes << " nodes x 2 ranks, " << bytes << " bytes";
  }
  // A rank per node: every hop crosses, and log2 n crossings beat n-1 up
  // to 16 KiB. Eight per node: a round where all eight cross pays eight
  // latencies, so only small blocks on 32 nodes, and none on 16 (the ring's
  // 16 crossings and 112 memory hops cost less).
  const Layout wide = Layout::blocks(16, 16);
  PlanShape shape{0, 16, 2, 262144, 4, &wide};
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, false, &t).isOk());
  EXPECT_TRUE(t.useBruckReduceScatter(8));
  EXPECT_TRUE(t.useBruckReduceScatter(16384));
  EXPECT_FALSE(t.useBruckReduceScatter(32768));
  EXPECT_FALSE(t.useBruckReduceScatter(64 << 20));
  const Layout dense = Layout::blocks(256, 32);
  PlanShape twoFiftySix{0, 256, 2, 262144, 4, &dense};
  ASSERT_TRUE(Tuning::create("", 16384, model, twoFiftySix, false, &t).isOk());
  EXPECT_TRUE(t.useBruckReduceScatter(1024));
  EXPECT_FALSE(t.useBruckReduceScatter(2048));
  const Layout sixteen = Layout::blocks(128, 16);
  PlanShape oneTwentyEight{0, 128, 2, 262144, 4, &sixteen};
  ASSERT_TRUE(Tuning::create("", 16384, model, oneTwentyEight, false, &t).isOk());
  EXPECT_FALSE(t.useBruckReduceScatter(8));
  // Nor the direct form, small as the blocks are: 127 sends from each rank,
  // 112 of them crossing, rate far above the ring's 16 crossings.
  for (uint64_t bytes : {uint64_t(8), uint64_t(40), uint64_t(16384)}) {
    EXPECT_FALSE(t.useDirectReduceScatter(bytes)) << bytes << " bytes";
    EXPECT_TRUE(t.useDirect(bytes)) << "the size rule alone would take the direct form at " << bytes << " bytes";
  }
  CollCall rsCall{Coll::ReduceScatter, nullptr, nullptr, 5, STRATA_INT64, STRATA_SUM, 0,
                  nullptr, nullptr, nullptr, nullptr};
  PlanShape rsShape = oneTwentyEight;
  rsShape.elemSize = 8;
  PlanChoice rsChoice;
  ASSERT_TRUE(Planner::choose(rsCall, rsShape, t, &rsChoice).isOk());
  EXPECT_STREQ(rsChoice.algo, "ring");
  // Reproducible mode keeps the direct form, which folds in rank order.
  ASSERT_TRUE(Tuning::create("", 16384, model, oneTwentyEight, true, &t).isOk());
  EXPECT_TRUE(t.useDirectReduceScatter(40));
  // One node: the direct form's one step stays below the ring's n-1 hops.
  for (int n : {2, 4, 8}) {
    PlanShape node{0, n, 2, 262144, 4};
    ASSERT_TRUE(Tuning::create("", 16384, model, node, false, &t).isOk());
    EXPECT_TRUE(t.useDirectReduceScatter(40)) << n << " ranks on one node";
    EXPECT_FALSE(t.useDirectReduceScatter(32768)) << n << " ranks on one node";
  }
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, false, &t).isOk());
  CollCall call = choiceCall(Coll::ReduceScatter);
  PlanChoice choice;
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "bruck");
  EXPECT_EQ(choice.scratchElems, bruckReduceScatterScratch(16, 2));
  call.pick.direct = 0;
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "ring");
  EXPECT_EQ(choice.scratchElems, 0u);
  call.pick.direct = -1;
  call.memory = MemoryType::Device;
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_FALSE(choice.bruck) << choice.algo;
  call.memory = MemoryType::Host;
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, true, &t).isOk());
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "direct");
  for (uint64_t bytes = 1; bytes <= (uint64_t(1) << 30); bytes *= 8) EXPECT_FALSE(t.useBruckReduceScatter(bytes));

  PlanShape small{0, 4, 2, 262144, 4};
  setenv("STRATA_REDUCE_SCATTER_ALGO", "bruck", 1);
  params::reload();
  Status forced = Tuning::create("", 16384, model, small, false, &t);
  const bool bruck = t.useBruckReduceScatter(8) && t.useBruckReduceScatter(64 << 20);
  Status refused = Tuning::create("", 16384, model, small, true, &t);
  setenv("STRATA_REDUCE_SCATTER_ALGO", "ring", 1);
  params::reload();
  ASSERT_TRUE(Tuning::create("", 16384, model, small, false, &t).isOk());
  const bool ring = !t.useBruckReduceScatter(8) && !t.useDirectReduceScatter(8);
  setenv("STRATA_REDUCE_SCATTER_ALGO", "bogus", 1);
  params::reload();
  Status bad = Tuning::create("", 16384, model, small, false, &t);
  unsetenv("STRATA_REDUCE_SCATTER_ALGO");
  params::reload();
  ASSERT_TRUE(forced.isOk()) << forced.message();
  EXPECT_TRUE(bruck);
  EXPECT_TRUE(ring);
  EXPECT_EQ(refused.code(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bad.code(), STRATA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(bad.message().find("STRATA_REDUCE_SCATTER_ALGO='bogus'"), std::string::npos) << bad.message();
  ASSERT_TRUE(Tuning::create("", 16384, model, small, false, &t).isOk());
  EXPECT_FALSE(t.useBruckReduceScatter(8));
  EXPECT_TRUE(t.useDirectReduceScatter(8));
}


// The binomial-tree broadcast (rooted.h) on n threads: every rank's output
// must be the root's input, whatever the root, and nothing past the end may
// change. The other ranks' inputs hold values of their own, so a piece sent
// from the wrong buffer shows.
void checkTreeBroadcast(int n, int root, int channels, uint64_t count, bool inPlace, size_t slotBytes,
                        int nslots = kSlots, const Layout* layout = nullptr) {
  const size_t bytes = count * sizeof(float);
  auto value = [](int r, uint64_t i) { return static_cast<float>((r * 7919 + i * 13) % 30011) / 4.0f; };
  std::vector<std::vector<char>> in(n, std::vector<char>(bytes)), out(n, std::vector<char>(bytes + 8, 0x5a));
  std::vector<const char*> inPtr(n);
  std::vector<char*> outPtr(n);
  for (int r = 0; r < n; ++r) {
    for (uint64_t i = 0; i < count; ++i) reinterpret_cast<float*>(in[r].data())[i] = value(r, i);
    if (inPlace && r == root) std::memcpy(out[r].data(), in[r].data(), bytes);
    inPtr[r] = inPlace && r == root ? out[r].data() : in[r].data();
    outPtr[r] = out[r].data();
  }
  auto build = [&](const PlanShape& shape, std::vector<ChannelPlan>& plans) {
    buildBroadcast(shape, count, root, RootedForm::Tree, channels, plans);
    return channels;
  };
  const std::string what = "n=" + std::to_string(n) + " root=" + std::to_string(root) + " channels=" +
                           std::to_string(channels) + " count=" + std::to_string(count) + " nslots=" +
                           std::to_string(nslots) + (inPlace ? " in place" : "") + (layout ? " (layout)" : "");
  auto results = runPlans(n, channels, build, OpDesc{Coll::Broadcast, STRATA_FLOAT32, STRATA_SUM, count}.pack(),
                          STRATA_FLOAT32, STRATA_SUM, inPtr, outPtr, 0, layout, slotBytes, nslots);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(results[r].isOk()) << what << ": rank " << r << ": " << results[r].message();
  for (int r = 0; r < n; ++r) {
    for (uint64_t i = 0; i < count; ++i)
      ASSERT_EQ(reinterpret_cast<const float*>(out[r].data())[i], value(root, i)) << what << ": rank " << r
                                                                                 << ", element " << i;
    for (size_t b = bytes; b < out[r].size(); ++b) ASSERT_EQ(out[r][b], 0x5a) << what << ": rank " << r;
  }
}

TEST(TreeBroadcast, DeliversTheRootsInputOnAnyRankCount) {
  for (int n = 1; n <= kBruckSweepRanks; ++n)
    for (int root : {0, n / 2, n - 1}) {
      // 256-byte slots: 64 floats a chunk.
      for (uint64_t count : {uint64_t(1), uint64_t(64), uint64_t(1000)})
        for (bool inPlace : {false, true}) {
          checkTreeBroadcast(n, root, 1 + (n + root) % 3, count, inPlace, 256);
          if (HasFatalFailure()) return;
        }
      // One slot per FIFO: a rank sends each chunk to its children in turn.
      checkTreeBroadcast(n, root, 2, 999, false, 256, 1);
      if (HasFatalFailure()) return;
    }
}

TEST(TreeBroadcast, FollowsTheLayoutsOrder) {
  for (const auto& nodeOf : std::vector<std::vector<int>>{{0, 1, 0, 1, 0, 1}, {2, 0, 1, 0, 2}, {0, 0, 1, 1, 1, 2, 2}})
    for (int root = 0; root < static_cast<int>(nodeOf.size()); root += 2) {
      const Layout layout = layoutOf(nodeOf);
      checkTreeBroadcast(static_cast<int>(nodeOf.size()), root, 2, 300, false, 256, kSlots, &layout);
    }
}

// Each rank hears from one parent and sends to at most ceil(log2 n)
// children, every element reaches every rank once, and with a node's ranks
// adjacent the root's sends cross between nodes first: the rounds that
// cross have one sender a node.
TEST(TreeBroadcast, TalksToItsParentAndLog2nChildren) {
  for (int n = 1; n <= 40; ++n) {
    int log2n = 0;
    while ((1 << log2n) < n) ++log2n;
    for (int root : {0, n - 1}) {
      std::vector<int> heard(n, 0);
      for (int r = 0; r < n; ++r) {
        std::vector<ChannelPlan> plans(2);
        buildBroadcast(PlanShape{r, n, 2, 256, 4}, 70, root, RootedForm::Tree, 2, plans);
        const Traffic t = trafficOf(plans, 70, {Prim::Recv, Prim::RecvCopySend, Prim::Copy});
        EXPECT_LE(t.to.size(), size_t(log2n)) << "n=" << n << " rank " << r;
        EXPECT_EQ(t.from.size(), r == root ? 0u : 1u) << "n=" << n << " rank " << r;
        for (int peer : t.to) heard[peer]++;
        for (uint64_t i = 0; i < 70; ++i) ASSERT_EQ(t.written[i], 1) << "n=" << n << " rank " << r << " element " << i;
      }
      for (int r = 0; r < n; ++r) EXPECT_EQ(heard[r], r == root ? 0 : 1) << "n=" << n << " rank " << r;
    }
  }
  const Layout wide = Layout::blocks(128, 16);
  std::vector<ChannelPlan> plans(1);
  buildBroadcast(PlanShape{0, 128, 1, 256, 4, &wide}, 8, 0, RootedForm::Tree, 1, plans);
  std::vector<int> sentTo;
  for (const Step& s : plans[0].steps) sentTo.push_back(s.sendPeer);
  EXPECT_EQ(sentTo, (std::vector<int>{64, 32, 16, 8, 4, 2, 1, -1}));
}

// On one node the size rule stays; on many nodes the tree takes the direct
// form's sizes, the chain the rest. A call's pick or a forced form wins.
TEST(TreeBroadcast, ChosenWhereTheModelSaysAndWhenForced) {
  const CostModel model{{2, 6}, {20, 0.6}};
  expectNeverOnOneNode(model, &Tuning::useTreeBroadcast, {2, 3, 4, 8, 64});
  Tuning t;
  const Layout wide = Layout::blocks(128, 16);
  PlanShape shape{0, 128, 2, 262144, 4, &wide};
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, false, &t).isOk());
  for (uint64_t bytes : {uint64_t(8), uint64_t(1000), uint64_t(16384)})
    EXPECT_TRUE(t.useTreeBroadcast(bytes)) << bytes << " bytes";
  for (uint64_t bytes : {uint64_t(32768), uint64_t(64) << 20}) EXPECT_FALSE(t.useTreeBroadcast(bytes)) << bytes;
  const Layout two = Layout::blocks(4, 2);
  PlanShape fourOnTwo{0, 4, 2, 262144, 4, &two};
  ASSERT_TRUE(Tuning::create("", 16384, model, fourOnTwo, false, &t).isOk());
  EXPECT_TRUE(t.useTreeBroadcast(8));
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, false, &t).isOk());
  CollCall call = choiceCall(Coll::Broadcast);
  PlanChoice choice;
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "tree");
  EXPECT_TRUE(choice.tree);
  call.pick.direct = 1;
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "direct");
  call.pick.direct = 0;
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "chain");
  // Reduce keeps its two forms.
  call.coll = Coll::Reduce;
  call.pick.direct = -1;
  ASSERT_TRUE(Planner::choose(call, shape, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "direct");
  // A forced form, and reproducible mode, leave the tree out.
  ASSERT_TRUE(Tuning::create("oneshot", 16384, model, shape, false, &t).isOk());
  EXPECT_FALSE(t.useTreeBroadcast(8));
  ASSERT_TRUE(Tuning::create("", 16384, model, shape, true, &t).isOk());
  EXPECT_FALSE(t.useTreeBroadcast(8));
  // A call's pick takes it on one node.
  PlanShape four{0, 4, 2, 262144, 4};
  ASSERT_TRUE(Tuning::create("", 16384, model, four, false, &t).isOk());
  call.coll = Coll::Broadcast;
  call.pick.tree = 1;
  ASSERT_TRUE(Planner::choose(call, four, t, &choice).isOk());
  EXPECT_STREQ(choice.algo, "tree");
}

// A group's receives may land in their buffers as they arrive
// (kLandsEarly) unless one overlaps a send's buffer, which the group's sends
// may still be reading: a lone receive always, disjoint buffers yes, a
// receive into (part of) a buffer being sent no.
TEST(P2pGroup, ReceivesLandEarlyOnlyWhereNoSendBufferOverlaps) {
  const PlanShape shape{0, 3, 2, kSlotBytes, 1, nullptr};
  std::vector<char> a(100000), b(100000);
  auto landsEarly = [&](const std::vector<P2pOp>& ops) {
    P2pSequences seqs{std::vector<uint64_t>(3), std::vector<uint64_t>(3)};
    std::vector<Message> messages;
    ExchangeSpec spec;
    EXPECT_TRUE(describeP2pGroup(ops, 0, &seqs, &messages, &spec).isOk());
    PlanSet plans(shape.nchannels);
    buildP2pGroup(shape, spec, plans);
    int early = 0, late = 0;
    for (const ChannelPlan& plan : plans)
      for (const Step& step : plan.steps)
        if (step.prim == Prim::Recv) ++(step.flags & kLandsEarly ? early : late);
    EXPECT_TRUE(early == 0 || late == 0) << "a group's receives differ";
    EXPECT_GT(early + late, 0) << "no receive steps";
    return early > 0;
  };
  auto send = [](int peer, const char* buf, size_t n) { return P2pOp{true, peer, buf, nullptr, n, STRATA_UINT8}; };
  auto recv = [](int peer, char* buf, size_t n) { return P2pOp{false, peer, nullptr, buf, n, STRATA_UINT8}; };
  EXPECT_TRUE(landsEarly({recv(1, b.data(), 50000)})) << "a lone receive";
  EXPECT_TRUE(landsEarly({send(1, a.data(), 50000), recv(2, b.data(), 50000)})) << "disjoint buffers";
  EXPECT_TRUE(landsEarly({send(1, a.data(), 40000), recv(2, a.data() + 40000, 20000), send(2, a.data() + 60000, 100)}))
      << "a receive between two sends, touching neither";
  EXPECT_FALSE(landsEarly({send(1, a.data(), 50000), recv(2, a.data(), 50000)})) << "in place";
  EXPECT_FALSE(landsEarly({send(1, a.data(), 50000), recv(2, a.data() + 49999, 100)})) << "the send's last byte";
  EXPECT_FALSE(landsEarly({send(1, a.data() + 1000, 10), send(2, a.data(), 50000), recv(2, a.data() + 20000, 8)}))
      << "inside a send that begins before a shorter one";
  EXPECT_TRUE(landsEarly({send(1, a.data(), 0), recv(2, a.data(), 50000)})) << "an empty send overlaps nothing";
}

}  // namespace
}  // namespace strata
