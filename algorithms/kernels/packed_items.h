// How an element-wise GPU kernel splits `count` elements into work items: a
// thread takes 16 bytes at once (one vector load per input, one store) where
// every pointer allows it, then the elements past the last whole pack one at
// a time. A thread per 2-byte element moves too few bytes per instruction:
// on an H200, float16 and bfloat16 sums ran at 0.46 and 0.59 of the
// device-to-device copy rate, float32 at 0.86 and float64 (8 bytes a thread)
// at 1.02 (bench/README.md, "GPU").
//
// Written for host and device alike (STRATA_HD): the kernels run these per
// item in a grid-stride loop, and the host suite runs the same functions
// over every item against the host kernels (tests/kernels/element_ops_test.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "element_ops.h"

namespace strata::kernels {

constexpr size_t kPackBytes = 16;

// One work item's elements of type S.
template <typename S>
struct Pack {
  static constexpr size_t kCount = kPackBytes / sizeof(S);
  S v[kCount];
};

// Whole packs the kernel may take: none unless every pointer is 16-byte
// aligned (a chunk of a buffer may start anywhere).
template <typename S>
inline size_t packsFor(size_t count, const void* dst, const void* a, const void* b = nullptr) {
  const uintptr_t any = reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(a) |
                        reinterpret_cast<uintptr_t>(b);
  return any % kPackBytes ? 0 : count / Pack<S>::kCount;
}

// Work items: the packs, then one per element after them.
template <typename S>
STRATA_HD size_t itemsFor(size_t count, size_t packs) {
  return packs + (count - packs * Pack<S>::kCount);
}

template <typename S>
STRATA_HD Pack<S> loadPack(const S* p) {
  Pack<S> out;
#if defined(__CUDA_ARCH__)
  const uint4 raw = *reinterpret_cast<const uint4*>(p);
  memcpy(out.v, &raw, kPackBytes);
#else
  std::memcpy(out.v, p, kPackBytes);
#endif
  return out;
}

template <typename S>
STRATA_HD void storePack(S* p, const Pack<S>& in) {
#if defined(__CUDA_ARCH__)
  uint4 raw;
  memcpy(&raw, in.v, kPackBytes);
  *reinterpret_cast<uint4*>(p) = raw;
#else
  std::memcpy(p, in.v, kPackBytes);
#endif
}

// Work item `item` of dst[i] = f(a[i], b[i]).
template <typename S, typename F>
STRATA_HD void binaryItem(size_t item, size_t packs, S* dst, const S* a, const S* b, F f) {
  if (item < packs) {
    const size_t at = item * Pack<S>::kCount;
    const Pack<S> x = loadPack(a + at), y = loadPack(b + at);
    Pack<S> z;
    for (size_t j = 0; j < Pack<S>::kCount; ++j) z.v[j] = f(x.v[j], y.v[j]);
    storePack(dst + at, z);
    return;
  }
  const size_t i = packs * Pack<S>::kCount + (item - packs);
  dst[i] = f(a[i], b[i]);
}

// Work item `item` of dst[i] = f(src[i]).
template <typename S, typename F>
STRATA_HD void unaryItem(size_t item, size_t packs, S* dst, const S* src, F f) {
  if (item < packs) {
    const size_t at = item * Pack<S>::kCount;
    const Pack<S> x = loadPack(src + at);
    Pack<S> z;
    for (size_t j = 0; j < Pack<S>::kCount; ++j) z.v[j] = f(x.v[j]);
    storePack(dst + at, z);
    return;
  }
  const size_t i = packs * Pack<S>::kCount + (item - packs);
  dst[i] = f(src[i]);
}

}  // namespace strata::kernels
