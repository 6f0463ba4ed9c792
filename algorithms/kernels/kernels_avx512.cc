// Kernels for AVX-512 CPUs (built with -mavx512f/bw/vl/dq): the shared loops
// vectorised to 512 bits, 512-bit half conversions and non-temporal stores.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "element_ops.h"

namespace strata::kernels::avx512 {
namespace {

void halfToFloatN(float* out, const uint16_t* in, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
  for (; i < n; ++i) out[i] = halfToFloat(in[i]);
}

void floatToHalfN(uint16_t* out, const float* in, size_t n) {
  size_t i = 0;
  const __m256i canonicalNaN = _mm256_set1_epi16(static_cast<short>(kHalfNaN));
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(in + i);
    __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __mmask16 isNaN = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_mask_blend_epi16(isNaN, h, canonicalNaN));
  }
  for (; i < n; ++i) out[i] = floatToHalf(in[i]);
}

void ntCopyImpl(void* dst, const void* src, size_t bytes) {
  char* d = static_cast<char*>(dst);
  const char* s = static_cast<const char*>(src);
  size_t head = (64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63;
  if (head > bytes) head = bytes;
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_loadu_si512(s + i));
  std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();
}

}  // namespace
}  // namespace strata::kernels::avx512

#define STRATA_ISA_NS avx512
#include "kernels_impl.h"

namespace strata::kernels {

const KernelSet& avx512Kernels() {
  static const KernelSet set = avx512::makeSet();
  return set;
}

}  // namespace strata::kernels
