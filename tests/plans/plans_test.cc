// Plans on in-memory connectors: every allreduce algorithm, 1..16 ranks as
// threads, odd counts, several datatypes and ops, against a reference
// computed independently (exact integers, or double for floats whose inputs
// make every partial sum exact).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "allreduce.h"
#include "executor.h"
#include "mem_connector.h"
#include "op_desc.h"

namespace strata {
namespace {

constexpr size_t kSlotBytes = 4096;
constexpr int kSlots = 4;

struct Mesh {
  // links[rank] for channel c: links[c][rank]
  std::vector<std::vector<ChannelLinks>> links;
  std::vector<std::unique_ptr<SendConnector>> sends;
  std::vector<std::unique_ptr<RecvConnector>> recvs;

  Mesh(int n, int channels) : links(channels, std::vector<ChannelLinks>(n)) {
    for (int c = 0; c < channels; ++c) {
      for (int r = 0; r < n; ++r) {
        links[c][r].send.assign(n, nullptr);
        links[c][r].recv.assign(n, nullptr);
      }
      for (int s = 0; s < n; ++s)
        for (int d = 0; d < n; ++d) {
          if (s == d) continue;
          auto fifo = std::make_shared<test::MemFifo>(kSlotBytes, kSlots);
          sends.push_back(std::make_unique<test::MemSend>(fifo));
          recvs.push_back(std::make_unique<test::MemRecv>(fifo));
          links[c][s].send[d] = sends.back().get();
          links[c][d].recv[s] = recvs.back().get();
        }
    }
  }
};

// Runs one allreduce with `algo` on n threads; returns each rank's status.
std::vector<Status> runAllreduce(int n, int channels, AllreduceAlgo algo, strata_datatype_t dt,
                                 strata_op_t op, uint64_t count,
                                 std::vector<std::vector<char>>& inputs,
                                 std::vector<std::vector<char>>& outputs, bool inPlace,
                                 uint64_t descOverride = 0) {
  Mesh mesh(n, channels);
  std::vector<Status> results(n);
  std::vector<std::thread> threads;
  const size_t elem = strata_datatype_size(dt);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      PlanShape shape{r, n, channels, kSlotBytes, elem};
      std::vector<ChannelPlan> plans(channels);
      int used = channels;
      if (algo == AllreduceAlgo::Ring) {
        buildRingAllreduce(shape, count, channels, plans);
      } else {
        buildOneShotAllreduce(shape, count, plans);
        used = 1;
      }
      OpContext ctx;
      ctx.input = inputs[r].data();
      ctx.output = inPlace ? inputs[r].data() : outputs[r].data();
      ctx.datatype = dt;
      ctx.op = op;
      ctx.elemSize = elem;
      ctx.rank = r;
      ctx.nranks = n;
      uint64_t desc = (descOverride && r == 0) ? descOverride : OpDesc{Coll::Allreduce, dt, op, count}.pack();
      ctx.tag = SlotTag{1, desc};
      ctx.reduceFn = reduce::kernel(dt, op, reduce::Isa::Portable);
      ctx.streamingOutput = false;
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

// Inputs: small integers (scaled by 0.25 for floats), exact in every type.
double inputValue(int rank, uint64_t i, strata_op_t op) {
  if (op == STRATA_PROD) return ((rank + i) % 3 == 0) ? 2.0 : ((rank * 7 + i) % 5 == 0 ? -1.0 : 1.0);
  return static_cast<double>(static_cast<int64_t>((rank * 131 + i * 17) % 23) - 11);
}

template <typename T>
void fillAndCheck(int n, int channels, AllreduceAlgo algo, strata_datatype_t dt, strata_op_t op,
                  uint64_t count, bool inPlace) {
  const double scale = std::is_floating_point<T>::value ? 0.25 : 1.0;
  std::vector<std::vector<char>> in(n, std::vector<char>(count * sizeof(T) + 1));
  std::vector<std::vector<char>> out(n, std::vector<char>(count * sizeof(T) + 1, 0x5a));
  for (int r = 0; r < n; ++r)
    for (uint64_t i = 0; i < count; ++i)
      reinterpret_cast<T*>(in[r].data())[i] = static_cast<T>(inputValue(r, i, op) * (op == STRATA_PROD ? 1 : scale));
  auto results = runAllreduce(n, channels, algo, dt, op, count, in, out, inPlace);
  for (int r = 0; r < n; ++r) ASSERT_TRUE(results[r].isOk()) << "rank " << r << ": " << results[r].message();
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
                                              << " n=" << n << " " << algoName(algo);
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
        fillAndCheck<float>(n, channels, AllreduceAlgo::Ring, STRATA_FLOAT32, STRATA_SUM, count, inPlace);
        fillAndCheck<int32_t>(n, channels, AllreduceAlgo::Ring, STRATA_INT32, STRATA_MAX, count, inPlace);
      }
  fillAndCheck<double>(n, 2, AllreduceAlgo::Ring, STRATA_FLOAT64, STRATA_AVG, 5000, false);
  fillAndCheck<int64_t>(n, 2, AllreduceAlgo::Ring, STRATA_INT64, STRATA_PROD, 3001, true);
  fillAndCheck<int32_t>(n, 1, AllreduceAlgo::Ring, STRATA_INT32, STRATA_AVG, 999, false);
}

TEST_P(RingPlans, OneShotMatchesReference) {
  const int n = GetParam();
  for (uint64_t count : {1, 8, 9, 1000})
    for (bool inPlace : {false, true}) {
      fillAndCheck<float>(n, 1, AllreduceAlgo::OneShot, STRATA_FLOAT32, STRATA_SUM, count, inPlace);
      fillAndCheck<int32_t>(n, 1, AllreduceAlgo::OneShot, STRATA_INT32, STRATA_MIN, count, inPlace);
      fillAndCheck<double>(n, 1, AllreduceAlgo::OneShot, STRATA_FLOAT64, STRATA_AVG, count, inPlace);
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
        buildRingAllreduce(PlanShape{r, n, 2, kSlotBytes, 4}, count, 2, plans);
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
  auto results = runAllreduce(n, 1, AllreduceAlgo::OneShot, STRATA_FLOAT32, STRATA_SUM, 100, in, out, false, wrong);
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

TEST(Plans, SelectionFollowsSizeAndOverrides) {
  PlanShape shape{0, 4, 2, 262144, 4};
  AllreduceChoice c;
  ASSERT_TRUE(chooseAllreduce(shape, 2, {ForcedAlgo::None, 16384}, &c).isOk());
  EXPECT_EQ(c.algo, AllreduceAlgo::OneShot);
  ASSERT_TRUE(chooseAllreduce(shape, 1 << 20, {ForcedAlgo::None, 16384}, &c).isOk());
  EXPECT_EQ(c.algo, AllreduceAlgo::Ring);
  EXPECT_EQ(c.nchannels, 2);
  ASSERT_TRUE(chooseAllreduce(shape, 2, {ForcedAlgo::Ring, 16384}, &c).isOk());
  EXPECT_EQ(c.algo, AllreduceAlgo::Ring);
  EXPECT_EQ(c.nchannels, 1);
  EXPECT_EQ(chooseAllreduce(shape, 1 << 20, {ForcedAlgo::OneShot, 16384}, &c).code(), STRATA_ERR_INVALID_USAGE);
  ForcedAlgo forced;
  EXPECT_EQ(parseForcedAlgo("bogus", &forced).code(), STRATA_ERR_INVALID_ARGUMENT);
  ASSERT_TRUE(parseForcedAlgo("oneshot", &forced).isOk());
  EXPECT_EQ(forced, ForcedAlgo::OneShot);
}

}  // namespace
}  // namespace strata
