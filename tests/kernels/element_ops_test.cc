// The GPU's arithmetic against the host's: element_ops.h is what the device
// kernels compute per element (device_kernels.cu), and here its functions
// run on the host against the host kernels of every instruction set this CPU
// has, bit for bit, for every datatype and op; so do packed_items.h's work
// items, which those kernels run over their buffers. Inputs are random bit
// patterns (every NaN payload, subnormal and infinity of the 16-bit types
// shows up), with signed zeros, NaNs, infinities, subnormals and values
// whose results round half-way mixed in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "element_ops.h"
#include "kernels.h"
#include "packed_items.h"

namespace strata::kernels {
namespace {

constexpr size_t kCount = 20000;

template <typename T>
std::vector<T> inputs(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(kCount);
  for (auto& x : v) {
    const uint64_t bits = rng();
    std::memcpy(&x, &bits, sizeof(T));
  }
  if constexpr (std::is_floating_point_v<T>) {
    const T specials[] = {T(0),
                          -T(0),
                          std::numeric_limits<T>::infinity(),
                          -std::numeric_limits<T>::infinity(),
                          std::numeric_limits<T>::quiet_NaN(),
                          -std::numeric_limits<T>::quiet_NaN(),
                          std::numeric_limits<T>::denorm_min(),
                          -std::numeric_limits<T>::denorm_min(),
                          std::numeric_limits<T>::max(),
                          std::numeric_limits<T>::lowest(),
                          T(1),
                          T(1) + std::numeric_limits<T>::epsilon(),
                          T(0.5) * std::numeric_limits<T>::epsilon()};
    for (size_t i = 0; i < v.size(); i += 7) v[i] = specials[(i / 7 + seed) % (sizeof(specials) / sizeof(T))];
  }
  return v;
}

// 16-bit floats as their bits: every pattern is an input worth having.
std::vector<uint16_t> narrowInputs(uint64_t seed, bool bf16) {
  std::vector<uint16_t> v = inputs<uint16_t>(seed);
  const uint16_t specials[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400,  // zeros, subnormals, smallest normal
                               0x7c00, 0xfc00, 0x7e00, 0x7d01, 0x7bff, 0x3c00, 0x3c01};
  const uint16_t bf16Specials[] = {0x0000, 0x8000, 0x0001, 0x8001, 0x007f, 0x0080,
                                   0x7f80, 0xff80, 0x7fc0, 0x7f81, 0x7f7f, 0x3f80, 0x3f81};
  for (size_t i = 0; i < v.size(); i += 5) v[i] = (bf16 ? bf16Specials : specials)[(i / 5 + seed) % 13];
  return v;
}

std::vector<Isa> isas() {
  std::vector<Isa> out;
  for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512})
    if (isSupported(isa)) out.push_back(isa);
  return out;
}

template <typename T, strata_op_t Op>
void checkDirect(strata_datatype_t dt) {
  const std::vector<T> a = inputs<T>(1 + dt * 10 + Op), b = inputs<T>(101 + dt * 10 + Op);
  std::vector<T> want(kCount);
  for (size_t i = 0; i < kCount; ++i) want[i] = combine<T, Op>(a[i], b[i]);
  for (Isa isa : isas()) {
    std::vector<T> got(kCount);
    kernel(dt, Op, isa)(got.data(), a.data(), b.data(), kCount);
    for (size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(0, std::memcmp(&got[i], &want[i], sizeof(T)))
          << "datatype " << dt << " op " << Op << " isa " << isaName(isa) << " element " << i;
  }
  // A GPU makes NaNs of its own where a CPU carries an input's payload:
  // only a canonical NaN leaves both with the same bits.
  if constexpr (std::is_floating_point_v<T>) {
    const T canonicalNaN = std::numeric_limits<T>::quiet_NaN();
    size_t nans = 0;
    for (size_t i = 0; i < kCount; ++i)
      if (want[i] != want[i]) {
        ++nans;
        ASSERT_EQ(0, std::memcmp(&want[i], &canonicalNaN, sizeof(T))) << "datatype " << dt << " op " << Op << " element " << i;
      }
    EXPECT_GT(nans, 0u) << "the inputs hold NaNs";
  }
}

template <bool Bf16, strata_op_t Op>
void checkNarrow() {
  const strata_datatype_t dt = Bf16 ? STRATA_BFLOAT16 : STRATA_FLOAT16;
  const std::vector<uint16_t> a = narrowInputs(7 + Op, Bf16), b = narrowInputs(77 + Op, Bf16);
  std::vector<uint16_t> want(kCount);
  for (size_t i = 0; i < kCount; ++i) want[i] = combineNarrow<Bf16, Op>(a[i], b[i]);
  for (Isa isa : isas()) {
    std::vector<uint16_t> got(kCount);
    kernel(dt, Op, isa)(got.data(), a.data(), b.data(), kCount);
    for (size_t i = 0; i < kCount; ++i)
      ASSERT_EQ(got[i], want[i]) << (Bf16 ? "bfloat16" : "float16") << " op " << Op << " isa " << isaName(isa)
                                 << " inputs 0x" << std::hex << a[i] << ", 0x" << b[i];
  }
}

template <strata_op_t Op>
void checkOp() {
  checkDirect<int8_t, Op>(STRATA_INT8);
  checkDirect<uint8_t, Op>(STRATA_UINT8);
  checkDirect<int32_t, Op>(STRATA_INT32);
  checkDirect<uint32_t, Op>(STRATA_UINT32);
  checkDirect<int64_t, Op>(STRATA_INT64);
  checkDirect<uint64_t, Op>(STRATA_UINT64);
  checkDirect<float, Op>(STRATA_FLOAT32);
  checkDirect<double, Op>(STRATA_FLOAT64);
  checkNarrow<false, Op>();
  checkNarrow<true, Op>();
}

TEST(ElementOps, DeviceArithmeticEqualsEveryHostKernelBitForBit) {
  checkOp<STRATA_SUM>();
  checkOp<STRATA_PROD>();
  checkOp<STRATA_MIN>();
  checkOp<STRATA_MAX>();
  checkOp<STRATA_AVG>();
}

// The conversions the narrow types go through, over every 16-bit pattern:
// widening is exact, and narrowing a widened value gives it back (NaNs
// become the canonical one).
TEST(ElementOps, SixteenBitConversionsRoundTripEveryPattern) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    const float wide = halfToFloat(bits);
    const bool nan = (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff);
    ASSERT_EQ(floatToHalf(wide), nan ? kHalfNaN : bits) << std::hex << h;
    const float bwide = bf16ToFloat(bits);
    const bool bnan = (bits & 0x7f80) == 0x7f80 && (bits & 0x7f);
    ASSERT_EQ(floatToBf16(bwide), bnan ? kBf16NaN : bits) << std::hex << h;
  }
}

// Every work item of packed_items.h, as a kernel's threads take them: for
// counts around a pack's size and pointers aligned or not (a chunk may
// start anywhere), in place or not, the result is the host kernel's.
template <typename S>
void checkItems(strata_datatype_t dt, strata_op_t op, S (*combined)(S, S), S (*divided)(S, int)) {
  constexpr size_t kMax = 1000 + 2 * Pack<S>::kCount + 5;
  const std::vector<S> a = inputs<S>(300 + dt), b = inputs<S>(400 + dt);
  // 16-byte aligned storage, with room to start each buffer an element in.
  struct alignas(16) Block {
    S v[Pack<S>::kCount];
  };
  const size_t blocks = (kMax + 1) / Pack<S>::kCount + 2;
  std::vector<Block> x(blocks), y(blocks), z(blocks);
  for (size_t count : {size_t(0), size_t(1), Pack<S>::kCount - 1, Pack<S>::kCount, Pack<S>::kCount + 1,
                       2 * Pack<S>::kCount + 3, kMax})
    for (int shift = 0; shift < 4; ++shift)
      for (bool inPlace : {false, true}) {
        // Bit k of `shift` starts one buffer an element past its alignment.
        S* pa = x[0].v + (shift & 1);
        S* pb = y[0].v + ((shift >> 1) & 1);
        S* out = inPlace ? pa : z[0].v;
        std::memcpy(pa, a.data(), count * sizeof(S));
        std::memcpy(pb, b.data(), count * sizeof(S));
        // Never empty: memcmp and memcpy take no null pointer, even for 0 bytes.
        std::vector<S> want(std::max<size_t>(count, 1));
        kernel(dt, op, Isa::Portable)(want.data(), a.data(), b.data(), count);
        const size_t packs = packsFor<S>(count, out, pa, pb);
        ASSERT_EQ(packs, shift ? 0 : count / Pack<S>::kCount) << "count " << count << " shift " << shift;
        for (size_t item = 0; item < itemsFor<S>(count, packs); ++item) binaryItem(item, packs, out, pa, pb, combined);
        ASSERT_EQ(0, std::memcmp(out, want.data(), count * sizeof(S)))
            << "datatype " << dt << " op " << op << " count " << count << " shift " << shift << " in place " << inPlace;
        // The average's division, one input.
        std::memcpy(pa, a.data(), count * sizeof(S));
        std::vector<S> quotients(std::max<size_t>(count, 1));
        scaleDown(quotients.data(), a.data(), count, dt, 3);
        const size_t unaryPacks = packsFor<S>(count, out, pa);
        for (size_t item = 0; item < itemsFor<S>(count, unaryPacks); ++item)
          unaryItem(item, unaryPacks, out, pa, [divided](S v) { return divided(v, 3); });
        ASSERT_EQ(0, std::memcmp(out, quotients.data(), count * sizeof(S)))
            << "datatype " << dt << " / 3, count " << count << " shift " << shift << " in place " << inPlace;
      }
}

TEST(PackedItems, EveryItemGivesTheHostKernelsBits) {
  checkItems<int8_t>(STRATA_INT8, STRATA_SUM, combine<int8_t, STRATA_SUM>, divide<int8_t>);
  checkItems<uint16_t>(STRATA_FLOAT16, STRATA_SUM, combineNarrow<false, STRATA_SUM>, divideNarrow<false>);
  checkItems<uint16_t>(STRATA_BFLOAT16, STRATA_MAX, combineNarrow<true, STRATA_MAX>, divideNarrow<true>);
  checkItems<int32_t>(STRATA_INT32, STRATA_PROD, combine<int32_t, STRATA_PROD>, divide<int32_t>);
  checkItems<float>(STRATA_FLOAT32, STRATA_SUM, combine<float, STRATA_SUM>, divide<float>);
  checkItems<double>(STRATA_FLOAT64, STRATA_MIN, combine<double, STRATA_MIN>, divide<double>);
}

}  // namespace
}  // namespace strata::kernels
