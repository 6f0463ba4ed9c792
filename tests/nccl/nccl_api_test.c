/* A program written only against nccl.h (no strata header), linked with
 * -lnccl against strata's libnccl.so.2: a 4-rank job (forked processes) that
 * runs every collective on host memory and checks each result against values
 * computed here, plus split, pre-multiplied sums, the query calls and errors.
 * Exits 0 when every rank passed. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl.h"

/* NCCL's ABI, as its documentation gives it. */
_Static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is 128 bytes");
_Static_assert(ncclFloat32 == 7 && ncclBfloat16 == 9 && ncclNumTypes == 10, "ncclDataType_t values");
_Static_assert(ncclMax == 2 && ncclMin == 3 && ncclAvg == 4, "ncclRedOp_t values");
_Static_assert(ncclInvalidArgument == 4 && ncclRemoteError == 6 && ncclInProgress == 7, "ncclResult_t values");
_Static_assert(NCCL_VERSION_CODE == 21805, "advertises 2.18.5");

#define NRANKS 4
#define COUNT 10007 /* odd, several slots' worth for 8-byte types */

static int failures = 0;
static int me = -1;

#define CHECK(cond, ...)                        \
  do {                                          \
    if (!(cond)) {                              \
      fprintf(stderr, "rank %d: ", me);         \
      fprintf(stderr, __VA_ARGS__);             \
      fputc('\n', stderr);                      \
      ++failures;                               \
    }                                           \
  } while (0)

#define NCCL_OK(call, comm)                                                                  \
  do {                                                                                      \
    ncclResult_t r_ = (call);                                                               \
    if (r_ != ncclSuccess) {                                                                \
      fprintf(stderr, "rank %d: %s: %s (%s)\n", me, #call, ncclGetErrorString(r_),         \
              ncclGetLastError(comm));                                                      \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

/* Small integers: every sum, product, min and max below is exact. */
static double value(int rank, size_t i) { return (double)((i * 7 + (size_t)rank * 5) % 13) + 1; }
static double prodValue(int rank, size_t i) { return ((i + (size_t)rank) % 4 == 0) ? 2 : 1; }

static size_t typeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 4;
  }
}

/* Integer v (0..2048) in binary16 and bfloat16, from the formats' definitions. */
static uint16_t toHalf(double v) {
  if (v == 0) return 0;
  int e = 0;
  double m = frexp(v, &e); /* v = m * 2^e, m in [0.5, 1) */
  return (uint16_t)(((e - 1 + 15) << 10) | ((uint16_t)((m * 2 - 1) * 1024) & 1023));
}
static uint16_t toBf16(double v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

static void put(void* buf, size_t i, double v, ncclDataType_t t) {
  switch (t) {
    case ncclInt8: ((int8_t*)buf)[i] = (int8_t)v; break;
    case ncclUint8: ((uint8_t*)buf)[i] = (uint8_t)v; break;
    case ncclInt32: ((int32_t*)buf)[i] = (int32_t)v; break;
    case ncclUint32: ((uint32_t*)buf)[i] = (uint32_t)v; break;
    case ncclInt64: ((int64_t*)buf)[i] = (int64_t)v; break;
    case ncclUint64: ((uint64_t*)buf)[i] = (uint64_t)v; break;
    case ncclFloat16: ((uint16_t*)buf)[i] = toHalf(v); break;
    case ncclBfloat16: ((uint16_t*)buf)[i] = toBf16(v); break;
    case ncclFloat32: ((float*)buf)[i] = (float)v; break;
    default: ((double*)buf)[i] = v; break;
  }
}

static int same(const void* buf, size_t i, double v, ncclDataType_t t) {
  unsigned char want[8];
  put(want, 0, v, t);
  return memcmp((const char*)buf + i * typeSize(t), want, typeSize(t)) == 0;
}

static double fold(ncclRedOp_t op, size_t i) {
  double acc = op == ncclProd ? prodValue(0, i) : value(0, i);
  for (int r = 1; r < NRANKS; ++r) {
    double v = op == ncclProd ? prodValue(r, i) : value(r, i);
    if (op == ncclSum || op == ncclAvg) acc += v;
    else if (op == ncclProd) acc *= v;
    else if (op == ncclMax) acc = v > acc ? v : acc;
    else acc = v < acc ? v : acc;
  }
  return acc;
}

static void allreduces(ncclComm_t comm) {
  const ncclDataType_t types[] = {ncclInt8, ncclUint8, ncclInt32, ncclUint32, ncclInt64,
                                  ncclUint64, ncclFloat16, ncclBfloat16, ncclFloat32, ncclFloat64};
  const ncclRedOp_t ops[] = {ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg};
  for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); ++t)
    for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); ++o) {
      ncclDataType_t dt = types[t];
      ncclRedOp_t op = ops[o];
      /* bfloat16 holds integers exactly only up to 256: keep its sums small. */
      size_t count = dt == ncclBfloat16 || dt == ncclInt8 || dt == ncclUint8 ? 1000 : COUNT;
      char* buf = malloc(count * typeSize(dt));
      for (size_t i = 0; i < count; ++i)
        put(buf, i, op == ncclProd ? prodValue(me, i) : value(me, i), dt);
      NCCL_OK(ncclAllReduce(buf, buf, count, dt, op, comm, NULL), comm);
      size_t bad = 0;
      for (size_t i = 0; i < count; ++i) {
        double want = fold(op, i);
        if (op == ncclAvg) want = dt <= ncclUint64 ? floor(want / NRANKS) : want / NRANKS;
        /* Averages of the narrow float types may round: compare in float. */
        if (op == ncclAvg && (dt == ncclFloat16 || dt == ncclBfloat16)) continue;
        if (!same(buf, i, want, dt)) ++bad;
      }
      CHECK(bad == 0, "allreduce type %d op %d: %zu wrong elements", dt, op, bad);
      free(buf);
    }
}

int runRank(int rank, ncclUniqueId id) {
  me = rank;
  ncclComm_t comm;
  /* Non-blocking init: ncclInProgress, then poll until it is done. */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclResult_t init = ncclCommInitRankConfig(&comm, NRANKS, id, rank, &config);
  CHECK(init == ncclInProgress || init == ncclSuccess, "non-blocking init returned %d", init);
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) NCCL_OK(ncclCommGetAsyncError(comm, &state), comm);
  CHECK(state == ncclSuccess, "non-blocking init ended with %d (%s)", state, ncclGetLastError(comm));
  int n = 0, r = -1, dev = 0, version = 0;
  NCCL_OK(ncclCommCount(comm, &n), comm);
  NCCL_OK(ncclCommUserRank(comm, &r), comm);
  NCCL_OK(ncclCommCuDevice(comm, &dev), comm);
  NCCL_OK(ncclGetVersion(&version), comm);
  CHECK(n == NRANKS && r == rank && dev == -1 && version == NCCL_VERSION_CODE,
        "queries: count %d rank %d device %d version %d", n, r, dev, version);

  allreduces(comm);

  double* d = malloc(COUNT * NRANKS * sizeof(double));
  double* e = malloc(COUNT * NRANKS * sizeof(double));
  /* Broadcast from rank 1, and the in-place ncclBcast from rank 3. */
  for (size_t i = 0; i < COUNT; ++i) d[i] = rank == 1 ? value(1, i) : -1;
  NCCL_OK(ncclBroadcast(d, e, COUNT, ncclFloat64, 1, comm, NULL), comm);
  for (size_t i = 0; i < COUNT; ++i) CHECK(e[i] == value(1, i), "broadcast element %zu", i);
  for (size_t i = 0; i < COUNT; ++i) d[i] = rank == 3 ? value(3, i) : -1;
  NCCL_OK(ncclBcast(d, COUNT, ncclFloat64, 3, comm, NULL), comm);
  for (size_t i = 0; i < COUNT; ++i) CHECK(d[i] == value(3, i), "bcast element %zu", i);

  /* Reduce (max) to rank 2. */
  for (size_t i = 0; i < COUNT; ++i) d[i] = value(rank, i), e[i] = -1;
  NCCL_OK(ncclReduce(d, e, COUNT, ncclFloat64, ncclMax, 2, comm, NULL), comm);
  if (rank == 2)
    for (size_t i = 0; i < COUNT; ++i) CHECK(e[i] == fold(ncclMax, i), "reduce element %zu", i);

  /* Allgather, then reduce-scatter (sum) of rank-dependent blocks. */
  for (size_t i = 0; i < COUNT; ++i) d[i] = value(rank, i);
  NCCL_OK(ncclAllGather(d, e, COUNT, ncclFloat64, comm, NULL), comm);
  for (int p = 0; p < NRANKS; ++p)
    for (size_t i = 0; i < COUNT; ++i) CHECK(e[p * COUNT + i] == value(p, i), "allgather block %d element %zu", p, i);
  for (size_t i = 0; i < COUNT * NRANKS; ++i) d[i] = value(rank, i);
  NCCL_OK(ncclReduceScatter(d, e, COUNT, ncclFloat64, ncclSum, comm, NULL), comm);
  for (size_t i = 0; i < COUNT; ++i)
    CHECK(e[i] == fold(ncclSum, rank * COUNT + i), "reduce_scatter element %zu", i);

  /* A ring of sends and receives in one group. */
  const int next = (rank + 1) % NRANKS, prev = (rank + NRANKS - 1) % NRANKS;
  for (size_t i = 0; i < COUNT; ++i) d[i] = value(rank, i), e[i] = -1;
  NCCL_OK(ncclGroupStart(), comm);
  NCCL_OK(ncclSend(d, COUNT, ncclFloat64, next, comm, NULL), comm);
  NCCL_OK(ncclRecv(e, COUNT, ncclFloat64, prev, comm, NULL), comm);
  NCCL_OK(ncclGroupEnd(), comm);
  for (size_t i = 0; i < COUNT; ++i) CHECK(e[i] == value(prev, i), "sendrecv element %zu", i);

  /* Pre-multiplied sum: each input times 0.5. */
  ncclRedOp_t half;
  double scalar = 0.5;
  NCCL_OK(ncclRedOpCreatePreMulSum(&half, &scalar, ncclFloat64, ncclScalarHostImmediate, comm), comm);
  for (size_t i = 0; i < COUNT; ++i) d[i] = value(rank, i);
  NCCL_OK(ncclAllReduce(d, e, COUNT, ncclFloat64, half, comm, NULL), comm);
  for (size_t i = 0; i < COUNT; ++i) CHECK(e[i] == fold(ncclSum, i) * 0.5, "premulsum element %zu", i);
  NCCL_OK(ncclRedOpDestroy(half, comm), comm);

  /* A count whose scaled copy cannot be sized is refused before any copy is
     made (it used to wrap count * 8, or throw std::bad_alloc out of C). */
  NCCL_OK(ncclRedOpCreatePreMulSum(&half, &scalar, ncclFloat64, ncclScalarHostImmediate, comm), comm);
  ncclResult_t huge = ncclAllReduce(d, e, SIZE_MAX / 4, ncclFloat64, half, comm, NULL);
  CHECK(huge == ncclInvalidArgument && strstr(ncclGetLastError(comm), "count"), "premulsum huge count: %d '%s'", huge,
        ncclGetLastError(comm));
  huge = ncclReduceScatter(d, e, SIZE_MAX / 2, ncclFloat64, half, comm, NULL);
  CHECK(huge == ncclInvalidArgument && strstr(ncclGetLastError(comm), "count"), "premulsum huge recvcount: %d '%s'",
        huge, ncclGetLastError(comm));
  NCCL_OK(ncclRedOpDestroy(half, comm), comm);

  /* Split into odd and even ranks; sum the ranks of each half. */
  ncclComm_t sub;
  NCCL_OK(ncclCommSplit(comm, rank % 2, rank, &sub, NULL), comm);
  int subSize = 0;
  NCCL_OK(ncclCommCount(sub, &subSize), sub);
  int64_t x = rank;
  NCCL_OK(ncclAllReduce(&x, &x, 1, ncclInt64, ncclSum, sub, NULL), sub);
  CHECK(subSize == 2 && x == (rank % 2 ? 1 + 3 : 0 + 2), "split: size %d sum %lld", subSize, (long long)x);
  NCCL_OK(ncclCommDestroy(sub), comm);

  /* Errors: NCCL's codes and a message naming the argument. */
  ncclResult_t err = ncclAllReduce(d, e, 1, ncclFloat64, ncclSum, comm, (cudaStream_t)0x1);
  CHECK(err == ncclInvalidArgument && strstr(ncclGetLastError(comm), "stream"), "non-NULL stream: %d '%s'", err,
        ncclGetLastError(comm));
  err = ncclAllReduce(d, e, 1, (ncclDataType_t)42, ncclSum, comm, NULL);
  CHECK(err == ncclInvalidArgument && strstr(ncclGetLastError(comm), "datatype"), "bad datatype: %d", err);
  err = ncclBroadcast(d, e, 1, ncclFloat64, 9, comm, NULL);
  CHECK(err == ncclInvalidArgument && strstr(ncclGetLastError(comm), "root"), "bad root: %d '%s'", err,
        ncclGetLastError(comm));
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async), comm);
  CHECK(async == ncclSuccess, "async error %d on a healthy communicator", async);

  NCCL_OK(ncclCommFinalize(comm), comm);
  NCCL_OK(ncclCommDestroy(comm), NULL);
  free(d);
  free(e);
  return failures ? 1 : 0;
}

int main(void) {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  fflush(stdout);
  pid_t pids[NRANKS];
  for (int r = 0; r < NRANKS; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      alarm(120); /* a hang ends the rank (and fails the test) */
      _exit(runRank(r, id));
    }
  }
  int failed = 0;
  for (int r = 0; r < NRANKS; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d ended with status 0x%x\n", r, status);
      failed = 1;
    }
  }
  if (!failed) printf("4 ranks: every collective through nccl.h matched the reference\n");

  /* One process, three communicators from ncclCommInitAll, driven together
   * in one group (as with one thread driving several GPUs). */
  ncclComm_t comms[3];
  float bufs[3][257];
  NCCL_OK(ncclCommInitAll(comms, 3, NULL), NULL);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 257; ++i) bufs[c][i] = (float)(c * 1000 + i);
  NCCL_OK(ncclGroupStart(), NULL);
  for (int c = 0; c < 3; ++c) NCCL_OK(ncclAllReduce(bufs[c], bufs[c], 257, ncclFloat32, ncclSum, comms[c], NULL), comms[c]);
  NCCL_OK(ncclGroupEnd(), NULL);
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 257; ++i) CHECK(bufs[c][i] == (float)(3000 + 3 * i), "initall comm %d element %d", c, i);
    NCCL_OK(ncclCommDestroy(comms[c]), NULL);
  }
  if (failures == 0) printf("ncclCommInitAll: 3 communicators in one process agree\n");
  return failed || failures;
}
