// The arithmetic of one element, written once for every kernel: the host's
// (kernels_impl.h, compiled per instruction set) and the GPU's
// (device_kernels.cu, where these are __host__ __device__). The host suite
// runs these very functions against the host kernels bit for bit, so a
// device result can differ from a host one only if the compiler does: both
// builds forbid FMA contraction (-ffp-contract=off, nvcc --fmad=false).
//
// float16 / bfloat16 are computed in float32 and rounded to nearest even.
// Every NaN result is the canonical quiet NaN (0x7e00, 0x7fc0, 0x7fc00000,
// 0x7ff8000000000000): CPUs carry an input's payload through arithmetic and
// GPUs make their own, conversion instructions differ between CPUs, and ranks
// must produce the same bits whichever kernel, or device, they ran on.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "strata/strata.h"

// static: each instruction set's translation unit keeps its own copy, so the
// linker never hands the portable kernels a copy compiled for AVX-512.
#if defined(__CUDACC__)
#define STRATA_HD static __host__ __device__ __forceinline__
#else
#define STRATA_HD static inline
#endif

namespace strata::kernels {

constexpr uint16_t kHalfNaN = 0x7e00;
constexpr uint16_t kBf16NaN = 0x7fc0;

STRATA_HD float bitsToFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

STRATA_HD uint32_t floatToBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

STRATA_HD double bitsToDouble(uint64_t u) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(u));
#else
  double d;
  std::memcpy(&d, &u, sizeof(d));
  return d;
#endif
}

template <typename T>
STRATA_HD T canonicalNaN() {
  if constexpr (sizeof(T) == 4) return bitsToFloat(0x7fc00000u);
  else return bitsToDouble(0x7ff8000000000000ull);
}

// v, or the canonical NaN if v is one.
template <typename T>
STRATA_HD T canonical(T v) {
  return v != v ? canonicalNaN<T>() : v;
}

STRATA_HD float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return bitsToFloat(sign | 0x7f800000 | (mant << 13));  // inf / NaN
  if (exp != 0) return bitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bitsToFloat(sign);
  // Subnormal: normalise the mantissa.
  int e = -1;
  do {
    ++e;
    mant <<= 1;
  } while (!(mant & 0x400));
  return bitsToFloat(sign | uint32_t(112 - e) << 23 | ((mant & 0x3ff) << 13));
}

STRATA_HD uint16_t floatToHalf(float f) {
  const uint32_t u = floatToBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t absBits = u & 0x7fffffff;
  if (absBits > 0x7f800000) return kHalfNaN;
  if (absBits >= 0x477ff000) return sign | 0x7c00;  // rounds to >= 65520: infinity
  if (absBits >= 0x38800000) {                      // normal half
    uint32_t v = absBits - (112u << 23);
    v += 0xfff + ((v >> 13) & 1);
    return sign | static_cast<uint16_t>(v >> 13);
  }
  if (absBits < 0x33000000) return sign;  // below half the smallest subnormal
  // Subnormal half: shift the full mantissa down, rounding to nearest even.
  const uint32_t exp = absBits >> 23;
  const uint32_t mant = (absBits & 0x7fffff) | 0x800000;
  const uint32_t shift = 126 - exp;  // 14..24
  uint32_t v = mant >> shift;
  const uint32_t rest = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  if (rest > half || (rest == half && (v & 1))) ++v;
  return sign | static_cast<uint16_t>(v);
}

STRATA_HD float bf16ToFloat(uint16_t b) { return bitsToFloat(uint32_t(b) << 16); }

STRATA_HD uint16_t floatToBf16(float f) {
  const uint32_t u = floatToBits(f);
  if ((u & 0x7fffffff) > 0x7f800000) return kBf16NaN;
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

// a op b. Integer sums and products wrap (computed unsigned: defined);
// float min/max give NaN if either input is one; written branch-free so that
// the host loops vectorise.
template <typename T, strata_op_t Op>
STRATA_HD T combine(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    if constexpr (Op == STRATA_SUM || Op == STRATA_AVG) return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    else if constexpr (Op == STRATA_PROD) return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
    else if constexpr (Op == STRATA_MIN) return b < a ? b : a;
    else return a < b ? b : a;
  } else {
    if constexpr (Op == STRATA_SUM || Op == STRATA_AVG) return canonical(a + b);
    else if constexpr (Op == STRATA_PROD) return canonical(a * b);
    else if constexpr (Op == STRATA_MIN) return (a != a || b != b) ? canonicalNaN<T>() : (b < a ? b : a);
    else return (a != a || b != b) ? canonicalNaN<T>() : (a < b ? b : a);
  }
}

// The 16-bit float types: widen, combine in float32, round once.
template <bool Bf16, strata_op_t Op>
STRATA_HD uint16_t combineNarrow(uint16_t a, uint16_t b) {
  if constexpr (Bf16) return floatToBf16(combine<float, Op>(bf16ToFloat(a), bf16ToFloat(b)));
  else return floatToHalf(combine<float, Op>(halfToFloat(a), halfToFloat(b)));
}

// The average's one division (integers truncate toward zero; floats divide
// in their computation precision and round once).
template <typename T>
STRATA_HD T divide(T v, int divisor) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(v / static_cast<T>(divisor));
  else return canonical(v / static_cast<T>(divisor));
}
template <bool Bf16>
STRATA_HD uint16_t divideNarrow(uint16_t v, int divisor) {
  if constexpr (Bf16) return floatToBf16(bf16ToFloat(v) / static_cast<float>(divisor));
  else return floatToHalf(halfToFloat(v) / static_cast<float>(divisor));
}

// The pre-multiplied sum's scaling (integers wrap).
template <typename T>
STRATA_HD T multiply(T v, T by) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(static_cast<U>(v) * static_cast<U>(by)));
  } else {
    return canonical(v * by);
  }
}
template <bool Bf16>
STRATA_HD uint16_t multiplyNarrow(uint16_t v, uint16_t by) {
  if constexpr (Bf16) return floatToBf16(bf16ToFloat(v) * bf16ToFloat(by));
  else return floatToHalf(halfToFloat(v) * halfToFloat(by));
}

}  // namespace strata::kernels
