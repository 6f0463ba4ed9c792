// Allreduce in real processes over real shared memory: every datatype x op x
// count in {0, 1, 7, 1023, one slot + 1, 4 Mi} x 1..4 ranks, out of place and
// in place, against a reference computed here, with every rank's result
// bitwise equal. The 4 Mi-element case runs sum for every datatype and every
// op for float32, out of place, plus float32 sum in place (the full product
// would dominate the suite's time). Run again over another transport
// (STRATA_TRANSPORT, tests/core/meson.build), it runs float32 and float64
// sum alone: a transport moves bytes whatever they hold, the product at that
// size is the folds' (the default run's), and it took 85% of the run.
// Every rank checks its own share of each result against the reference and
// hashes the whole of it; equal hashes on every rank then cover the rest
// (the reference, computed in full by every rank, was most of the run).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "multiproc.h"
#include "values.h"

namespace strata::test {
namespace {

constexpr size_t kSlotBytes = 262144;  // STRATA_SLOT_BYTES default
constexpr size_t kBig = size_t(4) << 20;

bool forcedTransport() {
  const char* t = getenv("STRATA_TRANSPORT");
  return t != nullptr && *t != '\0' && std::string(t) != "shm";
}

std::vector<size_t> countsFor(strata_datatype_t dt, strata_op_t op) {
  std::vector<size_t> counts = {0, 1, 7, 1023, kSlotBytes / strata_datatype_size(dt) + 1};
  const bool big = forcedTransport() ? op == STRATA_SUM && (dt == STRATA_FLOAT32 || dt == STRATA_FLOAT64)
                                     : op == STRATA_SUM || dt == STRATA_FLOAT32;
  if (big) counts.push_back(kBig);
  return counts;
}

bool runsInPlace(strata_datatype_t dt, strata_op_t op, size_t count) {
  return count < kBig || (dt == STRATA_FLOAT32 && op == STRATA_SUM);
}

// The elements [first, last) this rank checks: all of a small result, its
// 1/nranks share of a large one.
std::pair<size_t, size_t> checkedShare(int rank, int nranks, size_t count) {
  if (count < 65536) return {0, count};
  return {count * rank / nranks, count * (rank + 1) / nranks};
}

void sweep(int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
  strata_comm_t comm;
  if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "strata_comm_init_rank")) return;
  std::vector<char> input, output, want;
  for (auto dt : kTypes)
    for (auto op : kOps)
      for (size_t count : countsFor(dt, op)) {
        const auto [first, last] = checkedShare(rank, nranks, count);
        expectedRange(want, nranks, first, last, op, dt);
        for (bool inPlace : {false, true}) {
          if (inPlace && !runsInPlace(dt, op, count)) continue;
          const size_t elem = strata_datatype_size(dt);
          input.assign(count * elem + 8, 0);
          output.assign(count * elem + 8, 0x5a);
          for (size_t i = 0; i < count; ++i) store(input.data(), i, inputValue(rank, i, op, dt), dt);
          char* out = inPlace ? input.data() : output.data();
          std::string name = "dt" + std::to_string(dt) + "-op" + std::to_string(op) + "-n" +
                             std::to_string(count) + (inPlace ? "-inplace" : "");
          if (!rep.ok(strata_allreduce(input.data(), out, count, dt, op, comm), comm, name.c_str())) return;
          const char* mine = out + first * elem;
          if (last > first && std::memcmp(mine, want.data(), (last - first) * elem) != 0) {
            size_t i = 0;
            while (std::memcmp(mine + i * elem, want.data() + i * elem, elem) == 0) ++i;
            rep.fail("%s: element %zu differs from the reference", name.c_str(), first + i);
          }
          if (!inPlace && static_cast<unsigned char>(output[count * elem]) != 0x5a)
            rep.fail("%s: wrote past the end of recvbuf", name.c_str());
          rep.value(name, hashBytes(out, count * elem));
        }
      }
  rep.ok(strata_comm_destroy(comm), nullptr, "strata_comm_destroy");
}

// The same count again with another op, another datatype of the same width,
// in place, after a barrier: a repeated allreduce reuses its plan and
// context, and none of these may run with the previous call's.
TEST(Allreduce, RepeatedCountWithAnotherOpOrTypeUsesItsOwn) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    const size_t count = 1000;
    const struct {
      strata_datatype_t dt;
      strata_op_t op;
      bool inPlace;
      bool barrierFirst;
    } calls[] = {{STRATA_FLOAT32, STRATA_SUM, false, false}, {STRATA_FLOAT32, STRATA_MAX, false, false},
                 {STRATA_INT32, STRATA_MAX, false, false},   {STRATA_INT32, STRATA_MAX, true, false},
                 {STRATA_INT32, STRATA_MIN, true, true},     {STRATA_FLOAT32, STRATA_SUM, false, false}};
    std::vector<char> input, output, want;
    for (const auto& c : calls) {
      if (c.barrierFirst && !rep.ok(strata_barrier(comm), comm, "barrier")) return;
      expectedBuffer(want, nranks, count, c.op, c.dt);
      input.assign(count * 4, 0);
      output.assign(count * 4, 0);
      for (size_t i = 0; i < count; ++i) store(input.data(), i, inputValue(rank, i, c.op, c.dt), c.dt);
      char* out = c.inPlace ? input.data() : output.data();
      if (!rep.ok(strata_allreduce(input.data(), out, count, c.dt, c.op, comm), comm, "allreduce")) return;
      if (std::memcmp(out, want.data(), count * 4) != 0)
        rep.fail("datatype %d op %d%s: differs from the reference", c.dt, c.op, c.inPlace ? " in place" : "");
    }
    strata_comm_destroy(comm);
  });
  expectAllPassed(outcomes);
}

class AllreduceSweep : public ::testing::TestWithParam<int> {};

TEST_P(AllreduceSweep, EveryTypeOpAndCountMatchesReferenceOnEveryRank) {
  const int nranks = GetParam();
  auto outcomes = runRanks(nranks, 240, sweep, {{"STRATA_TIMEOUT", "30"}});
  expectAllPassed(outcomes);
  expectValuesAgree(outcomes);
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllreduceSweep, ::testing::Values(1, 2, 3, 4));

TEST(Allreduce, ForcedAlgorithmsAndChannelsAgree) {
  // The same sums through the ring (forced even for small sizes), the
  // one-shot, three channels with two progress threads, and with
  // non-temporal stores from 4 KiB on: outputs, and shared-memory slots
  // (each size is run three times: the third run of a kind fills its slots
  // with non-temporal stores, see transports/shm/shm_slot_stores.h), by the
  // default algorithm and the ring.
  for (const auto& env : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {{"STRATA_ALGO", "ring"}},
           {{"STRATA_ALGO", "oneshot"}},
           {{"STRATA_NT_BYTES", "4096"}, {"STRATA_SHM_NT_BYTES", "4096"}},
           {{"STRATA_NT_BYTES", "4096"}, {"STRATA_SHM_NT_BYTES", "4096"}, {"STRATA_ALGO", "ring"}},
           {{"STRATA_NCHANNELS", "3"}, {"STRATA_NTHREADS", "2"}, {"STRATA_SLOT_BYTES", "8192"}}}) {
    auto outcomes = runRanks(3, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
      for (int round = 0; round < 3; ++round)
      for (size_t count : {size_t(1), size_t(5), size_t(3000), size_t(100001)}) {
        if (count > 2048 && getenv("STRATA_ALGO") && std::string(getenv("STRATA_ALGO")) == "oneshot") continue;
        std::vector<float> buf(count);
        for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(inputValue(rank, i, STRATA_SUM, STRATA_FLOAT32));
        if (!rep.ok(strata_allreduce(buf.data(), buf.data(), count, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce")) return;
        char want[4];
        for (size_t i = 0; i < count; ++i) {
          expected(want, nranks, i, STRATA_SUM, STRATA_FLOAT32);
          if (std::memcmp(&buf[i], want, 4) != 0) { rep.fail("count %zu element %zu wrong", count, i); break; }
        }
        rep.value("n" + std::to_string(count), hashBytes(buf.data(), count * 4));
      }
      strata_comm_destroy(comm);
    }, env);
    expectAllPassed(outcomes);
    expectValuesAgree(outcomes);
  }
}

}  // namespace
}  // namespace strata::test
