// The reduction loops, written once and compiled three times (portable,
// AVX2, AVX-512: see kernels_*.cc), each time with different -m flags so the
// compiler vectorises them for that instruction set. Before including this
// file, a kernels_<isa>.cc defines STRATA_ISA_NS and the conversion and
// non-temporal copy helpers below for its instruction set:
//   void halfToFloatN(float*, const uint16_t*, size_t);
//   void floatToHalfN(uint16_t*, const float*, size_t);
//   void ntCopyImpl(void* dst, const void* src, size_t bytes);
//
// Every loop computes each element with exactly one IEEE operation in the
// same operand order (no FMA contraction: -ffp-contract=off), so all three
// builds give bitwise identical results.
#pragma once

#include <cmath>
#include <cstring>
#include <type_traits>

#include "element_ops.h"
#include "kernel_set.h"

namespace strata::kernels::STRATA_ISA_NS {
namespace {

template <typename T, strata_op_t Op>
void reduceDirect(void* dst, const void* a, const void* b, size_t n) {
  // dst may equal a or b; the loop reads each element before writing it.
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = combine<T, Op>(x[i], y[i]);
}

void bf16ToFloatN(float* out, const uint16_t* in, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t u = uint32_t(in[i]) << 16;
    std::memcpy(&out[i], &u, sizeof(u));
  }
}

void floatToBf16N(uint16_t* out, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, &in[i], sizeof(u));
    uint16_t rounded = static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    out[i] = (u & 0x7fffffff) > 0x7f800000 ? kBf16NaN : rounded;
  }
}

constexpr size_t kBlock = 512;  // elements per pass through the L1 scratch

// float16 / bfloat16: widen a block of each input to float32, combine, narrow.
template <bool Bf16, strata_op_t Op>
void reduceNarrow(void* dst, const void* a, const void* b, size_t n) {
  alignas(64) float fa[kBlock];
  alignas(64) float fb[kBlock];
  auto* d = static_cast<uint16_t*>(dst);
  auto* x = static_cast<const uint16_t*>(a);
  auto* y = static_cast<const uint16_t*>(b);
  for (size_t done = 0; done < n; done += kBlock) {
    size_t m = n - done < kBlock ? n - done : kBlock;
    if constexpr (Bf16) {
      bf16ToFloatN(fa, x + done, m);
      bf16ToFloatN(fb, y + done, m);
    } else {
      halfToFloatN(fa, x + done, m);
      halfToFloatN(fb, y + done, m);
    }
    reduceDirect<float, Op>(fa, fa, fb, m);
    if constexpr (Bf16)
      floatToBf16N(d + done, fa, m);
    else
      floatToHalfN(d + done, fa, m);
  }
}

template <strata_datatype_t Dt, strata_op_t Op>
constexpr ReduceFn kernelFor() {
  if constexpr (Dt == STRATA_INT8) return reduceDirect<int8_t, Op>;
  if constexpr (Dt == STRATA_UINT8) return reduceDirect<uint8_t, Op>;
  if constexpr (Dt == STRATA_INT32) return reduceDirect<int32_t, Op>;
  if constexpr (Dt == STRATA_UINT32) return reduceDirect<uint32_t, Op>;
  if constexpr (Dt == STRATA_INT64) return reduceDirect<int64_t, Op>;
  if constexpr (Dt == STRATA_UINT64) return reduceDirect<uint64_t, Op>;
  if constexpr (Dt == STRATA_FLOAT16) return reduceNarrow<false, Op>;
  if constexpr (Dt == STRATA_BFLOAT16) return reduceNarrow<true, Op>;
  if constexpr (Dt == STRATA_FLOAT32) return reduceDirect<float, Op>;
  if constexpr (Dt == STRATA_FLOAT64) return reduceDirect<double, Op>;
}

template <strata_datatype_t Dt, strata_op_t Op>
void fillOne(KernelSet& set) {
  set.reduce[Dt][Op] = kernelFor<Dt, Op>();
}

template <strata_datatype_t Dt>
void fillType(KernelSet& set) {
  fillOne<Dt, STRATA_SUM>(set);
  fillOne<Dt, STRATA_PROD>(set);
  fillOne<Dt, STRATA_MIN>(set);
  fillOne<Dt, STRATA_MAX>(set);
  fillOne<Dt, STRATA_AVG>(set);
}

KernelSet makeSet() {
  KernelSet set{};
  fillType<STRATA_INT8>(set);
  fillType<STRATA_UINT8>(set);
  fillType<STRATA_INT32>(set);
  fillType<STRATA_UINT32>(set);
  fillType<STRATA_INT64>(set);
  fillType<STRATA_UINT64>(set);
  fillType<STRATA_FLOAT16>(set);
  fillType<STRATA_BFLOAT16>(set);
  fillType<STRATA_FLOAT32>(set);
  fillType<STRATA_FLOAT64>(set);
  set.ntCopy = ntCopyImpl;
  return set;
}

}  // namespace
}  // namespace strata::kernels::STRATA_ISA_NS
