// Scalar float16 / bfloat16 <-> float32 conversions, round to nearest even.
// Every NaN becomes the canonical quiet NaN (0x7e00, 0x7fc0): NaN payloads are
// the one place where conversion instructions differ between CPUs, and ranks
// must produce the same bits whichever kernel they picked.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::kernels {

constexpr uint16_t kHalfNaN = 0x7e00;
constexpr uint16_t kBf16NaN = 0x7fc0;

inline float bitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

inline uint32_t floatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float halfToFloat(uint16_t h) {
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

inline uint16_t floatToHalf(float f) {
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

inline float bf16ToFloat(uint16_t b) { return bitsToFloat(uint32_t(b) << 16); }

inline uint16_t floatToBf16(float f) {
  const uint32_t u = floatToBits(f);
  if ((u & 0x7fffffff) > 0x7f800000) return kBf16NaN;
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

}  // namespace strata::kernels
