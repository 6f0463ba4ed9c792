// Reproducible mode (STRATA_REPRODUCIBLE=1) across real processes: the same
// inputs give the same bits from allreduce, reduce and reduce_scatter
// whatever the algorithm, channel count, slot size and transport, and for a
// buffer reduced whole or in two calls; a float32 allreduce equals the
// rank-order fold computed here, bit for bit. Inputs make order matter:
// magnitudes from 1e-4 to 1e4, signed zeros, NaNs with a payload per rank
// (results carry the canonical NaN).
// The same inputs without the mode do differ between algorithms somewhere,
// so the comparison can fail.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "multiproc.h"
#include "strata/strata.h"

namespace strata::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

constexpr size_t kCount = 50000;  // many 4 KiB slots, and more than one 64 KiB one

float valueOf(int rank, size_t i) {
  if (i % 97 == 5) return (rank % 2) ? -0.0f : 0.0f;
  if (i % 211 == 7) {  // a quiet NaN whose payload names the rank
    uint32_t bits = 0x7fc00000u | static_cast<uint32_t>(rank + 1);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  return static_cast<float>(std::sin(double(rank * 7919 + i)) * std::pow(10.0, double(i % 9) - 4));
}

// strata's NaN results are the canonical quiet NaN (element_ops.h), whatever
// payloads the inputs carried.
float canonical(float v) {
  if (v == v) return v;
  const uint32_t bits = 0x7fc00000u;
  std::memcpy(&v, &bits, 4);
  return v;
}

// Half-precision bits of valueOf, rounded towards zero (any fixed mapping does).
uint16_t halfOf(int rank, size_t i) {
  uint32_t f;
  const float v = valueOf(rank, i);
  std::memcpy(&f, &v, 4);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const int exp = static_cast<int>((f >> 23) & 0xff) - 127 + 15;
  if (exp >= 31) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN stays NaN
  if (exp <= 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (exp << 10) | ((f >> 13) & 0x3ffu));
}

// Each rank's results as hashes; float32 allreduce also against the fold.
void body(int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
  strata_comm_t comm = nullptr;
  if (!r.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
  int reproducible = -1;
  if (r.ok(strata_comm_is_reproducible(comm, &reproducible), comm, "strata_comm_is_reproducible"))
    r.value("is_reproducible", static_cast<uint64_t>(reproducible));

  std::vector<float> in(kCount), out(kCount), halves(kCount);
  for (size_t i = 0; i < kCount; ++i) in[i] = valueOf(rank, i);
  if (r.ok(strata_allreduce(in.data(), out.data(), kCount, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce")) {
    r.value("allreduce f32 sum", hashBytes(out.data(), kCount * 4));
    // The rank-order fold, in float, here.
    for (size_t i = 0; i < kCount && reproducible == 1; ++i) {
      float want = valueOf(0, i);
      for (int p = 1; p < nranks; ++p) want = canonical(want + valueOf(p, i));
      if (std::memcmp(&want, &out[i], 4) != 0) {
        r.fail("element %zu: %.9g, the rank-order fold gives %.9g", i, out[i], want);
        break;
      }
    }
  }
  // The same buffer in two calls, cut off the slot grid.
  const size_t cut = 12345;
  if (r.ok(strata_allreduce(in.data(), halves.data(), cut, STRATA_FLOAT32, STRATA_SUM, comm), comm, "first part") &&
      r.ok(strata_allreduce(in.data() + cut, halves.data() + cut, kCount - cut, STRATA_FLOAT32, STRATA_SUM, comm),
           comm, "second part"))
    r.value("allreduce f32 sum in two calls", hashBytes(halves.data(), kCount * 4));

  std::vector<uint16_t> h(kCount), hout(kCount);
  for (size_t i = 0; i < kCount; ++i) h[i] = halfOf(rank, i);
  if (r.ok(strata_allreduce(h.data(), hout.data(), kCount, STRATA_FLOAT16, STRATA_SUM, comm), comm, "f16"))
    r.value("allreduce f16 sum", hashBytes(hout.data(), kCount * 2));
  if (r.ok(strata_allreduce(h.data(), hout.data(), kCount, STRATA_BFLOAT16, STRATA_AVG, comm), comm, "bf16 avg"))
    r.value("allreduce bf16 avg", hashBytes(hout.data(), kCount * 2));

  std::vector<double> d(3001), dout(3001);
  for (size_t i = 0; i < d.size(); ++i) d[i] = valueOf(rank, i) * 1e-3 + valueOf(rank + 1, i);
  if (r.ok(strata_allreduce(d.data(), dout.data(), d.size(), STRATA_FLOAT64, STRATA_AVG, comm), comm, "f64 avg"))
    r.value("allreduce f64 avg", hashBytes(dout.data(), d.size() * 8));

  const size_t block = kCount / nranks;
  std::vector<float> rs(block);
  if (r.ok(strata_reduce_scatter(in.data(), rs.data(), block, STRATA_FLOAT32, STRATA_SUM, comm), comm,
           "reduce_scatter"))
    r.value("reduce_scatter f32 block " + std::to_string(rank), hashBytes(rs.data(), block * 4));
  const int root = nranks - 1;
  if (r.ok(strata_reduce(in.data(), out.data(), kCount, STRATA_FLOAT32, STRATA_SUM, root, comm), comm, "reduce") &&
      rank == root)
    r.value("reduce f32 at root", hashBytes(out.data(), kCount * 4));
  strata_comm_destroy(comm);
}

// One run: every rank's values, checked to agree across ranks, merged.
std::map<std::string, uint64_t> runWith(int nranks, const Env& env) {
  auto outcomes = runRanks(nranks, 120, body, env);
  expectAllPassed(outcomes);
  std::map<std::string, uint64_t> merged;
  for (const RankOutcome& o : outcomes)
    for (const auto& [name, v] : o.values) {
      if (name.rfind("reduce_scatter", 0) != 0 && name != "reduce f32 at root" && merged.count(name)) {
        EXPECT_EQ(merged[name], v) << name << " differs between ranks";
      }
      merged[name] = v;
    }
  return merged;
}

std::string describe(const Env& env) {
  std::string out;
  for (const auto& [k, v] : env) out += k + "=" + v + " ";
  return out;
}

TEST(Reproducible, SameBitsWhateverTheAlgorithmChannelsSlotsAndTransport) {
  const std::vector<Env> modes = {
      {{"STRATA_REPRODUCIBLE", "1"}},
      {{"STRATA_REPRODUCIBLE", "1"}, {"STRATA_ALGO", "ordered"}, {"STRATA_NCHANNELS", "4"},
       {"STRATA_SLOT_BYTES", "4096"}, {"STRATA_NSLOTS", "2"}},
      {{"STRATA_REPRODUCIBLE", "1"}, {"STRATA_TRANSPORT", "tcp"}, {"STRATA_NCHANNELS", "2"},
       {"STRATA_SLOT_BYTES", "16384"}, {"STRATA_ONESHOT_BYTES", "0"}},
  };
  for (int nranks : {1, 2, 3, 4, 8}) {
    std::map<std::string, uint64_t> first;
    for (size_t m = 0; m < modes.size(); ++m) {
      if (nranks == 8 && m == 2) continue;  // 8 ranks on tcp: slow on two cores, and shm's runs cover 8
      auto got = runWith(nranks, modes[m]);
      EXPECT_EQ(got["is_reproducible"], 1u) << describe(modes[m]);
      EXPECT_EQ(got["allreduce f32 sum"], got["allreduce f32 sum in two calls"])
          << nranks << " ranks, " << describe(modes[m]) << ": a buffer reduced in two calls differs";
      if (m == 0) {
        first = got;
        continue;
      }
      for (const auto& [name, v] : first)
        EXPECT_EQ(got[name], v) << nranks << " ranks: " << name << " with " << describe(modes[m])
                                << "differs from " << describe(modes[0]);
    }
  }
}

// Without the mode, the algorithms' own orders show: the inputs are ones
// where order matters, so the comparison above means something.
TEST(Reproducible, WithoutTheModeAlgorithmsDiffer) {
  for (int nranks : {3, 4}) {
    std::map<std::string, uint64_t> reproducible = runWith(nranks, {{"STRATA_REPRODUCIBLE", "1"}});
    int differing = 0;
    for (const char* algo : {"ring", "tree", "rd"}) {
      auto got = runWith(nranks, {{"STRATA_ALGO", algo}});
      EXPECT_EQ(got["is_reproducible"], 0u);
      if (got["allreduce f32 sum"] != reproducible["allreduce f32 sum"]) ++differing;
    }
    EXPECT_GT(differing, 0) << nranks << " ranks: ring, tree and rd all gave the rank-order fold's bits";
  }
}

TEST(Reproducible, AForcedAlgorithmOfAnotherOrderFailsTheInit) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
    strata_comm_t comm = nullptr;
    const strata_result_t rc = strata_comm_init_rank(&comm, nranks, id, rank);
    if (rc != STRATA_ERR_INVALID_ARGUMENT) {
      r.fail("init with STRATA_ALGO=ring STRATA_REPRODUCIBLE=1 returned %s", strata_result_string(rc));
    } else if (!std::strstr(strata_last_error(), "STRATA_ALGO=ring")) {
      r.fail("the error does not name STRATA_ALGO=ring: %s", strata_last_error());
    }
    if (comm) strata_comm_destroy(comm);
  }, {{"STRATA_REPRODUCIBLE", "1"}, {"STRATA_ALGO", "ring"}});
  expectAllPassed(outcomes);
}

TEST(Reproducible, ConfigFieldTurnsTheModeOnAndOffAndIsChecked) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& r) {
    strata_config_t config = STRATA_CONFIG_INITIALIZER;
    config.reproducible = 2;
    strata_comm_t comm = nullptr;
    if (strata_comm_init_rank_config(&comm, nranks, id, rank, &config) != STRATA_ERR_INVALID_ARGUMENT ||
        !std::strstr(strata_last_error(), "config->reproducible"))
      r.fail("config.reproducible=2 was not refused by name: %s", strata_last_error());
    config.reproducible = 1;
    if (!r.ok(strata_comm_init_rank_config(&comm, nranks, id, rank, &config), nullptr, "init, reproducible")) return;
    int on = -1;
    strata_comm_t dup = nullptr;
    if (r.ok(strata_comm_dup(comm, &dup), comm, "dup") && r.ok(strata_comm_is_reproducible(dup, &on), dup, "query") &&
        on != 1)
      r.fail("a dup of a reproducible communicator says %d", on);
    if (strata_comm_is_reproducible(comm, nullptr) != STRATA_ERR_INVALID_ARGUMENT)
      r.fail("a NULL output pointer was not refused");
    if (dup) strata_comm_destroy(dup);
    strata_comm_destroy(comm);
  }, {{"STRATA_REPRODUCIBLE", "0"}});
  expectAllPassed(outcomes);
}

}  // namespace
}  // namespace strata::test
