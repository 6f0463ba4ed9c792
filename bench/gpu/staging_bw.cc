// strata-gpu-staging: the staging path's bandwidth against the copy rate it
// is built from, on one GPU shared by local ranks (issue 17's measure).
//
//   strata-gpu-staging [--ranks 2] [--bytes 67108864] [--iters 20] [--device 0]
//
// Each rank is a process (forked before any CUDA call) with device buffers
// on GPU --device. Rank 0 first measures, alone, the pinned copy rate: one
// device-to-host and one host-to-device copy of the buffer (what staging
// moves per byte), timed with events. Then every rank runs float32
// allreduces on a non-blocking stream through strata_allreduce_ex; the
// first result is checked against a double-precision reference. Prints a
// table; exits 2 with CUDA's reason where no GPU is usable.
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace {

struct Args {
  int ranks = 2;
  size_t bytes = size_t(64) << 20;
  int iters = 20;
  int device = 0;
};

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

#define CUDA_OR_EXIT(call)                                                                          \
  do {                                                                                              \
    cudaError_t e_ = (call);                                                                        \
    if (e_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "rank %d: %s: %s (%s)\n", rank, #call, cudaGetErrorName(e_), cudaGetErrorString(e_)); \
      std::exit(2);                                                                                 \
    }                                                                                               \
  } while (0)

#define STRATA_OR_EXIT(call)                                                                         \
  do {                                                                                               \
    strata_result_t r_ = (call);                                                                     \
    if (r_ != STRATA_SUCCESS) {                                                                      \
      std::fprintf(stderr, "rank %d: %s: %s: %s\n", rank, #call, strata_result_string(r_), strata_last_error()); \
      std::exit(1);                                                                                  \
    }                                                                                                \
  } while (0)

float valueOf(int rank, size_t i) { return static_cast<float>((rank + 1) * ((i % 251) * 0.125)); }

int runRank(const Args& a, int rank, const strata_unique_id_t& id) {
  CUDA_OR_EXIT(cudaSetDevice(a.device));
  strata_comm_t comm;
  STRATA_OR_EXIT(strata_comm_init_rank(&comm, a.ranks, id, rank));
  const size_t count = a.bytes / sizeof(float);
  void *din, *dout, *pinned;
  cudaStream_t stream;
  CUDA_OR_EXIT(cudaMalloc(&din, a.bytes));
  CUDA_OR_EXIT(cudaMalloc(&dout, a.bytes));
  CUDA_OR_EXIT(cudaHostAlloc(&pinned, a.bytes, cudaHostAllocDefault));
  CUDA_OR_EXIT(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = valueOf(rank, i);
  CUDA_OR_EXIT(cudaMemcpy(din, host.data(), a.bytes, cudaMemcpyHostToDevice));

  // The copy rate, rank 0 alone on the GPU.
  double copyGBs = 0;
  STRATA_OR_EXIT(strata_barrier(comm));
  if (rank == 0) {
    cudaEvent_t start, stop;
    CUDA_OR_EXIT(cudaEventCreate(&start));
    CUDA_OR_EXIT(cudaEventCreate(&stop));
    CUDA_OR_EXIT(cudaMemcpyAsync(pinned, din, a.bytes, cudaMemcpyDeviceToHost, stream));  // warm
    CUDA_OR_EXIT(cudaEventRecord(start, stream));
    for (int i = 0; i < a.iters; ++i) {
      CUDA_OR_EXIT(cudaMemcpyAsync(pinned, din, a.bytes, cudaMemcpyDeviceToHost, stream));
      CUDA_OR_EXIT(cudaMemcpyAsync(dout, pinned, a.bytes, cudaMemcpyHostToDevice, stream));
    }
    CUDA_OR_EXIT(cudaEventRecord(stop, stream));
    CUDA_OR_EXIT(cudaEventSynchronize(stop));
    float ms = 0;
    CUDA_OR_EXIT(cudaEventElapsedTime(&ms, start, stop));
    copyGBs = double(a.bytes) * a.iters / (ms * 1e-3) / 1e9;  // bytes staged per second (D2H then H2D)
  }
  STRATA_OR_EXIT(strata_barrier(comm));

  strata_call_options_t opts = STRATA_CALL_OPTIONS_INIT;
  opts.stream = stream;
  // One checked run, then the timed ones.
  STRATA_OR_EXIT(strata_allreduce_ex(din, dout, count, STRATA_FLOAT32, STRATA_SUM, comm, &opts));
  CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  CUDA_OR_EXIT(cudaMemcpy(host.data(), dout, a.bytes, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < a.ranks; ++r) want += valueOf(r, i);
    if (std::fabs(host[i] - want) > 1e-6 * std::fabs(want)) ++wrong;
  }
  STRATA_OR_EXIT(strata_barrier(comm));
  const double t0 = now();
  for (int i = 0; i < a.iters; ++i)
    STRATA_OR_EXIT(strata_allreduce_ex(din, dout, count, STRATA_FLOAT32, STRATA_SUM, comm, &opts));
  CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  const double t = (now() - t0) / a.iters;
  strata_result_t async = STRATA_SUCCESS;
  strata_comm_get_async_error(comm, &async);

  // The 8-byte latency on the same path.
  STRATA_OR_EXIT(strata_barrier(comm));
  const double s0 = now();
  const int small = 200;
  for (int i = 0; i < small; ++i)
    STRATA_OR_EXIT(strata_allreduce_ex(din, dout, 2, STRATA_FLOAT32, STRATA_SUM, comm, &opts));
  CUDA_OR_EXIT(cudaStreamSynchronize(stream));
  const double lat = (now() - s0) / small;

  if (rank == 0) {
    const double algbw = a.bytes / t / 1e9, busbw = algbw * 2.0 * (a.ranks - 1) / a.ranks;
    std::printf("| ranks on GPU %d | bytes | pinned D2H+H2D GB/s | allreduce us | algbw GB/s | busbw GB/s | busbw / copy | 8 B allreduce us | wrong | async error |\n", a.device);
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
    std::printf("| %d | %zu | %.2f | %.1f | %.2f | %.2f | %.2f | %.1f | %zu | %s |\n", a.ranks, a.bytes, copyGBs, t * 1e6,
                algbw, busbw, busbw / copyGBs, lat * 1e6, wrong, strata_result_string(async));
  }
  strata_comm_destroy(comm);
  return wrong == 0 && async == STRATA_SUCCESS ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--ranks") a.ranks = std::atoi(argv[i + 1]);
    else if (k == "--bytes") a.bytes = std::strtoull(argv[i + 1], nullptr, 0);
    else if (k == "--iters") a.iters = std::atoi(argv[i + 1]);
    else if (k == "--device") a.device = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 64;
    }
  }
  if (a.ranks < 1 || a.iters < 1 || a.bytes < sizeof(float)) {
    std::fprintf(stderr, "--ranks, --iters and --bytes must be positive\n");
    return 64;
  }
  // Forks first: a CUDA context does not survive fork.
  strata_unique_id_t id;
  if (strata_get_unique_id(&id) != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata_get_unique_id: %s\n", strata_last_error());
    return 1;
  }
  std::vector<pid_t> pids;
  for (int r = 0; r < a.ranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) _exit(runRank(a, r, id));
    pids.push_back(pid);
  }
  int worst = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    worst = std::max(worst, code);
  }
  return worst;
}
