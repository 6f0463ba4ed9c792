// strata-gpu-kernels: the GPU reduction kernels' bandwidth against the
// device-to-device copy rate measured in the same run (issue 18's measure:
// at least 80% of it per byte moved).
//
//   strata-gpu-kernels [--bytes 268435456] [--iters 20] [--device 0]
//
// Bytes moved: a copy of N bytes reads N and writes N; a reduction of N
// bytes reads 2N and writes N. Prints a table; exits 2 with CUDA's reason
// where no GPU is usable.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "device_kernels.h"
#include "event_timer.h"
#include "strata/strata.h"

namespace {

#define CUDA_OR_EXIT(call)                                                                          \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s: %s (%s)\n", #call, cudaGetErrorName(e_), cudaGetErrorString(e_));  \
      std::exit(2);                                                                                 \
    }                                                                                               \
  } while (0)


}  // namespace

int main(int argc, char** argv) {
  size_t bytes = size_t(256) << 20;
  int iters = 20, device = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--bytes") bytes = std::strtoull(argv[i + 1], nullptr, 0);
    else if (k == "--iters") iters = std::atoi(argv[i + 1]);
    else if (k == "--device") device = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 64;
    }
  }
  if (iters < 1 || bytes < 64) {
    std::fprintf(stderr, "--iters must be positive and --bytes at least 64\n");
    return 64;
  }
  CUDA_OR_EXIT(cudaSetDevice(device));
  void *a, *b, *out;
  cudaStream_t stream;
  CUDA_OR_EXIT(cudaMalloc(&a, bytes));
  CUDA_OR_EXIT(cudaMalloc(&b, bytes));
  CUDA_OR_EXIT(cudaMalloc(&out, bytes));
  CUDA_OR_EXIT(cudaMemset(a, 0, bytes));
  CUDA_OR_EXIT(cudaMemset(b, 0, bytes));
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  const double copy = strata::bench::eventSeconds(stream, iters, [&] { CUDA_OR_EXIT(cudaMemcpyAsync(out, a, bytes, cudaMemcpyDeviceToDevice, stream)); });
  const double copyGBs = 2.0 * bytes / copy / 1e9;
  std::printf("| GPU %d | bytes | op | GB/s moved | / D2D copy (%.0f GB/s) |\n| --- | --- | --- | --- | --- |\n", device,
              copyGBs);
  const struct {
    strata_datatype_t dt;
    const char* name;
  } types[] = {{STRATA_FLOAT32, "float32"}, {STRATA_BFLOAT16, "bfloat16"}, {STRATA_FLOAT16, "float16"},
               {STRATA_FLOAT64, "float64"}, {STRATA_INT32, "int32"}};
  for (const auto& t : types) {
    const size_t count = bytes / strata_datatype_size(t.dt);
    const double s = strata::bench::eventSeconds(stream, iters, [&] {
      if (strata::kernels::device::reduce(t.dt, STRATA_SUM, out, a, b, count, stream) != 0) {
        std::fprintf(stderr, "launching the %s sum failed\n", t.name);
        std::exit(1);
      }
    });
    const double gbs = 3.0 * bytes / s / 1e9;
    std::printf("| %d | %zu | %s sum | %.0f | %.2f |\n", device, bytes, t.name, gbs, gbs / copyGBs);
  }
  return 0;
}
