// libnccl.so.2: NCCL's host API on top of strata's public C API. Each call
// checks what strata does not know about (streams, NCCL's enum values,
// configs), maps NCCL's values to strata's, and maps the result back.
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "strata/strata.h"

struct ncclComm {
  strata_comm_t comm;
  // Pre-multiplied sums: op ncclNumOps + i is premul[i] (invalid when !live).
  struct PreMul {
    bool live;
    ncclDataType_t datatype;
    unsigned char scalar[8];
  };
  std::vector<PreMul> premul;
  std::string lastError;
};

namespace {

thread_local std::string tLastError;

ncclResult_t fromStrata(strata_result_t rc) {
  switch (rc) {
    case STRATA_SUCCESS: return ncclSuccess;
    case STRATA_ERR_INVALID_ARGUMENT: return ncclInvalidArgument;
    case STRATA_ERR_INVALID_USAGE: return ncclInvalidUsage;
    case STRATA_ERR_SYSTEM: return ncclSystemError;
    case STRATA_ERR_INTERNAL: return ncclInternalError;
    case STRATA_ERR_REMOTE:
    case STRATA_ERR_TIMEOUT: return ncclRemoteError;  // a peer died, or never came
    case STRATA_IN_PROGRESS: return ncclInProgress;
  }
  return ncclInternalError;
}

// The result of a strata call, with strata's message kept for ncclGetLastError.
ncclResult_t done(strata_result_t rc, ncclComm_t comm) {
  if (rc != STRATA_SUCCESS) {
    tLastError = comm ? strata_comm_last_error(comm->comm) : strata_last_error();
    if (comm) comm->lastError = tLastError;
  }
  return fromStrata(rc);
}

ncclResult_t fail(ncclResult_t rc, ncclComm_t comm, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
ncclResult_t fail(ncclResult_t rc, ncclComm_t comm, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  tLastError = buf;
  if (comm) comm->lastError = buf;
  return rc;
}

// What an entry point returns when a C++ exception reached it: no exception
// may unwind into a C caller. Call only from a catch block.
ncclResult_t escaped() {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return ncclSystemError;  // formatting a message could throw again
  } catch (const std::exception& e) {
    return fail(ncclInternalError, nullptr, "strata's NCCL shim: unexpected C++ exception: %s", e.what());
  } catch (...) {
    return fail(ncclInternalError, nullptr, "strata's NCCL shim: unexpected C++ exception");
  }
}

// Closes an entry point defined with a function-try-block.
#define NCCL_CATCH_ESCAPES \
  catch (...) {            \
    return escaped();      \
  }

bool toStrata(ncclDataType_t dt, strata_datatype_t* out) {
  static const strata_datatype_t kMap[] = {STRATA_INT8,    STRATA_UINT8,   STRATA_INT32,  STRATA_UINT32,
                                           STRATA_INT64,   STRATA_UINT64,  STRATA_FLOAT16, STRATA_FLOAT32,
                                           STRATA_FLOAT64, STRATA_BFLOAT16};
  if (dt < 0 || dt >= ncclNumTypes) return false;
  *out = kMap[dt];
  return true;
}

// Common checks of a collective: communicator, stream, datatype.
ncclResult_t prepare(ncclComm_t comm, cudaStream_t stream, ncclDataType_t datatype,
                     strata_datatype_t* dt) {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (stream)
    return fail(ncclInvalidArgument, comm,
                "stream=%p: this libnccl (strata) has no GPU support; pass a NULL stream and host buffers",
                static_cast<void*>(stream));
  if (!toStrata(datatype, dt)) return fail(ncclInvalidArgument, comm, "datatype=%d is not an ncclDataType_t", datatype);
  return ncclSuccess;
}

// A reduction op: strata's op, or a pre-multiplied sum whose scaled copy of
// the input is made in `scaled` (which then replaces sendbuff).
ncclResult_t resolveOp(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t datatype, const void** sendbuff,
                       size_t count, std::vector<unsigned char>& scaled, strata_op_t* out) {
  static const strata_op_t kMap[] = {STRATA_SUM, STRATA_PROD, STRATA_MAX, STRATA_MIN, STRATA_AVG};
  if (op >= 0 && op < ncclNumOps) {
    *out = kMap[op];
    return ncclSuccess;
  }
  size_t index = static_cast<size_t>(op) - ncclNumOps;
  if (op < 0 || index >= comm->premul.size() || !comm->premul[index].live)
    return fail(ncclInvalidArgument, comm, "op=%d is neither an ncclRedOp_t nor a live pre-multiplied sum", op);
  const ncclComm::PreMul& pm = comm->premul[index];
  if (pm.datatype != datatype)
    return fail(ncclInvalidArgument, comm, "op=%d was created for datatype %d, used with %d", op, pm.datatype, datatype);
  if (count > 0 && !*sendbuff) return fail(ncclInvalidArgument, comm, "sendbuff is NULL");
  const size_t elem = datatype == ncclInt8 || datatype == ncclUint8 ? 1
                      : datatype == ncclInt64 || datatype == ncclUint64 || datatype == ncclFloat64 ? 8 : 4;
  // Checked before the product is formed: a count this large would wrap it
  // or make resize throw.
  if (count > scaled.max_size() / elem)
    return fail(ncclInvalidArgument, comm, "count=%zu elements of %zu bytes cannot be pre-multiplied into one buffer",
                count, elem);
  scaled.resize(count * elem);
  auto scale = [&](auto zero) {
    using T = decltype(zero);
    T s;
    std::memcpy(&s, pm.scalar, sizeof(T));
    const T* in = static_cast<const T*>(*sendbuff);
    T* o = reinterpret_cast<T*>(scaled.data());
    for (size_t i = 0; i < count; ++i) o[i] = static_cast<T>(in[i] * s);
  };
  switch (datatype) {
    case ncclInt8: scale(int8_t{}); break;
    case ncclUint8: scale(uint8_t{}); break;
    case ncclInt32: scale(int32_t{}); break;
    case ncclUint32: scale(uint32_t{}); break;
    case ncclInt64: scale(int64_t{}); break;
    case ncclUint64: scale(uint64_t{}); break;
    case ncclFloat32: scale(float{}); break;
    default: scale(double{}); break;
  }
  *sendbuff = scaled.data();
  *out = STRATA_SUM;
  return ncclSuccess;
}

// A reducing collective over `count` inputs: prepare() and resolveOp(), then
// `call` with the input to reduce (the scaled copy for a pre-multiplied sum)
// and strata's datatype and op.
template <typename Call>
ncclResult_t reduction(ncclComm_t comm, cudaStream_t stream, ncclDataType_t datatype, ncclRedOp_t op,
                       const void* sendbuff, size_t count, Call call) {
  strata_datatype_t dt = STRATA_UINT8;
  strata_op_t sop = STRATA_SUM;
  std::vector<unsigned char> scaled;
  ncclResult_t r = prepare(comm, stream, datatype, &dt);
  if (r == ncclSuccess) r = resolveOp(comm, op, datatype, &sendbuff, count, scaled, &sop);
  return r == ncclSuccess ? done(call(sendbuff, dt, sop), comm) : r;
}

ncclResult_t wrap(strata_comm_t s, ncclComm_t* out) {
  *out = new ncclComm{s, {}, {}};
  return ncclSuccess;
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) try {
  if (!version) return fail(ncclInvalidArgument, nullptr, "version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId) try {
  if (!uniqueId) return fail(ncclInvalidArgument, nullptr, "uniqueId is NULL");
  static_assert(sizeof(ncclUniqueId) == sizeof(strata_unique_id_t), "unique ids differ in size");
  strata_unique_id_t id;
  strata_result_t rc = strata_get_unique_id(&id);
  if (rc == STRATA_SUCCESS) std::memcpy(uniqueId, &id, sizeof(id));
  return done(rc, nullptr);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
                                    ncclConfig_t* config) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm (the output pointer) is NULL");
  if (config && (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, splitShare)))
    return fail(ncclInvalidArgument, nullptr, "config was not initialised with NCCL_CONFIG_INITIALIZER");
  strata_unique_id_t id;
  std::memcpy(&id, &commId, sizeof(id));
  strata_comm_t s;
  const bool nonBlocking = config && config->blocking == 0;
  strata_result_t rc = nonBlocking ? strata_comm_init_rank_nonblocking(&s, nranks, id, rank)
                                   : strata_comm_init_rank(&s, nranks, id, rank);
  if (rc != STRATA_SUCCESS) return done(rc, nullptr);
  wrap(s, comm);
  return nonBlocking ? ncclInProgress : ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) try {
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* /*devlist*/) try {
  if (!comms) return fail(ncclInvalidArgument, nullptr, "comm (the output array) is NULL");
  if (ndev < 1) return fail(ncclInvalidArgument, nullptr, "ndev=%d must be at least 1", ndev);
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) return r;
  // Every rank's init blocks until all have joined: one thread each.
  std::vector<ncclResult_t> results(ndev, ncclSuccess);
  std::vector<std::string> errors(ndev);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i)
    threads.emplace_back([&, i] {
      results[i] = ncclCommInitRank(&comms[i], ndev, id, i);
      if (results[i] != ncclSuccess) errors[i] = tLastError;
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i)
    if (results[i] != ncclSuccess) {
      for (int j = 0; j < ndev; ++j)
        if (results[j] == ncclSuccess) ncclCommDestroy(comms[j]);
      return fail(results[i], nullptr, "rank %d: %s", i, errors[i].c_str());
    }
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommFinalize(ncclComm_t comm) try {
  // Every strata operation has completed when its call (or group) returned.
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommDestroy(ncclComm_t comm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  strata_result_t rc = strata_comm_destroy(comm->comm);
  delete comm;
  return done(rc, nullptr);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommAbort(ncclComm_t comm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  strata_result_t rc = strata_comm_abort(comm->comm);
  delete comm;
  return done(rc, nullptr);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                           ncclConfig_t* config) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!newcomm) return fail(ncclInvalidArgument, comm, "newcomm (the output pointer) is NULL");
  if (config && config->magic != 0xcafebeef)
    return fail(ncclInvalidArgument, comm, "config was not initialised with NCCL_CONFIG_INITIALIZER");
  strata_comm_t s = nullptr;
  strata_result_t rc = strata_comm_split(comm->comm, color, key, &s);
  if (rc != STRATA_SUCCESS) return done(rc, comm);
  if (!s) {
    *newcomm = nullptr;
    return ncclSuccess;
  }
  return wrap(s, newcomm);
} NCCL_CATCH_ESCAPES

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t comm) {
  return comm ? comm->lastError.c_str() : tLastError.c_str();
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!asyncError) return fail(ncclInvalidArgument, comm, "asyncError is NULL");
  strata_result_t err = STRATA_SUCCESS;
  strata_result_t rc = strata_comm_get_async_error(comm->comm, &err);
  if (rc != STRATA_SUCCESS) return done(rc, comm);
  *asyncError = fromStrata(err);
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  return done(strata_comm_size(comm->comm, count), comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!device) return fail(ncclInvalidArgument, comm, "device is NULL");
  *device = -1;
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  return done(strata_comm_rank(comm->comm, rank), comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!op || !scalar) return fail(ncclInvalidArgument, comm, "%s is NULL", op ? "scalar" : "op");
  if (residence != ncclScalarHostImmediate)
    return fail(ncclInvalidArgument, comm, "residence=%d: only ncclScalarHostImmediate (host memory) is supported", residence);
  if (datatype == ncclFloat16 || datatype == ncclBfloat16 || datatype < 0 || datatype >= ncclNumTypes)
    return fail(ncclInvalidArgument, comm, "datatype=%d: pre-multiplied sums take integer, float or double", datatype);
  ncclComm::PreMul pm{true, datatype, {}};
  const size_t elem = datatype <= ncclUint8 ? 1 : datatype == ncclInt64 || datatype == ncclUint64 || datatype == ncclFloat64 ? 8 : 4;
  std::memcpy(pm.scalar, scalar, elem);
  size_t index = 0;
  while (index < comm->premul.size() && comm->premul[index].live) ++index;
  if (index == comm->premul.size()) comm->premul.push_back(pm);
  else comm->premul[index] = pm;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + index);
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  size_t index = static_cast<size_t>(op) - ncclNumOps;
  if (op < ncclNumOps || index >= comm->premul.size() || !comm->premul[index].live)
    return fail(ncclInvalidArgument, comm, "op=%d is not a live op made by ncclRedOpCreatePreMulSum", op);
  comm->premul[index].live = false;
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) try {
  return reduction(comm, stream, datatype, op, sendbuff, count,
                   [&](const void* in, strata_datatype_t dt, strata_op_t sop) {
                     return strata_allreduce(in, recvbuff, count, dt, sop, comm->comm);
                   });
} NCCL_CATCH_ESCAPES

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) try {
  return reduction(comm, stream, datatype, op, sendbuff, count,
                   [&](const void* in, strata_datatype_t dt, strata_op_t sop) {
                     return strata_reduce(in, recvbuff, count, dt, sop, root, comm->comm);
                   });
} NCCL_CATCH_ESCAPES

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) try {
  int n = 0;
  if (comm) strata_comm_size(comm->comm, &n);  // a failed size leaves 0: strata_reduce_scatter reports it
  // The input count is formed only once it cannot wrap.
  if (n > 0 && recvcount > SIZE_MAX / static_cast<size_t>(n))
    return fail(ncclInvalidArgument, comm, "recvcount=%zu times %d ranks overflows size_t", recvcount, n);
  return reduction(comm, stream, datatype, op, sendbuff, recvcount * n,
                   [&](const void* in, strata_datatype_t dt, strata_op_t sop) {
                     return strata_reduce_scatter(in, recvbuff, recvcount, dt, sop, comm->comm);
                   });
} NCCL_CATCH_ESCAPES

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           int root, ncclComm_t comm, cudaStream_t stream) try {
  strata_datatype_t dt = STRATA_UINT8;
  ncclResult_t r = prepare(comm, stream, datatype, &dt);
  if (r != ncclSuccess) return r;
  return done(strata_broadcast(sendbuff, recvbuff, count, dt, root, comm->comm), comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) try {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) try {
  strata_datatype_t dt = STRATA_UINT8;
  ncclResult_t r = prepare(comm, stream, datatype, &dt);
  if (r != ncclSuccess) return r;
  return done(strata_allgather(sendbuff, recvbuff, sendcount, dt, comm->comm), comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) try {
  strata_datatype_t dt = STRATA_UINT8;
  ncclResult_t r = prepare(comm, stream, datatype, &dt);
  if (r != ncclSuccess) return r;
  return done(strata_send(sendbuff, count, dt, peer, comm->comm), comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) try {
  strata_datatype_t dt = STRATA_UINT8;
  ncclResult_t r = prepare(comm, stream, datatype, &dt);
  if (r != ncclSuccess) return r;
  return done(strata_recv(recvbuff, count, dt, peer, comm->comm), comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclGroupStart(void) try {
  return done(strata_group_start(), nullptr);
} NCCL_CATCH_ESCAPES
ncclResult_t ncclGroupEnd(void) try {
  return done(strata_group_end(), nullptr);
} NCCL_CATCH_ESCAPES

}  // extern "C"
