// The GPU's reduction kernels (device_kernels.h): grid-stride loops over
// packed_items.h's work items (16 bytes, or one element), each element
// computed by element_ops.h exactly as the host kernels compute it. nvcc
// runs with --fmad=false: no product is ever contracted into a sum.
#include <cuda_runtime.h>

#include <tuple>

#include "device_kernels.h"
#include "element_ops.h"
#include "packed_items.h"

namespace strata::kernels::device {
namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU several times over; the grid-stride
// loop covers the rest.
constexpr size_t kMaxBlocks = 4096;

unsigned blocksFor(size_t items) {
  const size_t blocks = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < kMaxBlocks ? blocks : kMaxBlocks);
}

// The element types: a C++ type for most, Narrow for the 16-bit floats
// (stored as bits, computed in float32).
template <bool Bf16>
struct Narrow {};

template <typename T>
struct Elem {
  using Storage = T;
  template <strata_op_t Op>
  static __device__ T combined(T a, T b) { return combine<T, Op>(a, b); }
  static __device__ T divided(T v, int divisor) { return divide<T>(v, divisor); }
  static __device__ T scaled(T v, T by) { return multiply<T>(v, by); }
};

template <bool Bf16>
struct Elem<Narrow<Bf16>> {
  using Storage = uint16_t;
  template <strata_op_t Op>
  static __device__ uint16_t combined(uint16_t a, uint16_t b) { return combineNarrow<Bf16, Op>(a, b); }
  static __device__ uint16_t divided(uint16_t v, int divisor) { return divideNarrow<Bf16>(v, divisor); }
  static __device__ uint16_t scaled(uint16_t v, uint16_t by) { return multiplyNarrow<Bf16>(v, by); }
};

#define STRATA_GRID_LOOP(i, count) \
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < (count); i += size_t(gridDim.x) * blockDim.x)

// Each thread takes work items of packed_items.h: 16 bytes at once where
// the pointers allow it (`packs` of them), then single elements.
template <typename Tag, strata_op_t Op, typename S = typename Elem<Tag>::Storage>
__global__ void reduceKernel(S* dst, const S* a, const S* b, size_t count, size_t packs) {
  auto op = [](S x, S y) { return Elem<Tag>::template combined<Op>(x, y); };
  STRATA_GRID_LOOP(item, itemsFor<S>(count, packs)) binaryItem(item, packs, dst, a, b, op);
}

template <typename Tag, typename S = typename Elem<Tag>::Storage>
__global__ void divideKernel(S* dst, const S* src, size_t count, size_t packs, int divisor) {
  auto op = [divisor](S x) { return Elem<Tag>::divided(x, divisor); };
  STRATA_GRID_LOOP(item, itemsFor<S>(count, packs)) unaryItem(item, packs, dst, src, op);
}

template <typename Tag, typename S = typename Elem<Tag>::Storage>
__global__ void multiplyKernel(S* dst, const S* src, size_t count, size_t packs, const S* scalar) {
  const S by = *scalar;
  auto op = [by](S x) { return Elem<Tag>::scaled(x, by); };
  STRATA_GRID_LOOP(item, itemsFor<S>(count, packs)) unaryItem(item, packs, dst, src, op);
}

#undef STRATA_GRID_LOOP

// Launches kernel<<<blocks, threads, 0, stream>>>(args...) for `items` work
// items and returns the launch's own error (cudaGetLastError could report
// an earlier call's).
template <typename... KernelArgs, typename... Args>
int launch(void (*kernel)(KernelArgs...), size_t items, void* stream, Args... args) {
  if (items == 0) return cudaSuccess;
  std::tuple<KernelArgs...> typed(args...);
  void* argv[sizeof...(KernelArgs)];
  std::apply([&argv](auto&... arg) {
    size_t i = 0;
    ((argv[i++] = &arg), ...);
  }, typed);
  const cudaError_t err = cudaLaunchKernel(reinterpret_cast<const void*>(kernel), dim3(blocksFor(items)),
                                           dim3(kThreads), argv, 0, static_cast<cudaStream_t>(stream));
  if (err != cudaSuccess) cudaGetLastError();  // reported here; not left for the thread's next call
  return static_cast<int>(err);
}

// fn(Tag{}) with the datatype's element type.
template <typename Fn>
int byType(strata_datatype_t datatype, Fn&& fn) {
  switch (datatype) {
    case STRATA_INT8: return fn(int8_t{});
    case STRATA_UINT8: return fn(uint8_t{});
    case STRATA_INT32: return fn(int32_t{});
    case STRATA_UINT32: return fn(uint32_t{});
    case STRATA_INT64: return fn(int64_t{});
    case STRATA_UINT64: return fn(uint64_t{});
    case STRATA_FLOAT16: return fn(Narrow<false>{});
    case STRATA_BFLOAT16: return fn(Narrow<true>{});
    case STRATA_FLOAT32: return fn(float{});
    case STRATA_FLOAT64: return fn(double{});
    default: return cudaErrorInvalidValue;
  }
}

// cudaFuncGetAttributes loads the kernel it is asked about.
template <typename... KernelArgs>
int load(void (*kernel)(KernelArgs...)) {
  cudaFuncAttributes attributes;
  return static_cast<int>(cudaFuncGetAttributes(&attributes, reinterpret_cast<const void*>(kernel)));
}

}  // namespace

int preload() {
  for (strata_datatype_t datatype : {STRATA_INT8, STRATA_UINT8, STRATA_INT32, STRATA_UINT32, STRATA_INT64,
                                     STRATA_UINT64, STRATA_FLOAT16, STRATA_BFLOAT16, STRATA_FLOAT32,
                                     STRATA_FLOAT64}) {
    const int error = byType(datatype, [](auto tag) {
      using Tag = decltype(tag);
      for (int e : {load(reduceKernel<Tag, STRATA_SUM>), load(reduceKernel<Tag, STRATA_PROD>),
                    load(reduceKernel<Tag, STRATA_MIN>), load(reduceKernel<Tag, STRATA_MAX>),
                    load(reduceKernel<Tag, STRATA_AVG>), load(divideKernel<Tag>), load(multiplyKernel<Tag>)})
        if (e != 0) return e;
      return 0;
    });
    if (error != 0) return error;
  }
  return 0;
}

int reduce(strata_datatype_t datatype, strata_op_t op, void* dst, const void* a, const void* b, size_t count,
           void* stream) {
  return byType(datatype, [&](auto tag) {
    using Tag = decltype(tag);
    using S = typename Elem<Tag>::Storage;
    const size_t packs = packsFor<S>(count, dst, a, b);
    auto run = [&](auto kernel) {
      return launch(kernel, itemsFor<S>(count, packs), stream, static_cast<S*>(dst), static_cast<const S*>(a),
                    static_cast<const S*>(b), count, packs);
    };
    switch (op) {
      case STRATA_SUM: return run(reduceKernel<Tag, STRATA_SUM>);
      case STRATA_PROD: return run(reduceKernel<Tag, STRATA_PROD>);
      case STRATA_MIN: return run(reduceKernel<Tag, STRATA_MIN>);
      case STRATA_MAX: return run(reduceKernel<Tag, STRATA_MAX>);
      case STRATA_AVG: return run(reduceKernel<Tag, STRATA_AVG>);
      default: return static_cast<int>(cudaErrorInvalidValue);
    }
  });
}

int scaleDown(strata_datatype_t datatype, void* dst, const void* src, size_t count, int divisor, void* stream) {
  return byType(datatype, [&](auto tag) {
    using S = typename Elem<decltype(tag)>::Storage;
    const size_t packs = packsFor<S>(count, dst, src);
    return launch(divideKernel<decltype(tag)>, itemsFor<S>(count, packs), stream, static_cast<S*>(dst),
                  static_cast<const S*>(src), count, packs, divisor);
  });
}

int scaleBy(strata_datatype_t datatype, void* dst, const void* src, size_t count, const void* scalar, void* stream) {
  return byType(datatype, [&](auto tag) {
    using S = typename Elem<decltype(tag)>::Storage;
    const size_t packs = packsFor<S>(count, dst, src);
    return launch(multiplyKernel<decltype(tag)>, itemsFor<S>(count, packs), stream, static_cast<S*>(dst),
                  static_cast<const S*>(src), count, packs, static_cast<const S*>(scalar));
  });
}

}  // namespace strata::kernels::device
