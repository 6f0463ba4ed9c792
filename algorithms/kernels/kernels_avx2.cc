// Kernels for AVX2 CPUs (built with -mavx2 -mf16c): the shared loops
// vectorised to 256 bits, F16C for float16, 256-bit non-temporal stores.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "element_ops.h"

namespace strata::kernels::avx2 {
namespace {

void halfToFloatN(float* out, const uint16_t* in, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  for (; i < n; ++i) out[i] = halfToFloat(in[i]);
}

void floatToHalfN(uint16_t* out, const float* in, size_t n) {
  size_t i = 0;
  const __m128i canonicalNaN = _mm_set1_epi16(static_cast<short>(kHalfNaN));
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(in + i);
    __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 isNaN = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    __m128i mask = _mm_packs_epi32(_mm256_castsi256_si128(_mm256_castps_si256(isNaN)),
                                   _mm256_extractf128_si256(_mm256_castps_si256(isNaN), 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_blendv_epi8(h, canonicalNaN, mask));
  }
  for (; i < n; ++i) out[i] = floatToHalf(in[i]);
}

void ntCopyImpl(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t head = (32 - (reinterpret_cast<uintptr_t>(d) & 31)) & 31;
  if (head > bytes) head = bytes;
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
  }
  std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();
}

}  // namespace
}  // namespace strata::kernels::avx2

#define STRATA_ISA_NS avx2
#include "kernels_impl.h"

namespace strata::kernels {

const KernelSet& avx2Kernels() {
  static const KernelSet set = avx2::makeSet();
  return set;
}

}  // namespace strata::kernels
