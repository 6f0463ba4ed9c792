/* The NCCL library's stream path on a real GPU, seen only through nccl.h and
 * the CUDA runtime: ranks (forked processes, 2 or the argument) sharing GPU 0 run every
 * collective on device buffers from ncclMemAlloc, enqueued on a non-blocking
 * stream (several back to back, and a pre-multiplied sum whose device scalar
 * is written on the stream just before), and compare the results copied
 * back with values computed here. Exits 77 (skipped) where no GPU is usable. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "nccl_checks.h"

/* Ranks sharing GPU 0: the program's argument, 2 without one. */
static int nranks = 2;
#define NRANKS nranks
#define COUNT 100003 /* several chunks of staging, and not a multiple of anything */


#define CUDA_OK(call)                                                                          \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "rank %d: %s: %s\n", me, #call, cudaGetErrorString(e_));                \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

/* Small integers, so that sums of NRANKS of them are exact in every type. */
static float value(int rank, size_t i) { return (float)((i * 7 + (size_t)rank * 5) % 13) + 1; }

/* binary16 of an integer 1..2048. */
static uint16_t half(float v) {
  int e = 0;
  while ((float)(1 << (e + 1)) <= v) ++e;
  return (uint16_t)(((e + 15) << 10) | (uint16_t)((v / (float)(1 << e) - 1) * 1024));
}

static cudaStream_t stream;
static ncclComm_t comm;

/* count floats of rank `rank`'s input pattern, times `scale`, into device memory. */
static void upload(void* d, size_t count, int rank, float scale) {
  float* h = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) h[i] = value(rank, i) * scale;
  CUDA_OK(cudaMemcpyAsync(d, h, count * sizeof(float), cudaMemcpyHostToDevice, stream));
  CUDA_OK(cudaStreamSynchronize(stream)); /* h is freed next */
  free(h);
}

/* Waits for the stream, then copies count floats back. */
static float* download(const void* d, size_t count) {
  float* h = malloc(count * sizeof(float));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(h, d, count * sizeof(float), cudaMemcpyDeviceToHost));
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async), comm);
  CHECK(async == ncclSuccess, "async error %d (%s)", async, ncclGetLastError(comm));
  return h;
}

static float sumOver(size_t i) {
  float s = 0;
  for (int r = 0; r < NRANKS; ++r) s += value(r, i);
  return s;
}

static void collectives(void) {
  const size_t bytes = COUNT * NRANKS * sizeof(float);
  void *a, *b;
  NCCL_OK(ncclMemAlloc(&a, bytes), comm);
  NCCL_OK(ncclMemAlloc(&b, bytes), comm);

  /* All-reduce out of place, then twice in place, queued back to back. */
  upload(a, COUNT, me, 1);
  NCCL_OK(ncclAllReduce(a, b, COUNT, ncclFloat32, ncclSum, comm, stream), comm);
  NCCL_OK(ncclAllReduce(b, b, COUNT, ncclFloat32, ncclSum, comm, stream), comm);
  NCCL_OK(ncclAllReduce(b, b, COUNT, ncclFloat32, ncclMax, comm, stream), comm);
  float* h = download(b, COUNT);
  size_t bad = 0;
  for (size_t i = 0; i < COUNT; ++i) bad += h[i] != sumOver(i) * NRANKS;
  CHECK(bad == 0, "allreduce x3 on the stream: %zu wrong elements", bad);
  free(h);

  /* Broadcast from rank 1, reduce (max) to rank 0. */
  upload(a, COUNT, me == 1 ? 1 : 9, 1);
  NCCL_OK(ncclBroadcast(a, b, COUNT, ncclFloat32, 1, comm, stream), comm);
  h = download(b, COUNT);
  bad = 0;
  for (size_t i = 0; i < COUNT; ++i) bad += h[i] != value(1, i);
  CHECK(bad == 0, "broadcast: %zu wrong elements", bad);
  free(h);
  upload(a, COUNT, me, 1);
  NCCL_OK(ncclReduce(a, b, COUNT, ncclFloat32, ncclMax, 0, comm, stream), comm);
  h = download(b, COUNT);
  bad = 0;
  for (size_t i = 0; me == 0 && i < COUNT; ++i) {
    float want = 0;
    for (int r = 0; r < NRANKS; ++r) want = value(r, i) > want ? value(r, i) : want;
    bad += h[i] != want;
  }
  CHECK(bad == 0, "reduce: %zu wrong elements", bad);
  free(h);

  /* All-gather, reduce-scatter, all-to-all. */
  upload(a, COUNT, me, 1);
  NCCL_OK(ncclAllGather(a, b, COUNT, ncclFloat32, comm, stream), comm);
  h = download(b, COUNT * NRANKS);
  bad = 0;
  for (int p = 0; p < NRANKS; ++p)
    for (size_t i = 0; i < COUNT; ++i) bad += h[p * COUNT + i] != value(p, i);
  CHECK(bad == 0, "allgather: %zu wrong elements", bad);
  free(h);
  upload(a, COUNT * NRANKS, me, 1);
  NCCL_OK(ncclReduceScatter(a, b, COUNT, ncclFloat32, ncclSum, comm, stream), comm);
  h = download(b, COUNT);
  bad = 0;
  for (size_t i = 0; i < COUNT; ++i) bad += h[i] != sumOver(me * COUNT + i);
  CHECK(bad == 0, "reduce_scatter: %zu wrong elements", bad);
  free(h);
  upload(a, COUNT * NRANKS, me, 1);
  NCCL_OK(ncclAlltoAll(a, b, COUNT, ncclFloat32, comm, stream), comm);
  h = download(b, COUNT * NRANKS);
  bad = 0;
  for (int r = 0; r < NRANKS; ++r)
    for (size_t i = 0; i < COUNT; ++i) bad += h[r * COUNT + i] != value(r, me * COUNT + i);
  CHECK(bad == 0, "alltoall: %zu wrong elements", bad);
  free(h);

  /* Gather to rank 1 and scatter from rank 0 (out of place). */
  upload(a, COUNT, me, 1);
  NCCL_OK(ncclGather(a, b, COUNT, ncclFloat32, 1, comm, stream), comm);
  h = download(b, COUNT * NRANKS);
  bad = 0;
  for (int p = 0; me == 1 && p < NRANKS; ++p)
    for (size_t i = 0; i < COUNT; ++i) bad += h[p * COUNT + i] != value(p, i);
  CHECK(bad == 0, "gather: %zu wrong elements", bad);
  free(h);
  upload(a, COUNT * NRANKS, me == 0 ? 0 : 9, 1);
  NCCL_OK(ncclScatter(a, b, COUNT, ncclFloat32, 0, comm, stream), comm);
  h = download(b, COUNT);
  bad = 0;
  for (size_t i = 0; i < COUNT; ++i) bad += h[i] != value(0, me * COUNT + i);
  CHECK(bad == 0, "scatter: %zu wrong elements", bad);
  free(h);

  /* A ring of sends and receives in one group. */
  const int next = (me + 1) % NRANKS, prev = (me + NRANKS - 1) % NRANKS;
  upload(a, COUNT, me, 1);
  NCCL_OK(ncclGroupStart(), comm);
  NCCL_OK(ncclSend(a, COUNT, ncclFloat32, next, comm, stream), comm);
  NCCL_OK(ncclRecv(b, COUNT, ncclFloat32, prev, comm, stream), comm);
  NCCL_OK(ncclGroupEnd(), comm);
  h = download(b, COUNT);
  bad = 0;
  for (size_t i = 0; i < COUNT; ++i) bad += h[i] != value(prev, i);
  CHECK(bad == 0, "send/recv ring: %zu wrong elements", bad);
  free(h);

  /* Pre-multiplied sums: a device scalar (read when the call runs: it is
     written on the stream just before) and a host scalar. */
  float* scalar;
  CUDA_OK(cudaMalloc((void**)&scalar, sizeof(float)));
  const float quarter = 0.25f, half_ = 0.5f;
  ncclRedOp_t onDevice, onHost;
  NCCL_OK(ncclRedOpCreatePreMulSum(&onDevice, scalar, ncclFloat32, ncclScalarDevice, comm), comm);
  NCCL_OK(ncclRedOpCreatePreMulSum(&onHost, (void*)&half_, ncclFloat32, ncclScalarHostImmediate, comm), comm);
  upload(a, COUNT, me, 1);
  CUDA_OK(cudaMemcpyAsync(scalar, &quarter, sizeof(float), cudaMemcpyHostToDevice, stream));
  NCCL_OK(ncclAllReduce(a, b, COUNT, ncclFloat32, onDevice, comm, stream), comm);
  NCCL_OK(ncclAllReduce(b, b, COUNT, ncclFloat32, onHost, comm, stream), comm);
  h = download(b, COUNT);
  bad = 0;
  for (size_t i = 0; i < COUNT; ++i) bad += h[i] != sumOver(i) * 0.25f * NRANKS * 0.5f;
  CHECK(bad == 0, "premulsum, device then host scalar: %zu wrong elements", bad);
  free(h);
  NCCL_OK(ncclRedOpDestroy(onDevice, comm), comm);
  NCCL_OK(ncclRedOpDestroy(onHost, comm), comm);
  CUDA_OK(cudaFree(scalar));

  /* half on the device, and host memory on a stream. */
  uint16_t* h16 = malloc(COUNT * sizeof(uint16_t));
  for (size_t i = 0; i < COUNT; ++i) h16[i] = half(value(me, i));
  CUDA_OK(cudaMemcpyAsync(a, h16, COUNT * sizeof(uint16_t), cudaMemcpyHostToDevice, stream));
  NCCL_OK(ncclAllReduce(a, a, COUNT, ncclFloat16, ncclSum, comm, stream), comm);
  CUDA_OK(cudaMemcpyAsync(h16, a, COUNT * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  bad = 0;
  for (size_t i = 0; i < COUNT; ++i) bad += h16[i] != half(sumOver(i));
  CHECK(bad == 0, "allreduce half: %zu wrong elements", bad);
  free(h16);
  float* host = malloc(COUNT * sizeof(float));
  for (size_t i = 0; i < COUNT; ++i) host[i] = value(me, i);
  NCCL_OK(ncclAllReduce(host, host, COUNT, ncclFloat32, ncclSum, comm, stream), comm);
  CUDA_OK(cudaStreamSynchronize(stream));
  bad = 0;
  for (size_t i = 0; i < COUNT; ++i) bad += host[i] != sumOver(i);
  CHECK(bad == 0, "allreduce of host memory on a stream: %zu wrong elements", bad);
  free(host);

  NCCL_OK(ncclMemFree(a), comm);
  NCCL_OK(ncclMemFree(b), comm);
}

static int runRank(int rank, ncclUniqueId id);
static int rankBody(int rank, void* id) { return runRank(rank, *(ncclUniqueId*)id); }

static int runRank(int rank, ncclUniqueId id) {
  me = rank;
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  NCCL_OK(ncclCommInitRank(&comm, NRANKS, id, rank), NULL);
  collectives();
  NCCL_OK(ncclCommDestroy(comm), NULL);
  CUDA_OK(cudaStreamDestroy(stream));
  return failures ? 1 : 0;
}

int main(int argc, char** argv) {
  if (argc > 1) nranks = atoi(argv[1]);
  if (nranks < 2 || nranks > 8) {
    fprintf(stderr, "usage: %s [ranks, 2..8]\n", argv[0]);
    return 2;
  }
  /* CUDA is first touched in the children: a CUDA context does not survive fork. */
  pid_t probe = fork();
  if (probe == 0) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
      printf("SKIP: no usable GPU (%s)\n", e != cudaSuccess ? cudaGetErrorName(e) : "no device");
      fflush(stdout);
      _exit(77);
    }
    _exit(0);
  }
  int status = 0;
  waitpid(probe, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return WIFEXITED(status) ? WEXITSTATUS(status) : 1;

  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  const int failed = runRanks(NRANKS, rankBody, &id, 170);
  if (!failed) printf("%d ranks on GPU 0: every collective on a stream matched the reference\n", NRANKS);
  return failed;
}
