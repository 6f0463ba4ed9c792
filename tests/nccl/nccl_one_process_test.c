/* Ranks that are communicators of one process, as nccl-tests' -g makes them:
 * ncclCommInitAll puts two ranks on GPU 0 (strata allows a device twice),
 * and one thread drives both in a group, each rank on a stream of its own,
 * with device buffers. Over the cuda transport (STRATA_GPU_DIRECT=2) the
 * two ranks trade IPC handles that CUDA would refuse to open in the process
 * that made them. Twice, so the second init meets what the first one's
 * teardown left to free. Results are compared with sums computed here.
 * Exits 77 (skipped) where no GPU is usable. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "nccl_checks.h"

#define NCOMMS 2
#define COUNT 300007 /* a few slots of the cuda transport, and not a multiple of anything */

#define CUDA_OK(call)                                                               \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_));                  \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

/* Small integers: sums of NCOMMS of them are exact in float. */
static float value(int rank, size_t i) { return (float)((i * 5 + (size_t)rank * 3) % 11) + 1; }

static void round_(int round) {
  const int devlist[NCOMMS] = {0, 0};
  ncclComm_t comms[NCOMMS];
  cudaStream_t streams[NCOMMS];
  float *send[NCOMMS], *recv[NCOMMS], *gathered[NCOMMS];
  NCCL_OK(ncclCommInitAll(comms, NCOMMS, devlist), NULL);
  float* host = malloc(COUNT * NCOMMS * sizeof(float));
  for (int r = 0; r < NCOMMS; ++r) {
    int dev = -1;
    NCCL_OK(ncclCommCuDevice(comms[r], &dev), comms[r]);
    CHECK(dev == 0, "round %d: comm %d is on device %d, its devlist entry is 0", round, r, dev);
    CUDA_OK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    NCCL_OK(ncclMemAlloc((void**)&send[r], COUNT * sizeof(float)), comms[r]);
    NCCL_OK(ncclMemAlloc((void**)&recv[r], COUNT * sizeof(float)), comms[r]);
    NCCL_OK(ncclMemAlloc((void**)&gathered[r], COUNT * NCOMMS * sizeof(float)), comms[r]);
    for (size_t i = 0; i < COUNT; ++i) host[i] = value(r, i);
    CUDA_OK(cudaMemcpy(send[r], host, COUNT * sizeof(float), cudaMemcpyHostToDevice));
  }
  NCCL_OK(ncclGroupStart(), NULL);
  for (int r = 0; r < NCOMMS; ++r)
    NCCL_OK(ncclAllReduce(send[r], recv[r], COUNT, ncclFloat32, ncclSum, comms[r], streams[r]), comms[r]);
  NCCL_OK(ncclGroupEnd(), NULL);
  NCCL_OK(ncclGroupStart(), NULL);
  for (int r = 0; r < NCOMMS; ++r)
    NCCL_OK(ncclAllGather(send[r], gathered[r], COUNT, ncclFloat32, comms[r], streams[r]), comms[r]);
  NCCL_OK(ncclGroupEnd(), NULL);
  for (int r = 0; r < NCOMMS; ++r) {
    CUDA_OK(cudaStreamSynchronize(streams[r]));
    ncclResult_t async = ncclInternalError;
    NCCL_OK(ncclCommGetAsyncError(comms[r], &async), comms[r]);
    CHECK(async == ncclSuccess, "round %d comm %d: async error %d (%s)", round, r, async, ncclGetLastError(comms[r]));
    /* GPU to GPU its slots are GPU memory; staged it holds none. */
    const char* direct = getenv("STRATA_GPU_DIRECT");
    uint64_t held = 0;
    NCCL_OK(ncclCommMemStats(comms[r], ncclStatGpuMemTotal, &held), comms[r]);
    if (direct && strcmp(direct, "2") == 0)
      CHECK(held > 0, "round %d comm %d: no GPU memory held over the cuda transport", round, r);
    if (direct && strcmp(direct, "0") == 0)
      CHECK(held == 0, "round %d comm %d: %llu bytes of GPU memory held, staged", round, r, (unsigned long long)held);
    CUDA_OK(cudaMemcpy(host, recv[r], COUNT * sizeof(float), cudaMemcpyDeviceToHost));
    int wrong = 0;
    for (size_t i = 0; i < COUNT && wrong < 3; ++i) {
      double want = 0;
      for (int k = 0; k < NCOMMS; ++k) want += value(k, i);
      if (host[i] != (float)want) {
        CHECK(0, "round %d comm %d: allreduce element %zu is %g, want %g", round, r, i, host[i], want);
        ++wrong;
      }
    }
    CUDA_OK(cudaMemcpy(host, gathered[r], COUNT * NCOMMS * sizeof(float), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < COUNT * NCOMMS && wrong < 6; ++i) {
      const float want = value((int)(i / COUNT), i % COUNT);
      if (host[i] != want) {
        CHECK(0, "round %d comm %d: allgather element %zu is %g, want %g", round, r, i, host[i], want);
        ++wrong;
      }
    }
  }
  /* One after the other, as a thread that owns both ranks destroys them. */
  for (int r = 0; r < NCOMMS; ++r) {
    NCCL_OK(ncclMemFree(send[r]), comms[r]);
    NCCL_OK(ncclMemFree(recv[r]), comms[r]);
    NCCL_OK(ncclMemFree(gathered[r]), comms[r]);
    NCCL_OK(ncclCommDestroy(comms[r]), NULL);
    CUDA_OK(cudaStreamDestroy(streams[r]));
  }
  free(host);
}

int main(void) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n < 1) {
    printf("SKIP: no usable GPU (%s)\n", e != cudaSuccess ? cudaGetErrorName(e) : "no device");
    return 77;
  }
  alarm(170); /* a hang fails the test, with the default action's status */
  for (int round = 0; round < 2; ++round) round_(round);
  if (failures == 0) printf("%d ranks of one process on GPU 0: allreduce and allgather on streams matched\n", NCOMMS);
  return failures ? 1 : 0;
}
