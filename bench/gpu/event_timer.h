// Timing GPU work with CUDA events, for the GPU benchmarks: what a run of
// enqueued work costs on the GPU itself, without the host's launch gaps.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace strata::bench {

// Exits 2 (the GPU programs' "CUDA refused") with CUDA's words.
inline void cudaOrExit(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s (%s)\n", what, cudaGetErrorName(err), cudaGetErrorString(err));
  std::exit(2);
}

// Seconds per run of `enqueue` (which puts work on `stream`), over `iters`
// runs after one warm-up.
template <typename Enqueue>
double eventSeconds(cudaStream_t stream, int iters, Enqueue enqueue) {
  cudaEvent_t start, stop;
  cudaOrExit(cudaEventCreate(&start), "cudaEventCreate");
  cudaOrExit(cudaEventCreate(&stop), "cudaEventCreate");
  enqueue();
  cudaOrExit(cudaEventRecord(start, stream), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) enqueue();
  cudaOrExit(cudaEventRecord(stop, stream), "cudaEventRecord");
  cudaOrExit(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  cudaOrExit(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms * 1e-3 / iters;
}

}  // namespace strata::bench
