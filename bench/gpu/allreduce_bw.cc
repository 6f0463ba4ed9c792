// strata-gpu-allreduce: stream-ordered allreduce on GPU memory, GPU to GPU
// (the cuda transport) and staged through host memory, side by side, against
// the copy rates each is built from, on one GPU shared by local ranks.
//
//   strata-gpu-allreduce [--ranks 2] [--bytes 268435456] [--iters 10] [--rounds 5] [--device 0]
//
// Each rank is a process (forked before any CUDA call) with device buffers
// on GPU --device and two communicators: one with STRATA_GPU_DIRECT=2 (GPU
// to GPU required), one with 0 (staged). Rank 0 first measures, alone, the
// device-to-device copy rate (cudaMemcpy D2D: what the direct path's copy
// engine moves) and the pinned D2H + H2D rate (what staging moves per
// byte), timed with events. Then each path's first result is checked
// against a double-precision reference, and the paths run float32
// allreduces on a non-blocking stream in alternating rounds (medians
// reported), then 8-byte allreduces. Prints a table; exits 2 with CUDA's
// reason where no GPU is usable, 1 if a result is wrong or a path fails.
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

#include "event_timer.h"
#include "strata/strata.h"

namespace {

struct Args {
  int ranks = 2;
  size_t bytes = size_t(256) << 20;
  int iters = 10;
  int rounds = 5;
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Path {
  const char* name;
  const char* gpuDirect;  // STRATA_GPU_DIRECT for its communicator
  strata_comm_t comm = nullptr;
  std::vector<double> seconds;  // per allreduce, one entry per round
  double smallSeconds = 0;
  size_t wrong = 0;
};


int runRank(const Args& a, int rank, const strata_unique_id_t* ids) {
  CUDA_OR_EXIT(cudaSetDevice(a.device));
  Path paths[2] = {{"GPU to GPU", "2"}, {"staged", "0"}};
  for (int p = 0; p < 2; ++p) {
    setenv("STRATA_GPU_DIRECT", paths[p].gpuDirect, 1);
    STRATA_OR_EXIT(strata_comm_init_rank(&paths[p].comm, a.ranks, ids[p], rank));
  }
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
  CUDA_OR_EXIT(cudaDeviceSynchronize());  // a copy from pageable memory may return before it lands

  // The copy rates, rank 0 alone on the GPU.
  double d2d = 0, staged = 0;
  STRATA_OR_EXIT(strata_barrier(paths[0].comm));
  if (rank == 0) {
    const double gb = a.bytes / 1e9;
    d2d = gb / strata::bench::eventSeconds(stream, a.iters, [&] {
      CUDA_OR_EXIT(cudaMemcpyAsync(dout, din, a.bytes, cudaMemcpyDeviceToDevice, stream));
    });
    staged = gb / strata::bench::eventSeconds(stream, a.iters, [&] {
      CUDA_OR_EXIT(cudaMemcpyAsync(pinned, din, a.bytes, cudaMemcpyDeviceToHost, stream));
      CUDA_OR_EXIT(cudaMemcpyAsync(dout, pinned, a.bytes, cudaMemcpyHostToDevice, stream));
    });
  }
  STRATA_OR_EXIT(strata_barrier(paths[0].comm));

  strata_call_options_t opts = STRATA_CALL_OPTIONS_INIT;
  opts.stream = stream;
  for (Path& p : paths) {  // one checked run each
    CUDA_OR_EXIT(cudaMemsetAsync(dout, 0, a.bytes, stream));
    STRATA_OR_EXIT(strata_allreduce_ex(din, dout, count, STRATA_FLOAT32, STRATA_SUM, p.comm, &opts));
    CUDA_OR_EXIT(cudaStreamSynchronize(stream));
    CUDA_OR_EXIT(cudaMemcpy(host.data(), dout, a.bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < count; ++i) {
      double want = 0;
      for (int r = 0; r < a.ranks; ++r) want += valueOf(r, i);
      if (std::fabs(host[i] - want) > 1e-6 * std::fabs(want)) ++p.wrong;
    }
  }
  // Alternating rounds: the machine's drift falls on both paths alike.
  for (int round = 0; round < a.rounds; ++round)
    for (Path& p : paths) {
      STRATA_OR_EXIT(strata_barrier(p.comm));
      const double t0 = now();
      for (int i = 0; i < a.iters; ++i)
        STRATA_OR_EXIT(strata_allreduce_ex(din, dout, count, STRATA_FLOAT32, STRATA_SUM, p.comm, &opts));
      CUDA_OR_EXIT(cudaStreamSynchronize(stream));
      p.seconds.push_back((now() - t0) / a.iters);
    }
  for (Path& p : paths) {
    STRATA_OR_EXIT(strata_barrier(p.comm));
    const int small = 200;
    const double t0 = now();
    for (int i = 0; i < small; ++i)
      STRATA_OR_EXIT(strata_allreduce_ex(din, dout, 2, STRATA_FLOAT32, STRATA_SUM, p.comm, &opts));
    CUDA_OR_EXIT(cudaStreamSynchronize(stream));
    p.smallSeconds = (now() - t0) / small;
  }

  bool ok = true;
  if (rank == 0) {
    std::printf("D2D copy %.1f GB/s, pinned D2H+H2D %.1f GB/s (rank 0 alone on GPU %d)\n", d2d, staged, a.device);
    std::printf("| path | ranks | bytes | allreduce us | busbw GB/s | busbw / D2D | busbw / pinned | 8 B allreduce us | wrong | async error |\n");
    std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  }
  for (Path& p : paths) {
    strata_result_t async = STRATA_SUCCESS;
    strata_comm_get_async_error(p.comm, &async);
    ok &= p.wrong == 0 && async == STRATA_SUCCESS;
    if (rank != 0) continue;
    const double t = median(p.seconds);
    const double busbw = a.bytes / t / 1e9 * 2.0 * (a.ranks - 1) / a.ranks;
    std::printf("| %s | %d | %zu | %.1f | %.2f | %.2f | %.2f | %.1f | %zu | %s |\n", p.name, a.ranks, a.bytes, t * 1e6,
                busbw, busbw / d2d, busbw / staged, p.smallSeconds * 1e6, p.wrong, strata_result_string(async));
  }
  for (Path& p : paths) strata_comm_destroy(p.comm);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--ranks") a.ranks = std::atoi(argv[i + 1]);
    else if (k == "--bytes") a.bytes = std::strtoull(argv[i + 1], nullptr, 0);
    else if (k == "--iters") a.iters = std::atoi(argv[i + 1]);
    else if (k == "--rounds") a.rounds = std::atoi(argv[i + 1]);
    else if (k == "--device") a.device = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "unknown option %s\n", argv[i]);
      return 64;
    }
  }
  if (a.ranks < 2 || a.iters < 1 || a.rounds < 1 || a.bytes < sizeof(float)) {
    std::fprintf(stderr, "--ranks must be at least 2, and --iters, --rounds and --bytes positive\n");
    return 64;
  }
  // Forks first: a CUDA context does not survive fork.
  strata_unique_id_t ids[2];
  for (strata_unique_id_t& id : ids)
    if (strata_get_unique_id(&id) != STRATA_SUCCESS) {
      std::fprintf(stderr, "strata_get_unique_id: %s\n", strata_last_error());
      return 1;
    }
  std::vector<pid_t> pids;
  for (int r = 0; r < a.ranks; ++r) {
    pid_t pid = fork();
    if (pid == 0) {
      const int code = runRank(a, r, ids);
      std::fflush(nullptr);  // rank 0's table: _exit flushes no stdio buffer
      _exit(code);
    }
    pids.push_back(pid);
  }
  // A wrong result (1) outranks a GPU that refused (2).
  int worst = 0;
  for (pid_t pid : pids) {
    int status = 0;
    waitpid(pid, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    if (code == 1) worst = 1;
    else if (worst != 1) worst = std::max(worst, code);
  }
  return worst;
}
