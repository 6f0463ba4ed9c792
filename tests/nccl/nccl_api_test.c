/* A program written only against nccl.h (no strata header), linked with
 * -lnccl against strata's libnccl.so.2: a 4-rank job (forked processes) that
 * runs every collective on host memory and checks each result against values
 * computed here, plus split, pre-multiplied sums, the query calls, the GPU
 * calls where no GPU is usable, and errors, while a second thread polls the
 * communicator's async error as PyTorch's watchdog does. Exits 0 when every
 * rank passed. */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl_checks.h"

/* NCCL's ABI, as its documentation gives it. */
_Static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId is 128 bytes");
_Static_assert(ncclFloat32 == 7 && ncclBfloat16 == 9 && ncclNumTypes == 10, "ncclDataType_t values");
_Static_assert(ncclMax == 2 && ncclMin == 3 && ncclAvg == 4, "ncclRedOp_t values");
_Static_assert(ncclInvalidArgument == 4 && ncclRemoteError == 6 && ncclInProgress == 7, "ncclResult_t values");
_Static_assert(NCCL_VERSION_CODE == 22304, "advertises 2.23.4");

#define NRANKS 4
#define COUNT 10007 /* odd, several slots' worth for 8-byte types */


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

/* v rounded to nearest even with p significand bits, exponent at least emin
 * (below it, the format's subnormal steps): the reference for binary16 (11,
 * -14), bfloat16 (8, -126), float (24, -126) and double (53, -1022). */
static double roundTo(double v, int p, int emin) {
  if (v == 0) return v;
  int e = ilogb(v);
  if (e < emin) e = emin;
  return ldexp(nearbyint(ldexp(v, p - 1 - e)), e - (p - 1));
}

/* Encoding of a normal v (or zero) that the format holds exactly: p
 * significand bits, exponent bias `bias`. */
static uint16_t encode16(double v, int p, int bias) {
  if (v == 0) return 0;
  const int e = ilogb(v);
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  const uint16_t mant = (uint16_t)ldexp(ldexp(fabs(v), -e) - 1, p - 1);
  return (uint16_t)(sign | ((e + bias) << (p - 1)) | mant);
}

static double decodeHalf(uint16_t h) {
  const int exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  const double mag = exp == 0 ? ldexp(mant, -24) : ldexp(1024 + mant, exp - 25);
  return (h & 0x8000) ? -mag : mag;
}

static double decodeBf16(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

/* The floating types of pre-multiplied sums: precision, least exponent and
 * how an element is read and written. */
typedef struct {
  ncclDataType_t type;
  const char* name;
  int p, emin;
} FloatType;

static const FloatType kFloatTypes[] = {{ncclFloat16, "half", 11, -14},
                                        {ncclBfloat16, "bfloat16", 8, -126},
                                        {ncclFloat32, "float", 24, -126},
                                        {ncclFloat64, "double", 53, -1022}};

/* Stores v, which the type holds exactly. */
static void putFloat(void* buf, size_t i, double v, const FloatType* t) {
  switch (t->type) {
    case ncclFloat16: ((uint16_t*)buf)[i] = encode16(v, 11, 15); break;
    case ncclBfloat16: ((uint16_t*)buf)[i] = encode16(v, 8, 127); break;
    case ncclFloat32: ((float*)buf)[i] = (float)v; break;
    default: ((double*)buf)[i] = v; break;
  }
}

static double getFloat(const void* buf, size_t i, const FloatType* t) {
  switch (t->type) {
    case ncclFloat16: return decodeHalf(((const uint16_t*)buf)[i]);
    case ncclBfloat16: return decodeBf16(((const uint16_t*)buf)[i]);
    case ncclFloat32: return ((const float*)buf)[i];
    default: return ((const double*)buf)[i];
  }
}

/* Inputs with every sign and no pattern of exact products. */
static double premulInput(int rank, size_t i, const FloatType* t) {
  return roundTo(((double)((i * 7 + (size_t)rank * 3) % 23) - 11) * 0.2987 + 0.0123, t->p, t->emin);
}
static double premulScalar(int rank, const FloatType* t) { return roundTo(1.0 / 3 + 0.1 * rank, t->p, t->emin); }

/* ncclRedOpCreatePreMulSum with host scalars (a different one per rank, as
 * nccl-tests uses) on host buffers, each type against a float64 reference:
 * the sum of products within the rounding of the type (each product and each
 * partial sum rounds once), and, with rank 0 alone contributing, the product
 * rounded once to nearest even, exactly. */
static void premulSums(ncclComm_t comm) {
  enum { N = 1031 };
  for (size_t k = 0; k < sizeof(kFloatTypes) / sizeof(kFloatTypes[0]); ++k) {
    const FloatType* t = &kFloatTypes[k];
    const size_t elem = typeSize(t->type);
    unsigned char* in = malloc(N * elem);
    unsigned char* out = malloc(N * elem);
    unsigned char scalar[8];
    putFloat(scalar, 0, premulScalar(me, t), t);
    ncclRedOp_t op;
    NCCL_OK(ncclRedOpCreatePreMulSum(&op, scalar, t->type, ncclScalarHostImmediate, comm), comm);
    /* Writing over the scalar after creation changes nothing: it was copied. */
    memset(scalar, 0, sizeof(scalar));

    for (size_t i = 0; i < N; ++i) putFloat(in, i, premulInput(me, i, t), t);
    NCCL_OK(ncclAllReduce(in, out, N, t->type, op, comm, NULL), comm);
    const double eps = ldexp(1, 1 - t->p);
    size_t bad = 0;
    for (size_t i = 0; i < N; ++i) {
      double want = 0, magnitude = 0;
      for (int r = 0; r < NRANKS; ++r) {
        const double term = premulInput(r, i, t) * premulScalar(r, t);
        want += term;
        magnitude += fabs(term);
      }
      if (fabs(getFloat(out, i, t) - want) > NRANKS * eps * magnitude) {
        if (bad == 0)
          fprintf(stderr, "rank %d: premulsum %s element %zu: %.17g, want %.17g\n", me, t->name, i,
                  getFloat(out, i, t), want);
        ++bad;
      }
    }
    CHECK(bad == 0, "premulsum %s: %zu elements outside the type's rounding", t->name, bad);

    for (size_t i = 0; i < N; ++i) putFloat(in, i, me == 0 ? premulInput(0, i, t) : 0, t);
    NCCL_OK(ncclAllReduce(in, out, N, t->type, op, comm, NULL), comm);
    bad = 0;
    for (size_t i = 0; i < N; ++i)
      if (getFloat(out, i, t) != roundTo(premulInput(0, i, t) * premulScalar(0, t), t->p, t->emin)) ++bad;
    CHECK(bad == 0, "premulsum %s: %zu products not rounded to nearest even", t->name, bad);
    NCCL_OK(ncclRedOpDestroy(op, comm), comm);
    free(in);
    free(out);
  }

  /* Inside a group the call is only queued: the scaled copy of the input
     must live until ncclGroupEnd. */
  float quarter = 0.25f;
  ncclRedOp_t op;
  NCCL_OK(ncclRedOpCreatePreMulSum(&op, &quarter, ncclFloat32, ncclScalarHostImmediate, comm), comm);
  float* in = malloc(COUNT * NRANKS * sizeof(float));
  float* out = malloc(COUNT * sizeof(float));
  for (size_t i = 0; i < COUNT * NRANKS; ++i) in[i] = (float)value(me, i);
  NCCL_OK(ncclGroupStart(), comm);
  NCCL_OK(ncclReduceScatter(in, out, COUNT, ncclFloat32, op, comm, NULL), comm);
  NCCL_OK(ncclGroupEnd(), comm);
  size_t bad = 0;
  for (size_t i = 0; i < COUNT; ++i) bad += out[i] != (float)(fold(ncclSum, me * COUNT + i) * 0.25);
  CHECK(bad == 0, "premulsum reduce_scatter in a group: %zu wrong elements", bad);
  NCCL_OK(ncclRedOpDestroy(op, comm), comm);
  free(in);
  free(out);
}

/* ncclGather, ncclScatter and ncclAlltoAll on host buffers, in and out of
 * place, each against blocks computed here. */
static void rootedAndAllToAll(ncclComm_t comm) {
  enum { C = 1001 };
  double* blocks = malloc(C * NRANKS * sizeof(double));
  double* mine = malloc(C * sizeof(double));

  /* Gather to rank 2 out of place: other ranks' recvbuff is not touched. */
  for (size_t i = 0; i < C; ++i) mine[i] = value(me, i);
  for (size_t i = 0; i < C * NRANKS; ++i) blocks[i] = -7;
  NCCL_OK(ncclGather(mine, blocks, C, ncclFloat64, 2, comm, NULL), comm);
  size_t bad = 0;
  for (int p = 0; p < NRANKS; ++p)
    for (size_t i = 0; i < C; ++i) bad += blocks[p * C + i] != (me == 2 ? value(p, i) : -7);
  CHECK(bad == 0, "gather to rank 2: %zu wrong elements", bad);

  /* Gather to rank 1 in place: the root's block already sits in recvbuff. */
  for (size_t i = 0; i < C * NRANKS; ++i) blocks[i] = -7;
  for (size_t i = 0; i < C; ++i) (me == 1 ? blocks + C : mine)[i] = value(me, i) + 100;
  NCCL_OK(ncclGather(me == 1 ? blocks + C : mine, blocks, C, ncclFloat64, 1, comm, NULL), comm);
  bad = 0;
  if (me == 1)
    for (int p = 0; p < NRANKS; ++p)
      for (size_t i = 0; i < C; ++i) bad += blocks[p * C + i] != value(p, i) + 100;
  CHECK(bad == 0, "gather in place to rank 1: %zu wrong elements", bad);

  /* Scatter from rank 3 out of place, then from rank 0 in place. */
  for (int p = 0; p < NRANKS; ++p)
    for (size_t i = 0; i < C; ++i) blocks[p * C + i] = me == 3 ? value(p, i) * 3 : -7;
  for (size_t i = 0; i < C; ++i) mine[i] = -1;
  NCCL_OK(ncclScatter(blocks, mine, C, ncclFloat64, 3, comm, NULL), comm);
  bad = 0;
  for (size_t i = 0; i < C; ++i) bad += mine[i] != value(me, i) * 3;
  CHECK(bad == 0, "scatter from rank 3: %zu wrong elements", bad);
  for (int p = 0; p < NRANKS; ++p)
    for (size_t i = 0; i < C; ++i) blocks[p * C + i] = me == 0 ? value(p, i) * 5 : -7;
  for (size_t i = 0; i < C; ++i) mine[i] = -1;
  NCCL_OK(ncclScatter(blocks, me == 0 ? blocks : mine, C, ncclFloat64, 0, comm, NULL), comm);
  bad = 0;
  for (size_t i = 0; i < C; ++i) bad += (me == 0 ? blocks : mine)[i] != value(me, i) * 5;
  CHECK(bad == 0, "scatter in place from rank 0: %zu wrong elements", bad);

  /* All-to-all: block p of rank r's input holds (r, p); it lands as block r
     on rank p. */
  int32_t* send = malloc(C * NRANKS * sizeof(int32_t));
  int32_t* recv = malloc(C * NRANKS * sizeof(int32_t));
  for (int p = 0; p < NRANKS; ++p)
    for (size_t i = 0; i < C; ++i) send[p * C + i] = (int32_t)(me * 1000000 + p * 10000 + (int)i);
  NCCL_OK(ncclAlltoAll(send, recv, C, ncclInt32, comm, NULL), comm);
  bad = 0;
  for (int r = 0; r < NRANKS; ++r)
    for (size_t i = 0; i < C; ++i) bad += recv[r * C + i] != (int32_t)(r * 1000000 + me * 10000 + (int)i);
  CHECK(bad == 0, "alltoall: %zu wrong elements", bad);

  ncclResult_t err = ncclGather(mine, blocks, C, ncclFloat64, NRANKS, comm, NULL);
  CHECK(err == ncclInvalidArgument && strstr(ncclGetLastError(comm), "root"), "gather bad root: %d '%s'", err,
        ncclGetLastError(comm));
  free(send);
  free(recv);
  free(blocks);
  free(mine);
}

/* Whether a GPU is usable: ncclMemAlloc either works or fails cleanly. */
static int probeGpu(void) {
  void* p = (void*)&failures;
  ncclResult_t r = ncclMemAlloc(&p, 1 << 20);
  if (r == ncclSuccess) {
    NCCL_OK(ncclMemFree(p), NULL);
    return 1;
  }
  CHECK(r == ncclUnhandledCudaError && p == (void*)&failures && strstr(ncclGetLastError(NULL), "ncclMemAlloc"),
        "ncclMemAlloc without a GPU: %d, ptr %s, '%s'", r, p == (void*)&failures ? "untouched" : "written",
        ncclGetLastError(NULL));
  NCCL_OK(ncclMemFree(NULL), NULL);
  return 0;
}

/* With no usable GPU, every call given a stream fails at once with
 * ncclUnhandledCudaError, names the stream and CUDA's reason, and leaves the
 * communicator healthy. */
static void streamsWithoutGpu(ncclComm_t comm) {
  cudaStream_t stream = (cudaStream_t)(uintptr_t)0x5eed;
  double buf[64] = {0}; /* disjoint regions, or in place as each call defines it */
  ncclRedOp_t onDevice;
  NCCL_OK(ncclRedOpCreatePreMulSum(&onDevice, buf, ncclFloat64, ncclScalarDevice, comm), comm);
  for (int call = 0; call < 12; ++call) {
    ncclResult_t r = ncclSuccess;
    switch (call) {
      case 0: r = ncclAllReduce(buf, buf, 4, ncclFloat64, ncclSum, comm, stream); break;
      case 1: r = ncclBroadcast(buf, buf, 4, ncclFloat64, 0, comm, stream); break;
      case 2: r = ncclReduce(buf, buf, 4, ncclFloat64, ncclMax, 1, comm, stream); break;
      case 3: r = ncclAllGather(buf, buf + 16, 4, ncclFloat64, comm, stream); break;
      case 4: r = ncclReduceScatter(buf + 40, buf + 40 + me, 1, ncclFloat64, ncclSum, comm, stream); break;
      case 5: r = ncclAlltoAll(buf, buf + 32, 1, ncclFloat64, comm, stream); break;
      case 6: r = ncclGather(buf, buf + 4, 1, ncclFloat64, 0, comm, stream); break;
      case 7: r = ncclScatter(buf + 4, buf, 1, ncclFloat64, 0, comm, stream); break;
      case 8: r = ncclSend(buf, 4, ncclFloat64, (me + 1) % NRANKS, comm, stream); break;
      case 9: r = ncclRecv(buf, 4, ncclFloat64, (me + 1) % NRANKS, comm, stream); break;
      case 10: r = ncclBcast(buf, 4, ncclFloat64, 0, comm, stream); break;
      default: r = ncclAllReduce(buf, buf, 4, ncclFloat64, onDevice, comm, stream); break;
    }
    const char* why = ncclGetLastError(comm);
    CHECK(r == ncclUnhandledCudaError && strstr(why, "stream") && strstr(why, "0x5eed") && strcasestr(why, "cuda"),
          "call %d on a stream without a GPU: %d '%s'", call, r, why);
  }
  NCCL_OK(ncclRedOpDestroy(onDevice, comm), comm);
  /* A "device-resident" scalar is read when the call runs: with a NULL
   * stream and host buffers (what memory that is without a GPU) on the host. */
  double factor = 0.5, in[4], out[4];
  for (int i = 0; i < 4; ++i) in[i] = (me + 1) * (i + 1);
  ncclRedOp_t late;
  NCCL_OK(ncclRedOpCreatePreMulSum(&late, &factor, ncclFloat64, ncclScalarDevice, comm), comm);
  factor = 0.25; /* changed after creation: the call reads this one */
  NCCL_OK(ncclAllReduce(in, out, 4, ncclFloat64, late, comm, NULL), comm);
  for (int i = 0; i < 4; ++i) {
    double want = 0;
    for (int p = 0; p < NRANKS; ++p) want += 0.25 * (p + 1) * (i + 1);
    CHECK(out[i] == want, "device-resident scalar, NULL stream: out[%d]=%g want %g", i, out[i], want);
  }
  NCCL_OK(ncclRedOpDestroy(late, comm), comm);
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async), comm);
  CHECK(async == ncclSuccess, "async error %d after refused stream calls", async);
}

/* Registration: a handle per ncclCommRegister, each deregistered once. */
static void registration(ncclComm_t comm) {
  char buf[64];
  void* handles[2] = {NULL, NULL};
  NCCL_OK(ncclCommRegister(comm, buf, sizeof(buf), &handles[0]), comm);
  NCCL_OK(ncclCommRegister(comm, buf, sizeof(buf), &handles[1]), comm);
  CHECK(handles[0] && handles[1] && handles[0] != handles[1], "register handles %p %p", handles[0], handles[1]);
  NCCL_OK(ncclCommDeregister(comm, handles[0]), comm);
  ncclResult_t r = ncclCommDeregister(comm, handles[0]);
  CHECK(r == ncclInvalidArgument && strstr(ncclGetLastError(comm), "handle"), "deregister twice: %d '%s'", r,
        ncclGetLastError(comm));
  r = ncclCommRegister(comm, NULL, 8, &handles[0]);
  CHECK(r == ncclInvalidArgument && strstr(ncclGetLastError(comm), "buff"), "register NULL: %d '%s'", r,
        ncclGetLastError(comm));
  /* handles[1] stays registered: ncclCommDestroy frees it. */
}

/* The entry points of newer headers that PyTorch binds: windows pair like
 * registrations, device communicators and simulated groups are refused
 * with their reason, and a refused simulation leaves the group to run. */
static void newerEntryPoints(ncclComm_t comm) {
  float buf[33];
  ncclWindow_t win = NULL;
  NCCL_OK(ncclCommWindowRegister(comm, buf, sizeof(buf), &win, NCCL_WIN_COLL_SYMMETRIC), comm);
  CHECK(win != NULL, "window handle is NULL");
  NCCL_OK(ncclCommWindowDeregister(comm, win), comm);
  ncclResult_t r = ncclCommWindowDeregister(comm, win);
  CHECK(r == ncclInvalidArgument, "window deregistered twice: %d", r);
  r = ncclCommWindowRegister(comm, buf, sizeof(buf), &win, 0x40);
  CHECK(r == ncclInvalidArgument && strstr(ncclGetLastError(comm), "winFlags"), "winFlags 0x40: %d '%s'", r,
        ncclGetLastError(comm));
  ncclDevComm_t* devComm = (ncclDevComm_t*)buf;
  r = ncclDevCommCreate(comm, NULL, devComm);
  CHECK(r == ncclInvalidUsage && strstr(ncclGetLastError(comm), "device"), "ncclDevCommCreate: %d '%s'", r,
        ncclGetLastError(comm));

  ncclSimInfo_t sim = NCCL_SIM_INFO_INITIALIZER;
  r = ncclGroupSimulateEnd(&sim);
  CHECK(r == ncclInvalidUsage && strstr(ncclGetLastError(NULL), "no group"), "simulate outside a group: %d '%s'",
        r, ncclGetLastError(NULL));
  for (int i = 0; i < 33; ++i) buf[i] = (float)(me + i);
  NCCL_OK(ncclGroupStart(), comm);
  NCCL_OK(ncclAllReduce(buf, buf, 33, ncclFloat32, ncclSum, comm, NULL), comm);
  r = ncclGroupSimulateEnd(&sim);
  CHECK(r == ncclInvalidUsage && strstr(ncclGetLastError(NULL), "ncclGroupEnd runs them"),
        "simulate inside a group: %d '%s'", r, ncclGetLastError(NULL));
  NCCL_OK(ncclGroupEnd(), comm);
  size_t bad = 0;
  for (int i = 0; i < 33; ++i) bad += buf[i] != (float)(NRANKS * (NRANKS - 1) / 2 + NRANKS * i);
  CHECK(bad == 0, "the group left open by ncclGroupSimulateEnd: %zu wrong elements", bad);
}

/* ncclCommInitRankScalable over two ids (strata needs the first). */
static void scalableInit(const ncclUniqueId* ids) {
  ncclUniqueId copy[2];
  memcpy(copy, ids, sizeof(copy));
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRankScalable(&comm, NRANKS, me, 2, copy, NULL), NULL);
  int n = 0;
  NCCL_OK(ncclCommCount(comm, &n), comm);
  int64_t x = me + 1;
  NCCL_OK(ncclAllReduce(&x, &x, 1, ncclInt64, ncclSum, comm, NULL), comm);
  CHECK(n == NRANKS && x == NRANKS * (NRANKS + 1) / 2, "scalable init: count %d sum %lld", n, (long long)x);
  NCCL_OK(ncclCommDestroy(comm), NULL);
  ncclResult_t r = ncclCommInitRankScalable(&comm, NRANKS, me, 0, copy, NULL);
  CHECK(r == ncclInvalidArgument && strstr(ncclGetLastError(NULL), "nId"), "scalable nId=0: %d '%s'", r,
        ncclGetLastError(NULL));
  r = ncclCommInitRankScalable(&comm, NRANKS, me, 1, NULL, NULL);
  CHECK(r == ncclInvalidArgument && strstr(ncclGetLastError(NULL), "commIds"), "scalable commIds=NULL: %d '%s'", r,
        ncclGetLastError(NULL));
}

/* PyTorch's watchdog: another thread polls the communicator's async error
 * (and reads its last error) while this one issues calls on it. */
typedef struct {
  ncclComm_t comm;
  atomic_int stop;
  long polls, unhealthy;
} Watchdog;

static void* watchdog(void* arg) {
  Watchdog* w = arg;
  while (!atomic_load(&w->stop)) {
    ncclResult_t async = ncclInternalError;
    if (ncclCommGetAsyncError(w->comm, &async) != ncclSuccess || async != ncclSuccess) ++w->unhealthy;
    (void)strlen(ncclGetLastError(w->comm));
    ++w->polls;
  }
  return NULL;
}

int runRank(int rank, ncclUniqueId id, const ncclUniqueId* scalableIds) {
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
  /* The device current at init: none (-1) without a usable GPU, else 0 (this test sets none). */
  CHECK(n == NRANKS && r == rank && (dev == -1 || dev == 0) && version == NCCL_VERSION_CODE,
        "queries: count %d rank %d device %d version %d", n, r, dev, version);
  /* GPU memory held: none here (no cuda transport connects without a GPU
   * call), and nothing suspended; an unknown stat is refused. */
  uint64_t held = 7;
  NCCL_OK(ncclCommMemStats(comm, ncclStatGpuMemTotal, &held), comm);
  CHECK(held == 0, "ncclStatGpuMemTotal %llu before any GPU call", (unsigned long long)held);
  held = 7;
  NCCL_OK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &held), comm);
  CHECK(held == 0, "ncclStatGpuMemSuspended %llu", (unsigned long long)held);
  CHECK(ncclCommMemStats(comm, (ncclCommMemStat_t)9, &held) == ncclInvalidArgument &&
            strstr(ncclGetLastError(comm), "stat=9"),
        "an unknown stat: '%s'", ncclGetLastError(comm));
  CHECK(ncclCommMemStats(comm, ncclStatGpuMemTotal, NULL) == ncclInvalidArgument, "a NULL value was accepted");
  /* Suspended, the communicator takes no calls until it is resumed (every
   * rank suspends, so none waits for another meanwhile). */
  float one = 1;
  CHECK(ncclCommSuspend(comm, 0x10) == ncclInvalidArgument, "ncclCommSuspend with unknown flags succeeded");
  NCCL_OK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM), comm);
  NCCL_OK(ncclCommMemStats(comm, ncclStatGpuMemSuspended, &held), comm);
  CHECK(held == 1, "ncclStatGpuMemSuspended %llu while suspended", (unsigned long long)held);
  CHECK(ncclAllReduce(&one, &one, 1, ncclFloat32, ncclSum, comm, NULL) == ncclInvalidUsage &&
            strstr(ncclGetLastError(comm), "suspended"),
        "an allreduce on a suspended communicator: '%s'", ncclGetLastError(comm));
  CHECK(ncclCommSuspend(comm, NCCL_SUSPEND_MEM) == ncclInvalidUsage, "suspended twice");
  NCCL_OK(ncclCommResume(comm), comm);
  CHECK(ncclCommResume(comm) == ncclInvalidUsage, "resumed a communicator that was not suspended");
  NCCL_OK(ncclAllReduce(&one, &one, 1, ncclFloat32, ncclSum, comm, NULL), comm);
  CHECK(one == (float)NRANKS, "allreduce after ncclCommResume: %g, want %d", one, NRANKS);
  /* The profiling names are the same functions. */
  int pn = 0;
  NCCL_OK(pncclCommCount(comm, &pn), comm);
  CHECK(pn == NRANKS && pncclGetErrorString(ncclInvalidUsage) == ncclGetErrorString(ncclInvalidUsage),
        "pnccl names: count %d", pn);

  Watchdog w = {comm, 0, 0, 0};
  pthread_t poller;
  if (pthread_create(&poller, NULL, watchdog, &w) != 0) {
    fprintf(stderr, "rank %d: pthread_create failed\n", me);
    return 1;
  }

  allreduces(comm);
  premulSums(comm);
  rootedAndAllToAll(comm);
  registration(comm);
  newerEntryPoints(comm);
  if (probeGpu()) {
    if (rank == 0) printf("a GPU is usable: the calls on a stream are tested by the gpu suite instead\n");
  } else {
    streamsWithoutGpu(comm);
  }

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

  /* Surviving a rank: rank 3 revokes a duplicate, every rank's next call on it
     fails; the others shrink it without rank 3 (which gets NULL), then take
     rank 3 back through ncclCommGetUniqueId and ncclCommGrow. */
  ncclComm_t doomed, small = NULL, grown = NULL;
  NCCL_OK(ncclCommSplit(comm, 0, rank, &doomed, NULL), comm);
  if (rank == 3) NCCL_OK(ncclCommRevoke(doomed, NCCL_REVOKE_DEFAULT), doomed);
  x = 1;
  ncclResult_t revoked = ncclAllReduce(&x, &x, 1, ncclInt64, ncclSum, doomed, NULL);
  CHECK(revoked == ncclInvalidUsage && strstr(ncclGetLastError(doomed), "revoked"), "after a revoke: %d '%s'",
        revoked, ncclGetLastError(doomed));
  int excluded[1] = {3};
  NCCL_OK(ncclCommShrink(doomed, excluded, 1, &small, NULL, NCCL_SHRINK_DEFAULT), doomed);
  CHECK((small == NULL) == (rank == 3), "shrink without rank 3: rank %d got %p", rank, (void*)small);
  ncclUniqueId growId;
  memset(&growId, 0, sizeof(growId));
  if (small) {
    x = rank;
    NCCL_OK(ncclAllReduce(&x, &x, 1, ncclInt64, ncclSum, small, NULL), small);
    CHECK(x == 0 + 1 + 2, "shrunk sum %lld", (long long)x);
    if (rank == 0) {
      NCCL_OK(ncclCommGetUniqueId(small, &growId), small);
      NCCL_OK(ncclSend(&growId, sizeof(growId), ncclUint8, 3, comm, NULL), comm);
    }
    NCCL_OK(ncclCommGrow(small, 4, rank == 0 ? &growId : NULL, -1, &grown, NULL), small);
  } else {
    NCCL_OK(ncclRecv(&growId, sizeof(growId), ncclUint8, 0, comm, NULL), comm);
    NCCL_OK(ncclCommGrow(NULL, 4, &growId, 3, &grown, NULL), NULL);
  }
  int grownRank = -1;
  NCCL_OK(ncclCommUserRank(grown, &grownRank), grown);
  x = rank;
  NCCL_OK(ncclAllReduce(&x, &x, 1, ncclInt64, ncclSum, grown, NULL), grown);
  CHECK(grownRank == rank && x == 0 + 1 + 2 + 3, "grown: rank %d sum %lld", grownRank, (long long)x);
  NCCL_OK(ncclCommDestroy(grown), NULL);
  if (small) NCCL_OK(ncclCommDestroy(small), NULL);
  NCCL_OK(ncclCommDestroy(doomed), NULL);

  /* Errors: NCCL's codes and a message naming the argument. */
  ncclResult_t err = ncclAllReduce(d, e, 1, (ncclDataType_t)42, ncclSum, comm, NULL);
  CHECK(err == ncclInvalidArgument && strstr(ncclGetLastError(comm), "datatype"), "bad datatype: %d", err);
  err = ncclBroadcast(d, e, 1, ncclFloat64, 9, comm, NULL);
  CHECK(err == ncclInvalidArgument && strstr(ncclGetLastError(comm), "root"), "bad root: %d '%s'", err,
        ncclGetLastError(comm));
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comm, &async), comm);
  CHECK(async == ncclSuccess, "async error %d on a healthy communicator", async);

  atomic_store(&w.stop, 1);
  pthread_join(poller, NULL);
  CHECK(w.polls > 0 && w.unhealthy == 0, "watchdog: %ld polls, %ld unhealthy", w.polls, w.unhealthy);

  scalableInit(scalableIds);

  NCCL_OK(ncclCommFinalize(comm), comm);
  NCCL_OK(ncclCommDestroy(comm), NULL);
  free(d);
  free(e);
  return failures ? 1 : 0;
}

/* NCCL's tuning settings map onto the communicator's own: NCCL_ALGO's
 * allreduce part forces strata's algorithm of that name where it leaves one
 * of Ring and Tree, maxCTAs (else NCCL_MAX_NCHANNELS) sets the channels.
 * strata's log (STRATA_DEBUG=INFO to a file) says what then ran. */
#define NTUNING 6
static const struct {
  const char* ncclAlgo;   /* NULL: unset */
  int maxCTAs;            /* 0: NCCL_CONFIG_UNDEF_INT */
  const char* maxChannels; /* NCCL_MAX_NCHANNELS; NULL: unset */
  const char* wantChoice; /* in the log line of the first allreduce */
  const char* wantInit;   /* in the init line */
} kTuning[NTUNING] = {
    {"Tree", 0, NULL, ": tree on 1 channel(s); config->algorithm=tree;", NULL},
    {"tree,ring", 3, NULL, "; cost model;", ", 3 channels,"},
    {"^RING", 0, "2", ": tree on ", ", 2 channels,"},
    {"tree;allreduce:ring;broadcast:tree", 2, "1", "config->algorithm=ring;", ", 2 channels,"},
    {"ring;allreduce:^ring,nvls", 0, NULL, "config->algorithm=tree;", NULL},
    {"Rong", 0, NULL, NULL, NULL}, /* not NCCL's: the init fails, naming NCCL_ALGO */
};

static int tuningRank(int rank, const ncclUniqueId* ids) {
  me = rank;
  char log[64];
  snprintf(log, sizeof(log), "/tmp/strata-nccl-tuning-%d.log", (int)getpid());
  for (int k = 0; k < NTUNING; ++k) {
    if (kTuning[k].ncclAlgo) setenv("NCCL_ALGO", kTuning[k].ncclAlgo, 1);
    if (kTuning[k].maxChannels) setenv("NCCL_MAX_NCHANNELS", kTuning[k].maxChannels, 1);
    setenv("STRATA_DEBUG", "INFO", 1);
    setenv("STRATA_DEBUG_FILE", log, 1);
    unlink(log);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (kTuning[k].maxCTAs) config.maxCTAs = kTuning[k].maxCTAs;
    ncclComm_t comm = NULL;
    ncclResult_t r = ncclCommInitRankConfig(&comm, 2, ids[k], rank, &config);
    unsetenv("NCCL_ALGO");
    unsetenv("NCCL_MAX_NCHANNELS");
    unsetenv("STRATA_DEBUG");
    unsetenv("STRATA_DEBUG_FILE");
    if (!kTuning[k].wantChoice) {
      CHECK(r == ncclInvalidArgument && strstr(ncclGetLastError(NULL), "NCCL_ALGO='Rong'"),
            "NCCL_ALGO=Rong: init returned %d '%s'", r, ncclGetLastError(NULL));
      continue;
    }
    NCCL_OK(r, NULL);
    float x[1024];
    for (int i = 0; i < 1024; ++i) x[i] = (float)(rank * 3 + i % 5);
    NCCL_OK(ncclAllReduce(x, x, 1024, ncclFloat32, ncclSum, comm, NULL), comm);
    for (int i = 0; i < 1024; ++i) CHECK(x[i] == (float)(3 + 2 * (i % 5)), "case %d: element %d is %g", k, i, x[i]);
    NCCL_OK(ncclCommDestroy(comm), NULL);
    char text[16384] = "";
    FILE* f = fopen(log, "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;
    text[n] = '\0';
    if (f) fclose(f);
    unlink(log);
    CHECK(strstr(text, kTuning[k].wantChoice), "NCCL_ALGO=%s: no '%s' in the log:\n%s", kTuning[k].ncclAlgo,
          kTuning[k].wantChoice, text);
    CHECK(!kTuning[k].wantInit || strstr(text, kTuning[k].wantInit), "case %d: no '%s' in the log:\n%s", k,
          kTuning[k].wantInit, text);
  }
  return failures ? 1 : 0;
}

struct Ids {
  ncclUniqueId id, scalable[2], tuning[NTUNING];
};
static int tuningBody(int rank, void* arg) { return tuningRank(rank, ((struct Ids*)arg)->tuning); }

static int rankBody(int rank, void* arg) {
  struct Ids* ids = (struct Ids*)arg;
  return runRank(rank, ids->id, ids->scalable);
}

int main(void) {
  ncclUniqueId id, scalableIds[2];
  if (ncclGetUniqueId(&id) != ncclSuccess || ncclGetUniqueId(&scalableIds[0]) != ncclSuccess ||
      ncclGetUniqueId(&scalableIds[1]) != ncclSuccess) {
    fprintf(stderr, "ncclGetUniqueId: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  struct Ids ids = {id, {scalableIds[0], scalableIds[1]}, {{{0}}}};
  for (int k = 0; k < NTUNING; ++k) NCCL_OK(ncclGetUniqueId(&ids.tuning[k]), NULL);
  int failed = runRanks(NRANKS, rankBody, &ids, 120);
  if (!failed) printf("4 ranks: every collective through nccl.h matched the reference\n");
  if (runRanks(2, tuningBody, &ids, 60) == 0)
    printf("NCCL_ALGO, maxCTAs and NCCL_MAX_NCHANNELS set the communicator's algorithm and channels\n");
  else
    failed = 1;

  /* One process, three communicators from ncclCommInitAll, driven together
   * in one group (as with one thread driving several GPUs). Each is on its
   * entry of the device list, here the one device every GPU machine has
   * (a device may appear more than once, unlike in NCCL). */
  ncclComm_t comms[3];
  float bufs[3][257];
  const int devlist[3] = {0, 0, 0}, badlist[3] = {0, -1, 0};
  CHECK(ncclCommInitAll(comms, 3, badlist) == ncclInvalidArgument && strstr(ncclGetLastError(NULL), "devlist[1]=-1"),
        "ncclCommInitAll with a negative device: '%s'", ncclGetLastError(NULL));
  NCCL_OK(ncclCommInitAll(comms, 3, devlist), NULL);
  for (int c = 0; c < 3; ++c) {
    int dev = -7;
    NCCL_OK(ncclCommCuDevice(comms[c], &dev), comms[c]);
    CHECK(dev == 0, "ncclCommInitAll's comm %d is on device %d, its devlist entry is 0", c, dev);
  }
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

  /* One thread initialises every rank inside a group, as nccl-tests does
   * with several GPUs per thread: the inits complete at ncclGroupEnd. */
  ncclUniqueId groupId;
  NCCL_OK(ncclGetUniqueId(&groupId), NULL);
  NCCL_OK(ncclGroupStart(), NULL);
  for (int c = 0; c < 3; ++c) NCCL_OK(ncclCommInitRank(&comms[c], 3, groupId, c), NULL);
  NCCL_OK(ncclGroupEnd(), NULL);
  NCCL_OK(ncclGroupStart(), NULL);
  for (int c = 0; c < 3; ++c) {
    for (int i = 0; i < 257; ++i) bufs[c][i] = (float)(c + i);
    NCCL_OK(ncclAllReduce(bufs[c], bufs[c], 257, ncclFloat32, ncclMax, comms[c], NULL), comms[c]);
  }
  NCCL_OK(ncclGroupEnd(), NULL);
  for (int c = 0; c < 3; ++c) {
    ncclResult_t async = ncclInProgress;
    NCCL_OK(ncclCommGetAsyncError(comms[c], &async), comms[c]);
    CHECK(async == ncclSuccess, "group init comm %d: async state %d after ncclGroupEnd", c, async);
    for (int i = 0; i < 257; ++i) CHECK(bufs[c][i] == (float)(2 + i), "group init comm %d element %d", c, i);
    NCCL_OK(ncclCommDestroy(comms[c]), NULL);
  }
  if (failures == 0) printf("ncclCommInitRank x3 in one group on one thread: the inits completed at ncclGroupEnd\n");
  return failed || failures;
}
