// Allreduce in real processes over real shared memory: every datatype x op x
// count in {0, 1, 7, 1023, one slot + 1, 4 Mi} x 1..4 ranks, out of place and
// in place, against a reference computed here, with every rank's result
// bitwise equal. The 4 Mi-element case runs sum for every datatype and every
// op for float32, out of place, plus float32 sum in place (the full product
// would dominate the suite's time).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "multiproc.h"
#include "reference.h"

namespace strata::test {
namespace {

constexpr size_t kSlotBytes = 262144;  // STRATA_SLOT_BYTES default
constexpr size_t kBig = size_t(4) << 20;

const strata_datatype_t kTypes[] = {STRATA_INT8,    STRATA_UINT8,    STRATA_INT32,   STRATA_UINT32,
                                    STRATA_INT64,   STRATA_UINT64,   STRATA_FLOAT16, STRATA_BFLOAT16,
                                    STRATA_FLOAT32, STRATA_FLOAT64};
const strata_op_t kOps[] = {STRATA_SUM, STRATA_PROD, STRATA_MIN, STRATA_MAX, STRATA_AVG};

bool isFloat(strata_datatype_t dt) { return dt >= STRATA_FLOAT16; }
bool isSigned(strata_datatype_t dt) {
  return dt == STRATA_INT8 || dt == STRATA_INT32 || dt == STRATA_INT64 || isFloat(dt);
}

// Inputs whose partial results are exact in every datatype: small integers
// (quarters for floats) for sum/min/max/avg, and factors in {-1, 1, 2} (or
// {0.5, 1, 2, -1} for floats; {1, 2, 3} unsigned) for products.
double inputValue(int rank, size_t i, strata_op_t op, strata_datatype_t dt) {
  uint64_t h = (i * 2654435761u + rank * 40503u) >> 3;
  if (op == STRATA_PROD) {
    if (!isSigned(dt)) return static_cast<double>(1 + h % 3);
    static const double kFloat[] = {0.5, 1, 2, -1};
    static const double kInt[] = {1, 2, -1, 1};
    return isFloat(dt) ? kFloat[h % 4] : kInt[h % 4];
  }
  double v = isSigned(dt) ? static_cast<double>(h % 23) - 11 : static_cast<double>(h % 23);
  return isFloat(dt) ? v * 0.25 : v;
}

void store(void* buf, size_t i, double v, strata_datatype_t dt) {
  char* p = static_cast<char*>(buf) + i * strata_datatype_size(dt);
  switch (dt) {
    case STRATA_INT8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case STRATA_UINT8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case STRATA_INT32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case STRATA_UINT32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
    case STRATA_INT64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case STRATA_UINT64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(p, &x, 8); break; }
    case STRATA_FLOAT16: { uint16_t x = doubleToHalf(v); std::memcpy(p, &x, 2); break; }
    case STRATA_BFLOAT16: { uint16_t x = floatToBf16(static_cast<float>(v)); std::memcpy(p, &x, 2); break; }
    case STRATA_FLOAT32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    default: std::memcpy(p, &v, 8); break;
  }
}

template <typename T>
T foldInt(int nranks, size_t i, strata_op_t op, strata_datatype_t dt) {
  T acc = static_cast<T>(inputValue(0, i, op, dt));
  for (int r = 1; r < nranks; ++r) acc = combineInt<T>(acc, static_cast<T>(inputValue(r, i, op, dt)), op);
  if (op == STRATA_AVG) acc = static_cast<T>(acc / static_cast<T>(nranks));
  return acc;
}

// Expected bytes of element i, as the API defines the result.
void expected(void* out, int nranks, size_t i, strata_op_t op, strata_datatype_t dt) {
  switch (dt) {
    case STRATA_INT8: { auto v = foldInt<int8_t>(nranks, i, op, dt); std::memcpy(out, &v, 1); return; }
    case STRATA_UINT8: { auto v = foldInt<uint8_t>(nranks, i, op, dt); std::memcpy(out, &v, 1); return; }
    case STRATA_INT32: { auto v = foldInt<int32_t>(nranks, i, op, dt); std::memcpy(out, &v, 4); return; }
    case STRATA_UINT32: { auto v = foldInt<uint32_t>(nranks, i, op, dt); std::memcpy(out, &v, 4); return; }
    case STRATA_INT64: { auto v = foldInt<int64_t>(nranks, i, op, dt); std::memcpy(out, &v, 8); return; }
    case STRATA_UINT64: { auto v = foldInt<uint64_t>(nranks, i, op, dt); std::memcpy(out, &v, 8); return; }
    default: break;
  }
  double acc = inputValue(0, i, op, dt);
  for (int r = 1; r < nranks; ++r) acc = combineFloat(acc, inputValue(r, i, op, dt), op);  // exact
  if (dt == STRATA_FLOAT64) {
    if (op == STRATA_AVG) acc /= nranks;
    std::memcpy(out, &acc, 8);
    return;
  }
  // float32 and the narrow types compute in float32: the exact sum, then one
  // float32 division for avg, then rounding to the storage type.
  float f = static_cast<float>(acc);
  if (op == STRATA_AVG) f /= static_cast<float>(nranks);
  if (dt == STRATA_FLOAT32) { std::memcpy(out, &f, 4); return; }
  uint16_t h = dt == STRATA_FLOAT16 ? doubleToHalf(static_cast<double>(f)) : floatToBf16(f);
  std::memcpy(out, &h, 2);
}

std::vector<size_t> countsFor(strata_datatype_t dt, strata_op_t op) {
  std::vector<size_t> counts = {0, 1, 7, 1023, kSlotBytes / strata_datatype_size(dt) + 1};
  if (op == STRATA_SUM || dt == STRATA_FLOAT32) counts.push_back(kBig);
  return counts;
}

bool runsInPlace(strata_datatype_t dt, strata_op_t op, size_t count) {
  return count < kBig || (dt == STRATA_FLOAT32 && op == STRATA_SUM);
}

// The whole expected buffer, element by element from the definitions.
void expectedBuffer(std::vector<char>& out, int nranks, size_t count, strata_op_t op, strata_datatype_t dt) {
  const size_t elem = strata_datatype_size(dt);
  out.resize(count * elem);
  for (size_t i = 0; i < count; ++i) expected(out.data() + i * elem, nranks, i, op, dt);
}

void sweep(int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
  strata_comm_t comm;
  if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "strata_comm_init_rank")) return;
  std::vector<char> input, output, want;
  for (auto dt : kTypes)
    for (auto op : kOps)
      for (size_t count : countsFor(dt, op)) {
        expectedBuffer(want, nranks, count, op, dt);
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
          if (count > 0 && std::memcmp(out, want.data(), count * elem) != 0) {
            size_t i = 0;
            while (std::memcmp(out + i * elem, want.data() + i * elem, elem) == 0) ++i;
            rep.fail("%s: element %zu differs from the reference", name.c_str(), i);
          }
          if (!inPlace && static_cast<unsigned char>(output[count * elem]) != 0x5a)
            rep.fail("%s: wrote past the end of recvbuf", name.c_str());
          rep.value(name, hashBytes(out, count * elem));
        }
      }
  rep.ok(strata_comm_destroy(comm), nullptr, "strata_comm_destroy");
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
  // one-shot, and three channels with two progress threads.
  for (const auto& env : std::vector<std::vector<std::pair<std::string, std::string>>>{
           {{"STRATA_ALGO", "ring"}},
           {{"STRATA_ALGO", "oneshot"}},
           {{"STRATA_NCHANNELS", "3"}, {"STRATA_NTHREADS", "2"}, {"STRATA_SLOT_BYTES", "8192"}}}) {
    auto outcomes = runRanks(3, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
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
