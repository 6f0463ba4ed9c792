#include "kernels.h"

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "half.h"
#include "kernel_set.h"
#include "log.h"
#include "params.h"

namespace strata::kernels {
namespace {

// Copies shorter than this are not worth a non-temporal loop and its fence.
constexpr size_t kMinNtBytes = 4096;

const KernelSet& setFor(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return avx512Kernels();
    case Isa::Avx2: return avx2Kernels();
    default: return portableKernels();
  }
}

template <typename T>
void divideInts(void* dst, const void* src, size_t n, int divisor) {
  auto* d = static_cast<T*>(dst);
  auto* s = static_cast<const T*>(src);
  const T div = static_cast<T>(divisor);
  for (size_t i = 0; i < n; ++i) d[i] = static_cast<T>(s[i] / div);
}

template <typename T>
void divideFloats(void* dst, const void* src, size_t n, int divisor) {
  auto* d = static_cast<T*>(dst);
  auto* s = static_cast<const T*>(src);
  const T div = static_cast<T>(divisor);
  for (size_t i = 0; i < n; ++i) d[i] = s[i] / div;
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void divideNarrow(void* dst, const void* src, size_t n, int divisor) {
  auto* d = static_cast<uint16_t*>(dst);
  auto* s = static_cast<const uint16_t*>(src);
  const float div = static_cast<float>(divisor);
  for (size_t i = 0; i < n; ++i) d[i] = Narrow(Widen(s[i]) / div);
}

template <typename T>
void multiply(void* dst, const void* src, size_t n, const void* scalar) {
  T by;
  std::memcpy(&by, scalar, sizeof(T));
  auto* d = static_cast<T*>(dst);
  auto* s = static_cast<const T*>(src);
  for (size_t i = 0; i < n; ++i) {
    if constexpr (std::is_integral_v<T>) {
      // Unsigned arithmetic: signed overflow must wrap, not be undefined.
      using U = std::make_unsigned_t<T>;
      d[i] = static_cast<T>(static_cast<U>(static_cast<U>(s[i]) * static_cast<U>(by)));
    } else {
      d[i] = s[i] * by;
    }
  }
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void multiplyNarrow(void* dst, const void* src, size_t n, const void* scalar) {
  uint16_t bits;
  std::memcpy(&bits, scalar, sizeof(bits));
  const float by = Widen(bits);
  auto* d = static_cast<uint16_t*>(dst);
  auto* s = static_cast<const uint16_t*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = Narrow(Widen(s[i]) * by);
}

}  // namespace

void scaleBy(void* dst, const void* src, size_t count, strata_datatype_t datatype, const void* scalar) {
  switch (datatype) {
    case STRATA_INT8: return multiply<int8_t>(dst, src, count, scalar);
    case STRATA_UINT8: return multiply<uint8_t>(dst, src, count, scalar);
    case STRATA_INT32: return multiply<int32_t>(dst, src, count, scalar);
    case STRATA_UINT32: return multiply<uint32_t>(dst, src, count, scalar);
    case STRATA_INT64: return multiply<int64_t>(dst, src, count, scalar);
    case STRATA_UINT64: return multiply<uint64_t>(dst, src, count, scalar);
    case STRATA_FLOAT16: return multiplyNarrow<halfToFloat, floatToHalf>(dst, src, count, scalar);
    case STRATA_BFLOAT16: return multiplyNarrow<bf16ToFloat, floatToBf16>(dst, src, count, scalar);
    case STRATA_FLOAT32: return multiply<float>(dst, src, count, scalar);
    case STRATA_FLOAT64: return multiply<double>(dst, src, count, scalar);
    default: return;
  }
}

ReduceFn kernel(strata_datatype_t datatype, strata_op_t op, Isa isa) {
  return setFor(isa).reduce[datatype][op];
}

void scaleDown(void* dst, const void* src, size_t count, strata_datatype_t datatype, int divisor) {
  switch (datatype) {
    case STRATA_INT8: return divideInts<int8_t>(dst, src, count, divisor);
    case STRATA_UINT8: return divideInts<uint8_t>(dst, src, count, divisor);
    case STRATA_INT32: return divideInts<int32_t>(dst, src, count, divisor);
    case STRATA_UINT32: return divideInts<uint32_t>(dst, src, count, divisor);
    case STRATA_INT64: return divideInts<int64_t>(dst, src, count, divisor);
    case STRATA_UINT64: return divideInts<uint64_t>(dst, src, count, divisor);
    case STRATA_FLOAT16: return divideNarrow<halfToFloat, floatToHalf>(dst, src, count, divisor);
    case STRATA_BFLOAT16: return divideNarrow<bf16ToFloat, floatToBf16>(dst, src, count, divisor);
    case STRATA_FLOAT32: return divideFloats<float>(dst, src, count, divisor);
    case STRATA_FLOAT64: return divideFloats<double>(dst, src, count, divisor);
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
