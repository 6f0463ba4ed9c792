// The GPU's reduction kernels (device_kernels.h): one thread per element in
// a grid-stride loop, each element computed by element_ops.h exactly as the
// host kernels compute it. nvcc runs with --fmad=false: no product is ever
// contracted into a sum.
#include <cuda_runtime.h>

#include "device_kernels.h"
#include "element_ops.h"

namespace strata::kernels::device {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; the grid-stride
// loop covers the rest.
constexpr size_t kMaxBlocks = 4096;

unsigned blocksFor(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

template <typename T, strata_op_t Op>
__global__ void reduceKernel(T* dst, const T* a, const T* b, size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = combine<T, Op>(a[i], b[i]);
}

template <bool Bf16, strata_op_t Op>
__global__ void reduceNarrowKernel(uint16_t* dst, const uint16_t* a, const uint16_t* b, size_t count) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = combineNarrow<Bf16, Op>(a[i], b[i]);
}

template <typename T>
__global__ void divideKernel(T* dst, const T* src, size_t count, int divisor) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = divide<T>(src[i], divisor);
}

template <bool Bf16>
__global__ void divideNarrowKernel(uint16_t* dst, const uint16_t* src, size_t count, int divisor) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = divideNarrow<Bf16>(src[i], divisor);
}

template <typename T>
__global__ void multiplyKernel(T* dst, const T* src, size_t count, const T* scalar) {
  const T by = *scalar;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = multiply<T>(src[i], by);
}

template <bool Bf16>
__global__ void multiplyNarrowKernel(uint16_t* dst, const uint16_t* src, size_t count, const uint16_t* scalar) {
  const uint16_t by = *scalar;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x)
    dst[i] = multiplyNarrow<Bf16>(src[i], by);
}

// Launches kernel<<<blocks, threads, 0, stream>>>(args...) and returns the launch's error.
template <typename... KernelArgs, typename... Args>
int launch(void (*kernel)(KernelArgs...), size_t count, void* stream, Args... args) {
  if (count == 0) return cudaSuccess;
  kernel<<<blocksFor(count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(args...);
  return static_cast<int>(cudaGetLastError());
}

template <strata_op_t Op>
int reduceAs(strata_datatype_t dt, void* d, const void* a, const void* b, size_t n, void* s) {
  switch (dt) {
#define STRATA_DIRECT(DT, T) \
  case DT: return launch(reduceKernel<T, Op>, n, s, static_cast<T*>(d), static_cast<const T*>(a), static_cast<const T*>(b), n);
    STRATA_DIRECT(STRATA_INT8, int8_t)
    STRATA_DIRECT(STRATA_UINT8, uint8_t)
    STRATA_DIRECT(STRATA_INT32, int32_t)
    STRATA_DIRECT(STRATA_UINT32, uint32_t)
    STRATA_DIRECT(STRATA_INT64, int64_t)
    STRATA_DIRECT(STRATA_UINT64, uint64_t)
    STRATA_DIRECT(STRATA_FLOAT32, float)
    STRATA_DIRECT(STRATA_FLOAT64, double)
#undef STRATA_DIRECT
    case STRATA_FLOAT16:
      return launch(reduceNarrowKernel<false, Op>, n, s, static_cast<uint16_t*>(d), static_cast<const uint16_t*>(a),
                    static_cast<const uint16_t*>(b), n);
    case STRATA_BFLOAT16:
      return launch(reduceNarrowKernel<true, Op>, n, s, static_cast<uint16_t*>(d), static_cast<const uint16_t*>(a),
                    static_cast<const uint16_t*>(b), n);
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

int reduce(strata_datatype_t datatype, strata_op_t op, void* dst, const void* a, const void* b, size_t count,
           void* stream) {
  switch (op) {
    case STRATA_SUM: return reduceAs<STRATA_SUM>(datatype, dst, a, b, count, stream);
    case STRATA_PROD: return reduceAs<STRATA_PROD>(datatype, dst, a, b, count, stream);
    case STRATA_MIN: return reduceAs<STRATA_MIN>(datatype, dst, a, b, count, stream);
    case STRATA_MAX: return reduceAs<STRATA_MAX>(datatype, dst, a, b, count, stream);
    case STRATA_AVG: return reduceAs<STRATA_AVG>(datatype, dst, a, b, count, stream);
    default: return cudaErrorInvalidValue;
  }
}

int scaleDown(strata_datatype_t datatype, void* dst, const void* src, size_t n, int divisor, void* s) {
  switch (datatype) {
#define STRATA_DIRECT(DT, T) \
  case DT: return launch(divideKernel<T>, n, s, static_cast<T*>(dst), static_cast<const T*>(src), n, divisor);
    STRATA_DIRECT(STRATA_INT8, int8_t)
    STRATA_DIRECT(STRATA_UINT8, uint8_t)
    STRATA_DIRECT(STRATA_INT32, int32_t)
    STRATA_DIRECT(STRATA_UINT32, uint32_t)
    STRATA_DIRECT(STRATA_INT64, int64_t)
    STRATA_DIRECT(STRATA_UINT64, uint64_t)
    STRATA_DIRECT(STRATA_FLOAT32, float)
    STRATA_DIRECT(STRATA_FLOAT64, double)
#undef STRATA_DIRECT
    case STRATA_FLOAT16:
      return launch(divideNarrowKernel<false>, n, s, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, divisor);
    case STRATA_BFLOAT16:
      return launch(divideNarrowKernel<true>, n, s, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n, divisor);
    default: return cudaErrorInvalidValue;
  }
}

int scaleBy(strata_datatype_t datatype, void* dst, const void* src, size_t n, const void* scalar, void* s) {
  switch (datatype) {
#define STRATA_DIRECT(DT, T)                                                                                 \
  case DT:                                                                                                   \
    return launch(multiplyKernel<T>, n, s, static_cast<T*>(dst), static_cast<const T*>(src), n,              \
                  static_cast<const T*>(scalar));
    STRATA_DIRECT(STRATA_INT8, int8_t)
    STRATA_DIRECT(STRATA_UINT8, uint8_t)
    STRATA_DIRECT(STRATA_INT32, int32_t)
    STRATA_DIRECT(STRATA_UINT32, uint32_t)
    STRATA_DIRECT(STRATA_INT64, int64_t)
    STRATA_DIRECT(STRATA_UINT64, uint64_t)
    STRATA_DIRECT(STRATA_FLOAT32, float)
    STRATA_DIRECT(STRATA_FLOAT64, double)
#undef STRATA_DIRECT
    case STRATA_FLOAT16:
      return launch(multiplyNarrowKernel<false>, n, s, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n,
                    static_cast<const uint16_t*>(scalar));
    case STRATA_BFLOAT16:
      return launch(multiplyNarrowKernel<true>, n, s, static_cast<uint16_t*>(dst), static_cast<const uint16_t*>(src), n,
                    static_cast<const uint16_t*>(scalar));
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace strata::kernels::device
