// Reduction kernels against a reference written here from the definitions:
// exact wrapped integer arithmetic, double for floats, and an IEEE
// float16/bfloat16 codec of its own (not the library's element_ops.h). Also: every
// instruction set this CPU supports gives the same bits, in place or not, at any alignment and tail length.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels.h"
#include "reference.h"

namespace strata::kernels {
namespace {

using test::bf16ToDouble;
using test::combineFloat;
using test::combineInt;
using test::doubleToHalf;
using test::floatToBf16;
using test::halfToDouble;

const strata_datatype_t kTypes[] = {STRATA_INT8,    STRATA_UINT8,    STRATA_INT32,   STRATA_UINT32,
                                    STRATA_INT64,   STRATA_UINT64,   STRATA_FLOAT16, STRATA_BFLOAT16,
                                    STRATA_FLOAT32, STRATA_FLOAT64};
const strata_op_t kOps[] = {STRATA_SUM, STRATA_PROD, STRATA_MIN, STRATA_MAX, STRATA_AVG};
const size_t kCounts[] = {0, 1, 7, 31, 33, 1023, 4097, 100003};

size_t sizeOf(strata_datatype_t dt) { return strata_datatype_size(dt); }

// Random inputs with specials sprinkled in for floats.
void fill(std::vector<uint8_t>& buf, strata_datatype_t dt, size_t count, std::mt19937_64& rng) {
  buf.resize(count * sizeOf(dt) + 64);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t i = 0; i < count; ++i) {
    uint64_t r = rng();
    void* p = buf.data() + i * sizeOf(dt);
    bool special = (r % 97) == 0;
    double v = static_cast<double>(static_cast<int64_t>(r % 2001) - 1000) / 8.0;
    if (special) v = (r >> 8) % 3 == 0 ? NAN : ((r >> 8) % 3 == 1 ? INFINITY : -0.0);
    switch (dt) {
      case STRATA_FLOAT32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
      case STRATA_FLOAT64: std::memcpy(p, &v, 8); break;
      case STRATA_FLOAT16: { uint16_t h = doubleToHalf(v); std::memcpy(p, &h, 2); break; }
      case STRATA_BFLOAT16: { uint16_t h = floatToBf16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
      default: break;  // integers keep their random bits
    }
  }
}

// Expected bytes of a[i] op b[i].
void reference(uint8_t* out, const uint8_t* a, const uint8_t* b, size_t i, strata_datatype_t dt, strata_op_t op) {
  const size_t s = sizeOf(dt);
  auto intCase = [&](auto tag) {
    using T = decltype(tag);
    T x, y;
    std::memcpy(&x, a + i * s, s);
    std::memcpy(&y, b + i * s, s);
    T r = combineInt<T>(x, y, op);
    std::memcpy(out, &r, s);
  };
  switch (dt) {
    case STRATA_INT8: return intCase(int8_t());
    case STRATA_UINT8: return intCase(uint8_t());
    case STRATA_INT32: return intCase(int32_t());
    case STRATA_UINT32: return intCase(uint32_t());
    case STRATA_INT64: return intCase(int64_t());
    case STRATA_UINT64: return intCase(uint64_t());
    case STRATA_FLOAT32: {
      float x, y;
      std::memcpy(&x, a + i * 4, 4);
      std::memcpy(&y, b + i * 4, 4);
      float r = static_cast<float>(combineFloat(x, y, op));  // exact sum/product rounded once
      if (std::isnan(r)) { std::memset(out, 0xff, 4); return; }  // any NaN: checked separately
      std::memcpy(out, &r, 4);
      return;
    }
    case STRATA_FLOAT64: {
      double x, y;
      std::memcpy(&x, a + i * 8, 8);
      std::memcpy(&y, b + i * 8, 8);
      double r = combineFloat(x, y, op);
      if (std::isnan(r)) { std::memset(out, 0xff, 8); return; }
      std::memcpy(out, &r, 8);
      return;
    }
    default: {
      uint16_t x, y;
      std::memcpy(&x, a + i * 2, 2);
      std::memcpy(&y, b + i * 2, 2);
      bool bf = dt == STRATA_BFLOAT16;
      double dx = bf ? bf16ToDouble(x) : halfToDouble(x);
      double dy = bf ? bf16ToDouble(y) : halfToDouble(y);
      // float32 computation: sums/products of two narrow values are exact in
      // double, then rounded to float32 and on to the narrow type.
      float f = static_cast<float>(combineFloat(dx, dy, op));
      uint16_t r = bf ? floatToBf16(f) : doubleToHalf(static_cast<double>(f));
      std::memcpy(out, &r, 2);
    }
  }
}

bool isNaNBits(const uint8_t* p, strata_datatype_t dt) {
  switch (dt) {
    case STRATA_FLOAT32: { float f; std::memcpy(&f, p, 4); return std::isnan(f); }
    case STRATA_FLOAT64: { double d; std::memcpy(&d, p, 8); return std::isnan(d); }
    default: return false;
  }
}

std::vector<Isa> supportedIsas() {
  std::vector<Isa> out;
  for (Isa i : {Isa::Portable, Isa::Avx2, Isa::Avx512})
    if (isSupported(i)) out.push_back(i);
  return out;
}

TEST(Kernels, EveryTypeOpIsaAndLengthMatchesReference) {
  std::mt19937_64 rng(12345);
  std::vector<uint8_t> a, b, got, want(8);
  for (auto dt : kTypes)
    for (auto op : kOps)
      for (size_t count : kCounts) {
        fill(a, dt, count, rng);
        fill(b, dt, count, rng);
        const size_t s = sizeOf(dt);
        for (Isa isa : supportedIsas())
          for (size_t misalign : {size_t(0), s == 1 ? size_t(3) : s}) {
              got.assign(count * s + 64, 0xcd);
              kernel(dt, op, isa)(got.data() + misalign, a.data(), b.data(), count);
              for (size_t i = 0; i < count; ++i) {
                reference(want.data(), a.data(), b.data(), i, dt, op);
                const uint8_t* g = got.data() + misalign + i * s;
                bool nanExpected = std::all_of(want.begin(), want.begin() + s, [](uint8_t x) { return x == 0xff; }) &&
                                   (dt == STRATA_FLOAT32 || dt == STRATA_FLOAT64);
                if (nanExpected) {
                  ASSERT_TRUE(isNaNBits(g, dt)) << "dt=" << dt << " op=" << op << " i=" << i;
                } else {
                  ASSERT_EQ(std::memcmp(g, want.data(), s), 0)
                      << "dt=" << dt << " op=" << op << " isa=" << isaName(isa)
                      << " count=" << count << " i=" << i;
                }
              }
              ASSERT_EQ(got[misalign + count * s], 0xcd) << "wrote past the end";
            }
      }
}

TEST(Kernels, InstructionSetsAgreeBitwiseInPlace) {
  std::mt19937_64 rng(7);
  std::vector<uint8_t> a, b;
  for (auto dt : kTypes)
    for (auto op : kOps) {
      const size_t count = 100003;
      fill(a, dt, count, rng);
      fill(b, dt, count, rng);
      std::vector<uint8_t> first;
      for (Isa isa : supportedIsas()) {
        std::vector<uint8_t> inplace = a;
        kernel(dt, op, isa)(inplace.data(), inplace.data(), b.data(), count);
        inplace.resize(count * sizeOf(dt));
        if (first.empty()) first = inplace;
        ASSERT_EQ(inplace, first) << "isa " << isaName(isa) << " dt=" << dt << " op=" << op;
      }
    }
}

TEST(Kernels, ScaleDownDividesOnce) {
  int32_t i32[] = {7, -7, 9, 0};
  scaleDown(i32, i32, 4, STRATA_INT32, 2);
  EXPECT_EQ(i32[0], 3);
  EXPECT_EQ(i32[1], -3);  // truncation toward zero
  EXPECT_EQ(i32[2], 4);
  uint8_t u8[] = {255, 3};
  scaleDown(u8, u8, 2, STRATA_UINT8, 4);
  EXPECT_EQ(u8[0], 63);
  EXPECT_EQ(u8[1], 0);
  float f32[] = {1.0f, 3.0f};
  scaleDown(f32, f32, 2, STRATA_FLOAT32, 3);
  EXPECT_EQ(f32[0], 1.0f / 3.0f);
  EXPECT_EQ(f32[1], 1.0f);
  double f64[] = {10.0};
  scaleDown(f64, f64, 1, STRATA_FLOAT64, 4);
  EXPECT_EQ(f64[0], 2.5);
  uint16_t h[] = {doubleToHalf(3.0), doubleToHalf(1.0)};
  scaleDown(h, h, 2, STRATA_FLOAT16, 3);
  EXPECT_EQ(h[0], doubleToHalf(1.0));
  EXPECT_EQ(h[1], doubleToHalf(static_cast<double>(1.0f / 3.0f)));
  uint16_t bf[] = {floatToBf16(6.0f)};
  scaleDown(bf, bf, 1, STRATA_BFLOAT16, 4);
  EXPECT_EQ(bf[0], floatToBf16(1.5f));
}

TEST(Kernels, HalfSubnormalsAndOverflowRound) {
  // Smallest subnormal + itself, and the largest finite value doubled.
  uint16_t a[] = {0x0001, 0x7bff, 0x0400, 0x3c00};
  uint16_t b[] = {0x0001, 0x7bff, 0x8001, 0x0001};
  uint16_t out[4];
  for (Isa isa : supportedIsas()) {
    kernel(STRATA_FLOAT16, STRATA_SUM, isa)(out, a, b, 4);
    EXPECT_EQ(out[0], 0x0002) << isaName(isa);
    EXPECT_EQ(out[1], 0x7c00) << isaName(isa);  // overflow to +inf
    EXPECT_EQ(out[2], 0x03ff) << isaName(isa);  // normal minus subnormal
    EXPECT_EQ(out[3], 0x3c00) << isaName(isa);  // 1 + 2^-24 rounds to 1
  }
}

TEST(Kernels, NonTemporalCopyCopiesExactly) {
  std::vector<uint8_t> src(3 << 20), dst(src.size() + 64, 0);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t off : {0, 1, 17}) {
    copy(dst.data() + off, src.data(), src.size() - 100, true);
    ASSERT_EQ(std::memcmp(dst.data() + off, src.data(), src.size() - 100), 0) << off;
  }
}

}  // namespace
}  // namespace strata::kernels
