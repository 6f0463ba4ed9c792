#include "kernels.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "element_ops.h"
#include "kernel_set.h"
#include "log.h"
#include "params.h"

namespace strata::kernels {
namespace {

// Copies shorter than this are not worth a non-temporal loop and its fence.
constexpr size_t kMinNtBytes = 4096;

const KernelSet& setFor(Isa isa) {
  switch (isa) {
#if defined(__x86_64__)
    case Isa::Avx512: return avx512Kernels();
    case Isa::Avx2: return avx2Kernels();
#endif
    default: return portableKernels();
  }
}

// The average's division and the pre-multiplied sum's scaling, one element
// at a time with element_ops.h's arithmetic (the GPU's kernels use the same).
template <typename T>
void divideAll(void* dst, const void* src, size_t n, int divisor) {
  auto* d = static_cast<T*>(dst);
  auto* s = static_cast<const T*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = divide<T>(s[i], divisor);
}

template <bool Bf16>
void divideAllNarrow(void* dst, const void* src, size_t n, int divisor) {
  auto* d = static_cast<uint16_t*>(dst);
  auto* s = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = divideNarrow<Bf16>(s[i], divisor);
}

template <typename T>
void multiplyAll(void* dst, const void* src, size_t n, const void* scalar) {
  T by;
  std::memcpy(&by, scalar, sizeof(T));
  auto* d = static_cast<T*>(dst);
  auto* s = static_cast<const T*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = multiply<T>(s[i], by);
}

template <bool Bf16>
void multiplyAllNarrow(void* dst, const void* src, size_t n, const void* scalar) {
  uint16_t by;
  std::memcpy(&by, scalar, sizeof(by));
  auto* d = static_cast<uint16_t*>(dst);
  auto* s = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = multiplyNarrow<Bf16>(s[i], by);
}

}  // namespace

void scaleBy(void* dst, const void* src, size_t count, strata_datatype_t datatype, const void* scalar) {
  switch (datatype) {
    case STRATA_INT8: return multiplyAll<int8_t>(dst, src, count, scalar);
    case STRATA_UINT8: return multiplyAll<uint8_t>(dst, src, count, scalar);
    case STRATA_INT32: return multiplyAll<int32_t>(dst, src, count, scalar);
    case STRATA_UINT32: return multiplyAll<uint32_t>(dst, src, count, scalar);
    case STRATA_INT64: return multiplyAll<int64_t>(dst, src, count, scalar);
    case STRATA_UINT64: return multiplyAll<uint64_t>(dst, src, count, scalar);
    case STRATA_FLOAT16: return multiplyAllNarrow<false>(dst, src, count, scalar);
    case STRATA_BFLOAT16: return multiplyAllNarrow<true>(dst, src, count, scalar);
    case STRATA_FLOAT32: return multiplyAll<float>(dst, src, count, scalar);
    case STRATA_FLOAT64: return multiplyAll<double>(dst, src, count, scalar);
    default: return;
  }
}

ReduceFn kernel(strata_datatype_t datatype, strata_op_t op, Isa isa) {
  return setFor(isa).reduce[datatype][op];
}

void scaleDown(void* dst, const void* src, size_t count, strata_datatype_t datatype, int divisor) {
  switch (datatype) {
    case STRATA_INT8: return divideAll<int8_t>(dst, src, count, divisor);
    case STRATA_UINT8: return divideAll<uint8_t>(dst, src, count, divisor);
    case STRATA_INT32: return divideAll<int32_t>(dst, src, count, divisor);
    case STRATA_UINT32: return divideAll<uint32_t>(dst, src, count, divisor);
    case STRATA_INT64: return divideAll<int64_t>(dst, src, count, divisor);
    case STRATA_UINT64: return divideAll<uint64_t>(dst, src, count, divisor);
    case STRATA_FLOAT16: return divideAllNarrow<false>(dst, src, count, divisor);
    case STRATA_BFLOAT16: return divideAllNarrow<true>(dst, src, count, divisor);
    case STRATA_FLOAT32: return divideAll<float>(dst, src, count, divisor);
    case STRATA_FLOAT64: return divideAll<double>(dst, src, count, divisor);
    default: return;
  }
}

void copy(void* dst, const void* src, size_t bytes, bool nonTemporal) {
  if (nonTemporal && bytes >= kMinNtBytes)
    setFor(selectedIsa()).ntCopy(dst, src, bytes);
  else
    std::memcpy(dst, src, bytes);
}

bool isSupported(Isa isa) {
  switch (isa) {
    case Isa::Portable: return true;
#if defined(__x86_64__)
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#endif
    default: return false;
  }
}

const char* isaName(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    default: return "portable";
  }
}

Isa selectedIsa() {
  const std::string& forced = params::reduceIsa();
  Isa best = isSupported(Isa::Avx512) ? Isa::Avx512 : isSupported(Isa::Avx2) ? Isa::Avx2 : Isa::Portable;
  if (forced.empty()) return best;
  for (Isa isa : {Isa::Portable, Isa::Avx2, Isa::Avx512}) {
    if (forced != isaName(isa)) continue;
    if (isSupported(isa)) return isa;
    STRATA_WARN(ALGO, "STRATA_REDUCE_ISA=%s: this CPU lacks it; using %s", forced.c_str(), isaName(best));
    return best;
  }
  STRATA_WARN(ALGO, "STRATA_REDUCE_ISA=%s is not portable, avx2 or avx512; using %s", forced.c_str(),
              isaName(best));
  return best;
}

}  // namespace strata::kernels
