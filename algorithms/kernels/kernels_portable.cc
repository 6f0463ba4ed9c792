// Kernels for any x86-64 (SSE2) or other CPU: plain C++ the compiler
// vectorises as far as the baseline allows; scalar half conversions.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "element_ops.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace strata::kernels::portable {
namespace {

void halfToFloatN(float* out, const uint16_t* in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = halfToFloat(in[i]);
}

void floatToHalfN(uint16_t* out, const float* in, size_t n) {
  for (size_t i = 0; i < n; ++i) out[i] = floatToHalf(in[i]);
}

void ntCopyImpl(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t head = (16 - (reinterpret_cast<uintptr_t>(d) & 15)) & 15;
  if (head > bytes) head = bytes;
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 16 <= bytes; i += 16)
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace
}  // namespace strata::kernels::portable

#define STRATA_ISA_NS portable
#include "kernels_impl.h"

namespace strata::kernels {

const KernelSet& portableKernels() {
  static const KernelSet set = portable::makeSet();
  return set;
}

}  // namespace strata::kernels
