// Test inputs and the results the public API defines for them: inputs whose
// partial results are exact in every datatype, so any order of reduction
// gives the same bits, and expected values folded here in double (exact) or
// exact integer arithmetic. Shared by the multi-process suites.
#pragma once

#include <cstring>
#include <vector>

#include "reference.h"

namespace strata::test {

inline const strata_datatype_t kTypes[] = {STRATA_INT8,    STRATA_UINT8,    STRATA_INT32,   STRATA_UINT32,
                                    STRATA_INT64,   STRATA_UINT64,   STRATA_FLOAT16, STRATA_BFLOAT16,
                                    STRATA_FLOAT32, STRATA_FLOAT64};
inline const strata_op_t kOps[] = {STRATA_SUM, STRATA_PROD, STRATA_MIN, STRATA_MAX, STRATA_AVG};

inline bool isFloat(strata_datatype_t dt) { return dt >= STRATA_FLOAT16; }
inline bool isSigned(strata_datatype_t dt) {
  return dt == STRATA_INT8 || dt == STRATA_INT32 || dt == STRATA_INT64 || isFloat(dt);
}

// Inputs whose partial results are exact in every datatype: small integers
// (quarters for floats) for sum/min/max/avg, and factors in {-1, 1, 2} (or
// {0.5, 1, 2, -1} for floats; {1, 2, 3} unsigned) for products.
inline double inputValue(int rank, size_t i, strata_op_t op, strata_datatype_t dt) {
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

inline void store(void* buf, size_t i, double v, strata_datatype_t dt) {
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
inline T foldInt(int nranks, size_t i, strata_op_t op, strata_datatype_t dt) {
  T acc = static_cast<T>(inputValue(0, i, op, dt));
  for (int r = 1; r < nranks; ++r) acc = combineInt<T>(acc, static_cast<T>(inputValue(r, i, op, dt)), op);
  if (op == STRATA_AVG) acc = static_cast<T>(acc / static_cast<T>(nranks));
  return acc;
}

// Expected bytes of element i of op over every rank's input, as the API defines it.
inline void expected(void* out, int nranks, size_t i, strata_op_t op, strata_datatype_t dt) {
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

// Expected elements [first, last) of the result, element by element from
// the definitions; out[0] holds element `first`.
inline void expectedRange(std::vector<char>& out, int nranks, size_t first, size_t last, strata_op_t op,
                          strata_datatype_t dt) {
  const size_t elem = strata_datatype_size(dt);
  out.resize((last - first) * elem);
  for (size_t i = first; i < last; ++i) expected(out.data() + (i - first) * elem, nranks, i, op, dt);
}

// The whole expected buffer.
inline void expectedBuffer(std::vector<char>& out, int nranks, size_t count, strata_op_t op,
                           strata_datatype_t dt) {
  expectedRange(out, nranks, 0, count, op, dt);
}

}  // namespace strata::test
