/*
 * nccl.h for strata's NCCL-compatible library (libnccl.so.2).
 *
 * The NCCL 2.23 API with NCCL's names, enum values, struct layouts and
 * result codes, written from NVIDIA's public API documentation, so programs
 * built against NCCL build and link against strata unchanged.
 *
 * Streams: a NULL stream means host buffers and a call that completes before
 * it returns (inside ncclGroupStart/End: at the outermost ncclGroupEnd). A
 * non-NULL cudaStream_t enqueues the operation on that stream, as NCCL does;
 * its buffers may be device, managed or host memory. Without a usable GPU
 * such a call fails with ncclUnhandledCudaError and ncclGetLastError says
 * why. A non-blocking init (config.blocking = 0) returns ncclInProgress;
 * other calls on the communicator wait for it.
 */
#ifndef NCCL_H_
#define NCCL_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* nccl-tests and other CUDA clients take half and __nv_bfloat16 from the
 * headers that NCCL's own nccl.h includes. */
#if defined(__has_include)
#if __has_include(<cuda_runtime.h>)
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#if __has_include(<cuda_bf16.h>)
#include <cuda_bf16.h>
#endif
#endif
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 23
#define NCCL_PATCH 4
#define NCCL_SUFFIX "strata"
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH)

/* The CUDA runtime's definition when its headers are at hand; otherwise the
 * same type, so that the ABI is NCCL's either way. */
#ifndef CUDART_VERSION
typedef struct CUstream_st* cudaStream_t;
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ncclComm* ncclComm_t;

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_SHRINK_DEFAULT 0x00 /* shrink a communicator with no operation pending */
#define NCCL_SHRINK_ABORT 0x01   /* revoke the parent's operations first */
#define NCCL_REVOKE_DEFAULT 0x00

/* NCCL 2.23's layout, which ends at splitShare (later NCCL versions append
 * fields). A config from a newer header, larger and with a newer version, is
 * accepted too: only blocking and maxCTAs are read. */
typedef struct ncclConfig_v21700 {
  size_t size;           /* set by NCCL_CONFIG_INITIALIZER */
  unsigned int magic;    /* set by NCCL_CONFIG_INITIALIZER */
  unsigned int version;  /* set by NCCL_CONFIG_INITIALIZER */
  int blocking;          /* 0: ncclCommInitRankConfig returns ncclInProgress at once; poll
                            ncclCommGetAsyncError until it is no longer ncclInProgress */
  int cgaClusterSize;    /* GPU tuning: ignored */
  int minCTAs;           /* GPU tuning: ignored */
  int maxCTAs;           /* the communicator's channel count (at most 32) */
  const char* netName;   /* accepted, ignored (STRATA_TRANSPORT chooses) */
  int splitShare;        /* accepted, ignored */
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                       \
  {                                                                                   \
    sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,          \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT           \
  }

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclNumTypes = 10
} ncclDataType_t;

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

typedef enum {
  ncclStatGpuMemSuspend = 0,
  ncclStatGpuMemSuspended = 1,
  ncclStatGpuMemPersist = 2,
  ncclStatGpuMemTotal = 3
} ncclCommMemStat_t;

/* GPU memory for buffers, on the calling thread's current CUDA device.
 * Without a usable GPU: ncclUnhandledCudaError. */
ncclResult_t ncclMemAlloc(void** ptr, size_t size);
ncclResult_t ncclMemFree(void* ptr);

ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
/* nId ids (the same on every rank) spread NCCL's bootstrap; strata's needs
 * one and uses commIds[0]. */
ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config);
/* One process, ndev communicators, rank i on CUDA device devlist[i] (i
 * without a list; unlike NCCL a device may be listed twice): drive them
 * together inside ncclGroupStart/End. */
ncclResult_t ncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t ncclCommFinalize(ncclComm_t comm);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config);
/* Surviving a lost rank (strata_comm_shrink, strata_comm_revoke, strata_comm_grow
 * in strata.h). config is accepted and ignored: the new communicator inherits
 * comm's settings. After a revoke, operations on comm return ncclInvalidUsage. */
ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                            ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                          ncclComm_t* newcomm, ncclConfig_t* config);
const char* ncclGetErrorString(ncclResult_t result);
const char* ncclGetLastError(ncclComm_t comm);
/* Safe to call from another thread while the communicator is in use (a
 * watchdog polling it). */
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t ncclCommCount(const ncclComm_t comm, int* count);
/* The CUDA device current when the communicator was created (its devlist
 * entry for ncclCommInitAll); -1 where no GPU was usable. */
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device);
/* GPU memory the communicator holds (NCCL 2.29's call): Total and Persist
 * are the same, since none of strata's can be released (Suspend 0;
 * Suspended 1 between ncclCommSuspend and ncclCommResume). Not alongside
 * another thread's calls on comm. */
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
/* NCCL 2.29's suspension: with NCCL_SUSPEND_MEM, NCCL releases what GPU
 * memory it can until ncclCommResume; strata has none to release, so it
 * only refuses the communicator's calls (ncclInvalidUsage) meanwhile. */
#define NCCL_SUSPEND_MEM 0x01
ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t ncclCommResume(ncclComm_t comm);
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank);

/* Registration is a no-op for strata: the handle only pairs the calls. */
ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);

/* Sum after multiplying every rank's input by *scalar, one element of
 * datatype (any type). ncclScalarHostImmediate: host memory, read now.
 * ncclScalarDevice: device memory, read when a stream call runs (a
 * NULL-stream call cannot read it). */
ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream);

/* Calls that NCCL added in 2.28, offered here because clients built against
 * a newer nccl.h (PyTorch's wheels) call them. count elements per rank:
 * all-to-all sends block p of sendbuff to rank p, which receives it as block
 * `rank` of recvbuff (not in place). Gather puts rank r's sendbuff at block r
 * of the root's recvbuff (in place when sendbuff == recvbuff + root * count);
 * scatter sends block r of the root's sendbuff to rank r's recvbuff (in place
 * when recvbuff == sendbuff + root * count). */
ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                        ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);

/* Inside a group, calls are queued and issued at the outermost ncclGroupEnd,
 * which also completes the communicators initialised inside the group (so
 * one thread may initialise several ranks of one communicator there). */
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

/* More entry points of newer NCCL headers, which PyTorch 2.11's libtorch_cuda
 * binds when it loads (so they must exist) and calls only for features it
 * is asked for.
 * Windows (2.27): registered like ncclCommRegister, a no-op whose handle only
 * pairs the calls; collectives on the memory work with or without one.
 * Device communicators (2.28, kernels that communicate): strata has none;
 * ncclDevCommCreate returns ncclInvalidUsage and says so.
 * ncclGroupSimulateEnd (2.22) would end the group without running its
 * operations and estimate their time: strata cannot leave queued
 * operations unrun, so it returns ncclInvalidUsage with the group still
 * open (ncclGroupEnd runs them). */
typedef struct ncclWindow* ncclWindow_t;
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                    int winFlags);
ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
typedef struct ncclDevCommRequirements ncclDevCommRequirements_t;
typedef struct ncclDevComm ncclDevComm_t;
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
                               ncclDevComm_t* outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm);
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;
#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), -1.0f }
ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

/* NCCL's profiling names: each call above under a second name (pncclX is
 * ncclX), so that a tool that defines ncclX to wrap it can call the real one. */
ncclResult_t pncclMemAlloc(void** ptr, size_t size);
ncclResult_t pncclMemFree(void* ptr);
ncclResult_t pncclGetVersion(int* version);
ncclResult_t pncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t pncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                     ncclConfig_t* config);
ncclResult_t pncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t pncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                       ncclUniqueId* commIds, ncclConfig_t* config);
ncclResult_t pncclCommInitAll(ncclComm_t* comm, int ndev, const int* devlist);
ncclResult_t pncclCommFinalize(ncclComm_t comm);
ncclResult_t pncclCommDestroy(ncclComm_t comm);
ncclResult_t pncclCommAbort(ncclComm_t comm);
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                            ncclConfig_t* config);
ncclResult_t pncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                             ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags);
ncclResult_t pncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId);
ncclResult_t pncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
                           ncclComm_t* newcomm, ncclConfig_t* config);
const char* pncclGetErrorString(ncclResult_t result);
const char* pncclGetLastError(ncclComm_t comm);
ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
ncclResult_t pncclCommCount(const ncclComm_t comm, int* count);
ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int* device);
ncclResult_t pncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ncclResult_t pncclCommSuspend(ncclComm_t comm, int flags);
ncclResult_t pncclCommResume(ncclComm_t comm);
ncclResult_t pncclCommUserRank(const ncclComm_t comm, int* rank);
ncclResult_t pncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void* handle);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                       ncclScalarResidence_t residence, ncclComm_t comm);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm);
ncclResult_t pncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                        cudaStream_t stream);
ncclResult_t pncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                            ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                            cudaStream_t stream);
ncclResult_t pncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                cudaStream_t stream);
ncclResult_t pncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                            ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                       ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGather(const void* sendbuff, void* recvbuff, size_t count,
                         ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                          ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ncclResult_t pncclGroupStart(void);
ncclResult_t pncclGroupEnd(void);
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                     int winFlags);
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
ncclResult_t pncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* reqs,
                                ncclDevComm_t* outDevComm);
ncclResult_t pncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t* simInfo);

#ifdef __cplusplus
}
#endif

#endif /* NCCL_H_ */
