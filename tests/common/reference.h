// Independent reference arithmetic for tests: IEEE float16 / bfloat16 codecs
// written from the formats' definitions (not the library's), and the value of
// `a op b` as the public API defines it. Header-only; used by every suite.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "strata/strata.h"

namespace strata::test {

// The value of a binary16 encoding, from the format's definition.
inline double halfToDoubleByDefinition(uint16_t h) {
  int sign = (h >> 15) ? -1 : 1;
  int exp = (h >> 10) & 31;
  int mant = h & 1023;
  if (exp == 31) return mant ? NAN : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(mant, -24);
  return sign * std::ldexp(1024 + mant, exp - 25);
}

// The same, from a table of all 65,536 built once: the sweeps convert
// millions of elements, and ldexp per step of doubleToHalf's search was a
// fifth of their run.
inline double halfToDouble(uint16_t h) {
  static const std::vector<double> table = [] {
    std::vector<double> t(65536);
    for (uint32_t i = 0; i < t.size(); ++i) t[i] = halfToDoubleByDefinition(static_cast<uint16_t>(i));
    return t;
  }();
  return table[h];
}

// Nearest binary16 to v (ties to even) by binary search over the positive
// encodings, which increase monotonically with their value.
inline uint16_t doubleToHalf(double v) {
  if (std::isnan(v)) return 0x7e00;
  uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  double a = std::fabs(v);
  if (a >= 65520.0) return sign | 0x7c00;
  uint16_t lo = 0, hi = 0x7bff;
  while (lo < hi) {
    uint16_t mid = static_cast<uint16_t>((lo + hi + 1) / 2);
    if (halfToDouble(mid) <= a) lo = mid; else hi = static_cast<uint16_t>(mid - 1);
  }
  double below = halfToDouble(lo);
  if (below == a || lo == 0x7bff) return sign | lo;
  double above = halfToDouble(static_cast<uint16_t>(lo + 1));
  if (a - below < above - a) return sign | lo;
  if (a - below > above - a) return sign | static_cast<uint16_t>(lo + 1);
  return sign | ((lo & 1) ? static_cast<uint16_t>(lo + 1) : lo);
}

inline double bf16ToDouble(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  if (std::isnan(f)) return 0x7fc0;
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t lower = u & 0xffff;
  uint32_t upper = u >> 16;
  if (lower > 0x8000 || (lower == 0x8000 && (upper & 1))) ++upper;
  return static_cast<uint16_t>(upper);
}

// a op b for integers: sums and products wrap modulo 2^bits.
template <typename T>
T combineInt(T a, T b, strata_op_t op) {
  using U = std::make_unsigned_t<T>;
  switch (op) {
    case STRATA_SUM: case STRATA_AVG: return static_cast<T>(static_cast<U>(U(a) + U(b)));
    case STRATA_PROD: return static_cast<T>(static_cast<U>(uint64_t(U(a)) * uint64_t(U(b))));
    case STRATA_MIN: return std::min(a, b);
    default: return std::max(a, b);
  }
}

// a op b for floats, exactly (callers round); min/max propagate NaN.
inline double combineFloat(double a, double b, strata_op_t op) {
  if (op == STRATA_MIN || op == STRATA_MAX) {
    if (std::isnan(a) || std::isnan(b)) return NAN;
    return op == STRATA_MIN ? std::min(a, b) : std::max(a, b);
  }
  return op == STRATA_PROD ? a * b : a + b;
}

}  // namespace strata::test
