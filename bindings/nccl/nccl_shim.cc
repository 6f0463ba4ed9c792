// libnccl.so.2: NCCL's API on top of strata's public C API. Each call checks
// what strata does not know about (NCCL's enum values, configs, pre-multiplied
// sums), maps NCCL's values to strata's, and maps the result back. A non-NULL
// stream goes to strata's stream-ordered calls (strata_*_ex); a NULL stream
// takes the same calls' blocking form on host buffers.
#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <iterator>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "nccl.h"
#include "strata/strata.h"

struct ncclComm {
  explicit ncclComm(strata_comm_t s) : comm(s) {}

  strata_comm_t comm;
  bool suspended = false;  // ncclCommSuspend: no call until ncclCommResume
  // Pre-multiplied sums: op ncclNumOps + i is premul[i] (invalid when !live).
  // A deque, so that a scalar handed to strata stays put when ops are added.
  struct PreMul {
    bool live;
    ncclDataType_t datatype;
    ncclScalarResidence_t residence;
    unsigned char scalar[8];  // ncclScalarHostImmediate: the value, copied at creation
    const void* device;       // ncclScalarDevice: read when a stream call runs
  };
  std::deque<PreMul> premul;
  // ncclCommRegister's handles: each a distinct heap byte, owned here until
  // ncclCommDeregister (or the communicator's end) frees it.
  std::unordered_map<void*, std::unique_ptr<char>> registrations;
  // Written by calls on the communicator and read by ncclGetLastError from
  // any thread (PyTorch's watchdog reads it while collectives run).
  std::mutex errorMutex;
  std::string lastError;
};

namespace {

thread_local std::string tLastError;
// ncclGroupStart nesting on this thread, and what the outermost ncclGroupEnd
// completes: communicators initialised inside the group.
thread_local int tGroupDepth = 0;
thread_local std::vector<ncclComm_t> tGroupInits;

void setError(ncclComm_t comm, const char* message) {
  tLastError = message;
  if (comm) {
    std::lock_guard<std::mutex> lock(comm->errorMutex);
    comm->lastError = message;
  }
}

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
    case STRATA_ERR_CUDA: return ncclUnhandledCudaError;
    case STRATA_ERR_REVOKED: return ncclInvalidUsage;  // using a communicator that was revoked
  }
  return ncclInternalError;
}

// The result of a strata call, with strata's message kept for ncclGetLastError.
ncclResult_t done(strata_result_t rc, ncclComm_t comm) {
  if (rc != STRATA_SUCCESS) setError(comm, comm ? strata_comm_last_error(comm->comm) : strata_last_error());
  return fromStrata(rc);
}

ncclResult_t fail(ncclResult_t rc, ncclComm_t comm, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
ncclResult_t fail(ncclResult_t rc, ncclComm_t comm, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  setError(comm, buf);
  return rc;
}

// Like done(), for a call that moves data: the message names the NCCL call
// and, for a stream-ordered one, the stream, since a CUDA error there is
// usually about the stream or its device rather than the arguments.
ncclResult_t issued(strata_result_t rc, ncclComm_t comm, const char* what, cudaStream_t stream) {
  if (rc == STRATA_SUCCESS) return ncclSuccess;
  const char* why = comm ? strata_comm_last_error(comm->comm) : strata_last_error();
  if (stream)
    return fail(fromStrata(rc), comm, "%s on stream %p: %s", what, static_cast<void*>(stream), why);
  return fail(fromStrata(rc), comm, "%s: %s", what, why);
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

// A collective's common arguments in strata's terms.
struct Prepared {
  strata_datatype_t dt = STRATA_UINT8;
  size_t elem = 0;
  strata_call_options_t options = STRATA_CALL_OPTIONS_INIT;
};

ncclResult_t prepare(ncclComm_t comm, cudaStream_t stream, ncclDataType_t datatype, Prepared* p) {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (comm->suspended)
    return fail(ncclInvalidUsage, comm, "the communicator is suspended (ncclCommSuspend): ncclCommResume it first");
  if (!toStrata(datatype, &p->dt)) return fail(ncclInvalidArgument, comm, "datatype=%d is not an ncclDataType_t", datatype);
  p->elem = strata_datatype_size(p->dt);
  p->options.stream = static_cast<strata_stream_t>(stream);
  return ncclSuccess;
}

// A reduction op in strata's terms. A pre-multiplied sum becomes strata's
// sum with options.premul_scalar: strata scales the input (on the stream, or
// on the host for a NULL stream and host buffers, inside a group too).
ncclResult_t resolveOp(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t datatype, strata_op_t* out, Prepared* p) {
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
  *out = STRATA_SUM;
  p->options.premul_scalar = pm.residence == ncclScalarDevice ? pm.device : pm.scalar;
  return ncclSuccess;
}

// A reducing collective: prepare() and resolveOp(), then `call` with
// strata's datatype and op, and the options.
template <typename Call>
ncclResult_t reduction(const char* what, ncclComm_t comm, cudaStream_t stream, ncclDataType_t datatype,
                       ncclRedOp_t op, Call call) {
  Prepared p;
  ncclResult_t r = prepare(comm, stream, datatype, &p);
  if (r != ncclSuccess) return r;
  strata_op_t sop = STRATA_SUM;
  r = resolveOp(comm, op, datatype, &sop, &p);
  if (r != ncclSuccess) return r;
  return issued(call(p.dt, sop, &p.options), comm, what, stream);
}

ncclResult_t commSize(ncclComm_t comm, int* n, int* rank) {
  strata_result_t rc = strata_comm_size(comm->comm, n);
  if (rc == STRATA_SUCCESS) rc = strata_comm_rank(comm->comm, rank);
  return done(rc, comm);
}

// Gather and scatter as point-to-point calls in one group, so that they
// progress together and keep stream order like any other call.
class Exchange {
 public:
  Exchange(ncclComm_t comm, const Prepared& p, size_t count) : comm_(comm), p_(p), count_(count) {
    rc_ = strata_group_start();
    started_ = rc_ == STRATA_SUCCESS;
  }
  void send(const void* buf, int peer) {
    if (rc_ == STRATA_SUCCESS) rc_ = strata_send_ex(buf, count_, p_.dt, peer, comm_->comm, &p_.options);
  }
  void recv(void* buf, int peer) {
    if (rc_ == STRATA_SUCCESS) rc_ = strata_recv_ex(buf, count_, p_.dt, peer, comm_->comm, &p_.options);
  }
  // Ends the group, also after a failed call (which leaves it open), and
  // returns the first failure as the NCCL call `what`'s result.
  ncclResult_t end(const char* what, cudaStream_t stream) {
    if (rc_ == STRATA_SUCCESS) return issued(strata_group_end(), comm_, what, stream);
    ncclResult_t r = issued(rc_, comm_, what, stream);  // before the group's end can replace the message
    if (started_) strata_group_end();
    return r;
  }

 private:
  ncclComm_t comm_;
  const Prepared& p_;
  size_t count_;
  strata_result_t rc_;
  bool started_;
};

// Checks a rooted exchange's arguments; *block gets one rank's bytes.
ncclResult_t rootedArgs(ncclComm_t comm, int root, int n, size_t count, const Prepared& p, size_t* block) {
  if (root < 0 || root >= n)
    return fail(ncclInvalidArgument, comm, "root=%d is outside 0..%d (the communicator's ranks)", root, n - 1);
  if (count > SIZE_MAX / p.elem / static_cast<size_t>(n))
    return fail(ncclInvalidArgument, comm, "count=%zu elements times %d ranks overflows size_t", count, n);
  *block = count * p.elem;
  return ncclSuccess;
}

// Gather (every block to the root, into its recvbuff) and scatter (the
// root's sendbuff blocks out, one to each rank) as sends and receives in one
// group; the root's own block is a copy to itself, unless in place.
ncclResult_t rooted(bool gather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                    int root, ncclComm_t comm, cudaStream_t stream) {
  const char* what = gather ? "ncclGather" : "ncclScatter";
  Prepared p;
  int n = 0, me = 0;
  size_t block = 0;
  ncclResult_t r = prepare(comm, stream, datatype, &p);
  if (r == ncclSuccess) r = commSize(comm, &n, &me);
  if (r == ncclSuccess) r = rootedArgs(comm, root, n, count, p, &block);
  if (r != ncclSuccess || count == 0) return r;
  const void* many = gather ? recvbuff : sendbuff;  // the root's nranks blocks
  if (me == root && !many)
    return fail(ncclInvalidArgument, comm, "%s is NULL on the root (rank %d)", gather ? "recvbuff" : "sendbuff", root);
  Exchange x(comm, p, count);
  if (me != root) {
    if (gather) x.send(sendbuff, root);
    else x.recv(recvbuff, root);
    return x.end(what, stream);
  }
  for (int peer = 0; peer < n; ++peer) {
    char* at = static_cast<char*>(const_cast<void*>(many)) + peer * block;
    const void* mine = gather ? sendbuff : recvbuff;
    if (peer != root) {
      if (gather) x.recv(at, peer);
      else x.send(at, peer);
    } else if (mine != at) {
      x.send(gather ? sendbuff : at, root);
      x.recv(gather ? at : recvbuff, root);
    }
  }
  return x.end(what, stream);
}

ncclComm_t wrap(strata_comm_t s) { return new ncclComm(s); }

// NCCL's own tuning settings, as a communicator's strata_config_t: what
// strata has an equivalent for is mapped, the rest left to strata's choice.
struct Tuning {
  std::string algorithm;  // for allreduce; empty: strata's cost model
  int nchannels = 0;      // 0: STRATA_NCHANNELS
};

// NCCL_ALGO's allreduce part. The grammar is NCCL's: "Ring", "Tree,Ring",
// "^Tree" (all but Tree), or per collective, "allreduce:tree;broadcast:ring"
// (a section without a collective applies to all). Where what allreduce may
// use leaves exactly one of Ring and Tree, strata forces its algorithm of
// that name; NCCL's others (CollNet, NVLS, PAT) have no equivalent here.
ncclResult_t allreduceAlgoOf(const char* text, std::string* out) {
  static const char* const kKnown[] = {"tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"};
  std::string all(text), general, own;  // lower case
  bool hasOwn = false;
  for (char& c : all) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (size_t start = 0; start <= all.size();) {
    size_t end = all.find(';', start);
    if (end == std::string::npos) end = all.size();
    const std::string section = all.substr(start, end - start);
    start = end + 1;
    const size_t colon = section.find(':');
    if (colon == std::string::npos) {
      general = section;
    } else if (section.compare(0, colon, "allreduce") == 0) {
      own = section.substr(colon + 1);
      hasOwn = true;
    }
  }
  const std::string& list = hasOwn ? own : general;
  const bool exclude = !list.empty() && list[0] == '^';
  bool named[7] = {};
  for (size_t start = exclude ? 1 : 0; start < list.size();) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    const std::string name = list.substr(start, end - start);
    start = end + 1;
    const auto* at = std::find(std::begin(kKnown), std::end(kKnown), name);
    if (at == std::end(kKnown))
      return fail(ncclInvalidArgument, nullptr,
                  "NCCL_ALGO='%s' names '%s', which is not an NCCL algorithm (Tree, Ring, CollnetDirect, "
                  "CollnetChain, NVLS, NVLSTree, PAT)", text, name.c_str());
    named[at - std::begin(kKnown)] = true;
  }
  const bool tree = named[0] != exclude, ring = named[1] != exclude;
  out->assign(list.empty() || tree == ring ? "" : tree ? "tree" : "ring");
  return ncclSuccess;
}

// NCCL_ALGO, and the channel cap from config->maxCTAs, else NCCL_MAX_CTAS
// or NCCL_MAX_NCHANNELS (NCCL's CTAs are its channels).
ncclResult_t tuningOf(const ncclConfig_t* config, Tuning* out) {
  if (const char* algo = std::getenv("NCCL_ALGO"))
    if (ncclResult_t r = allreduceAlgoOf(algo, &out->algorithm); r != ncclSuccess) return r;
  long cap = config && config->maxCTAs != NCCL_CONFIG_UNDEF_INT ? config->maxCTAs : 0;
  const char* from = "config->maxCTAs";
  for (const char* name : {"NCCL_MAX_CTAS", "NCCL_MAX_NCHANNELS"}) {
    const char* v = std::getenv(name);
    if (cap != 0 || !v) continue;
    char* end = nullptr;
    cap = std::strtol(v, &end, 10);
    if (end == v || *end) return fail(ncclInvalidArgument, nullptr, "%s='%s' is not a number", name, v);
    from = name;
  }
  if (cap < 0) return fail(ncclInvalidArgument, nullptr, "%s=%ld is negative", from, cap);
  out->nchannels = static_cast<int>(std::min(cap, 32L));  // strata's most
  return ncclSuccess;
}

// A communicator freed inside the group that initialised it is not waited for.
void forget(ncclComm_t comm) {
  tGroupInits.erase(std::remove(tGroupInits.begin(), tGroupInits.end(), comm), tGroupInits.end());
}

// Waits for the communicators initialised inside the group that just ended,
// as NCCL completes them at ncclGroupEnd.
ncclResult_t finishGroupInits() {
  std::vector<ncclComm_t> inits;
  inits.swap(tGroupInits);
  ncclResult_t first = ncclSuccess;
  for (ncclComm_t comm : inits) {
    strata_result_t state = STRATA_IN_PROGRESS;
    strata_result_t rc = STRATA_SUCCESS;
    while (rc == STRATA_SUCCESS && state == STRATA_IN_PROGRESS) {
      rc = strata_comm_get_async_error(comm->comm, &state);
      if (state == STRATA_IN_PROGRESS) std::this_thread::yield();
    }
    ncclResult_t r = done(rc != STRATA_SUCCESS ? rc : state, comm);
    if (first == ncclSuccess) first = r;
  }
  return first;
}

// `device`: the rank's CUDA device, STRATA_DEVICE_CURRENT for the calling thread's (NCCL's rule).
ncclResult_t initRankOn(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config,
                        int device) {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm (the output pointer) is NULL");
  if (config && (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, splitShare)))
    return fail(ncclInvalidArgument, nullptr, "config was not initialised with NCCL_CONFIG_INITIALIZER");
  Tuning tuning;
  if (ncclResult_t r = tuningOf(config, &tuning); r != ncclSuccess) return r;
  strata_config_t settings = STRATA_CONFIG_INITIALIZER;
  settings.algorithm = tuning.algorithm.empty() ? nullptr : tuning.algorithm.c_str();
  settings.nchannels = tuning.nchannels;
  settings.device = device;
  strata_unique_id_t id;
  std::memcpy(&id, &commId, sizeof(id));
  strata_comm_t s;
  const bool nonBlocking = config && config->blocking == 0;
  // Inside a group the ranks may all be this thread's (one per GPU): start
  // each init and let ncclGroupEnd wait for them together.
  const bool inGroup = !nonBlocking && tGroupDepth > 0;
  strata_result_t rc = nonBlocking || inGroup
                           ? strata_comm_init_rank_config_nonblocking(&s, nranks, id, rank, &settings)
                           : strata_comm_init_rank_config(&s, nranks, id, rank, &settings);
  if (rc != STRATA_SUCCESS) return done(rc, nullptr);
  *comm = wrap(s);
  if (inGroup) tGroupInits.push_back(*comm);
  return nonBlocking ? ncclInProgress : ncclSuccess;
}

}  // namespace

extern "C" {

ncclResult_t ncclMemAlloc(void** ptr, size_t size) try {
  if (!ptr) return fail(ncclInvalidArgument, nullptr, "ptr (the output pointer) is NULL");
  return issued(strata_mem_alloc(ptr, size), nullptr, "ncclMemAlloc", nullptr);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclMemFree(void* ptr) try {
  return issued(strata_mem_free(ptr), nullptr, "ncclMemFree", nullptr);
} NCCL_CATCH_ESCAPES

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
  return initRankOn(comm, nranks, commId, rank, config, STRATA_DEVICE_CURRENT);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) try {
  return ncclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank, int nId,
                                      ncclUniqueId* commIds, ncclConfig_t* config) try {
  if (!newcomm) return fail(ncclInvalidArgument, nullptr, "newcomm (the output pointer) is NULL");
  if (nId < 1) return fail(ncclInvalidArgument, nullptr, "nId=%d: at least one ncclUniqueId is needed", nId);
  if (!commIds) return fail(ncclInvalidArgument, nullptr, "commIds is NULL with nId=%d", nId);
  // strata's bootstrap needs one id; every rank passes the same ids in the
  // same order, so the first one names the same job everywhere.
  return ncclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) try {
  if (!comms) return fail(ncclInvalidArgument, nullptr, "comm (the output array) is NULL");
  if (ndev < 1) return fail(ncclInvalidArgument, nullptr, "ndev=%d must be at least 1", ndev);
  // Rank i runs on devlist[i] (device i without a list), whichever device
  // is current here. Unlike NCCL, a device may appear more than once.
  for (int i = 0; devlist && i < ndev; ++i)
    if (devlist[i] < 0) return fail(ncclInvalidArgument, nullptr, "devlist[%d]=%d is not a CUDA device", i, devlist[i]);
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  if (r != ncclSuccess) return r;
  // Inside a group each rank's init starts without waiting for the others,
  // and ncclGroupEnd waits for all of them.
  r = ncclGroupStart();
  if (r != ncclSuccess) return r;
  int made = 0;
  while (made < ndev && r == ncclSuccess) {
    r = initRankOn(&comms[made], ndev, id, made, nullptr, devlist ? devlist[made] : made);
    if (r == ncclSuccess) ++made;
  }
  const std::string why = tLastError;
  ncclResult_t ended = ncclGroupEnd();
  if (r == ncclSuccess && ended == ncclSuccess) return ncclSuccess;
  for (int i = 0; i < made; ++i) ncclCommDestroy(comms[i]);
  return r != ncclSuccess ? fail(r, nullptr, "rank %d: %s", made, why.c_str()) : ended;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommFinalize(ncclComm_t comm) try {
  // Host calls have completed when they (or their group) returned; stream
  // calls complete in their streams' order, which the caller synchronises
  // before ncclCommDestroy.
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommDestroy(ncclComm_t comm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  forget(comm);
  strata_result_t rc = strata_comm_destroy(comm->comm);
  delete comm;
  return done(rc, nullptr);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommAbort(ncclComm_t comm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  forget(comm);
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
  *newcomm = s ? wrap(s) : nullptr;
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommShrink(ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                            ncclConfig_t* config, int shrinkFlags) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!newcomm) return fail(ncclInvalidArgument, comm, "newcomm (the output pointer) is NULL");
  if (config && config->magic != 0xcafebeef)
    return fail(ncclInvalidArgument, comm, "config was not initialised with NCCL_CONFIG_INITIALIZER");
  const int flags = shrinkFlags == NCCL_SHRINK_ABORT ? STRATA_SHRINK_ABORT
                    : shrinkFlags == NCCL_SHRINK_DEFAULT ? STRATA_SHRINK_DEFAULT
                                                         : -1;
  if (flags < 0) return fail(ncclInvalidArgument, comm, "shrinkFlags=%d is not an NCCL_SHRINK_ flag", shrinkFlags);
  strata_comm_t s = nullptr;
  strata_result_t rc = strata_comm_shrink(comm->comm, excludeRanksList, excludeRanksCount, flags, &s);
  if (rc != STRATA_SUCCESS) return done(rc, comm);
  *newcomm = s ? wrap(s) : nullptr;
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (revokeFlags != NCCL_REVOKE_DEFAULT)
    return fail(ncclInvalidArgument, comm, "revokeFlags=%d is not NCCL_REVOKE_DEFAULT", revokeFlags);
  return done(strata_comm_revoke(comm->comm), comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommGetUniqueId(ncclComm_t comm, ncclUniqueId* uniqueId) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!uniqueId) return fail(ncclInvalidArgument, comm, "uniqueId (the output pointer) is NULL");
  strata_unique_id_t id;
  strata_result_t rc = strata_comm_grow_id(comm->comm, &id);
  if (rc == STRATA_SUCCESS) std::memcpy(uniqueId, &id, sizeof(id));
  return done(rc, comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommGrow(ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank, ncclComm_t* newcomm,
                          ncclConfig_t* config) try {
  if (!newcomm) return fail(ncclInvalidArgument, comm, "newcomm (the output pointer) is NULL");
  if (config && config->magic != 0xcafebeef)
    return fail(ncclInvalidArgument, comm, "config was not initialised with NCCL_CONFIG_INITIALIZER");
  strata_unique_id_t id;
  if (uniqueId) std::memcpy(&id, uniqueId, sizeof(id));
  strata_comm_t s = nullptr;
  strata_result_t rc = strata_comm_grow(comm ? comm->comm : nullptr, nRanks, uniqueId ? &id : nullptr, rank, &s);
  if (rc != STRATA_SUCCESS) return done(rc, comm);
  *newcomm = wrap(s);
  return ncclSuccess;
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
  if (!comm) return tLastError.c_str();
  // A copy per reading thread: the communicator's string may be rewritten
  // by the thread using it while this one reads.
  thread_local std::string copy;
  try {
    std::lock_guard<std::mutex> lock(comm->errorMutex);
    copy = comm->lastError;
  } catch (const std::exception&) {
    return "out of memory copying the communicator's last error";
  }
  return copy.c_str();
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
  return done(strata_comm_device(comm->comm, device), comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!value) return fail(ncclInvalidArgument, comm, "value is NULL");
  if (stat == ncclStatGpuMemSuspend || stat == ncclStatGpuMemSuspended) {
    *value = stat == ncclStatGpuMemSuspended && comm->suspended;  // none of strata's memory can be released
    return ncclSuccess;
  }
  if (stat != ncclStatGpuMemPersist && stat != ncclStatGpuMemTotal)
    return fail(ncclInvalidArgument, comm, "stat=%d is not an ncclCommMemStat_t", static_cast<int>(stat));
  strata_memory_t usage = STRATA_MEMORY_INITIALIZER;
  strata_result_t rc = strata_comm_memory(comm->comm, &usage);
  if (rc == STRATA_SUCCESS) *value = usage.device_bytes;
  return done(rc, comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommSuspend(ncclComm_t comm, int flags) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (flags & ~NCCL_SUSPEND_MEM)
    return fail(ncclInvalidArgument, comm, "flags=%#x: only NCCL_SUSPEND_MEM (%#x) is known", static_cast<unsigned>(flags),
                static_cast<unsigned>(NCCL_SUSPEND_MEM));
  if (comm->suspended) return fail(ncclInvalidUsage, comm, "the communicator is suspended already");
  comm->suspended = true;
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommResume(ncclComm_t comm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!comm->suspended) return fail(ncclInvalidUsage, comm, "the communicator is not suspended (ncclCommSuspend)");
  comm->suspended = false;
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  return done(strata_comm_rank(comm->comm, rank), comm);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!handle) return fail(ncclInvalidArgument, comm, "handle (the output pointer) is NULL");
  if (!buff) return fail(ncclInvalidArgument, comm, "buff is NULL (size=%zu)", size);
  auto reg = std::make_unique<char>();
  void* key = reg.get();
  comm->registrations.emplace(key, std::move(reg));
  *handle = key;
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (comm->registrations.erase(handle) == 0)
    return fail(ncclInvalidArgument, comm,
                "handle=%p is not a registration of this communicator (ncclCommRegister's, not yet deregistered)",
                handle);
  return ncclSuccess;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!op || !scalar) return fail(ncclInvalidArgument, comm, "%s is NULL", op ? "scalar" : "op");
  if (residence != ncclScalarHostImmediate && residence != ncclScalarDevice)
    return fail(ncclInvalidArgument, comm, "residence=%d is not an ncclScalarResidence_t", residence);
  strata_datatype_t dt;
  if (!toStrata(datatype, &dt)) return fail(ncclInvalidArgument, comm, "datatype=%d is not an ncclDataType_t", datatype);
  ncclComm::PreMul pm{true, datatype, residence, {}, nullptr};
  if (residence == ncclScalarHostImmediate) std::memcpy(pm.scalar, scalar, strata_datatype_size(dt));
  else pm.device = scalar;
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
  return reduction("ncclAllReduce", comm, stream, datatype, op,
                   [&](strata_datatype_t dt, strata_op_t sop, const strata_call_options_t* o) {
                     return strata_allreduce_ex(sendbuff, recvbuff, count, dt, sop, comm->comm, o);
                   });
} NCCL_CATCH_ESCAPES

ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) try {
  return reduction("ncclReduce", comm, stream, datatype, op,
                   [&](strata_datatype_t dt, strata_op_t sop, const strata_call_options_t* o) {
                     return strata_reduce_ex(sendbuff, recvbuff, count, dt, sop, root, comm->comm, o);
                   });
} NCCL_CATCH_ESCAPES

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) try {
  int n = 0;
  if (comm) strata_comm_size(comm->comm, &n);  // a failed size leaves 0: strata_reduce_scatter_ex reports it
  // The input count is formed only once it cannot wrap.
  if (n > 0 && recvcount > SIZE_MAX / static_cast<size_t>(n))
    return fail(ncclInvalidArgument, comm, "recvcount=%zu times %d ranks overflows size_t", recvcount, n);
  return reduction("ncclReduceScatter", comm, stream, datatype, op,
                   [&](strata_datatype_t dt, strata_op_t sop, const strata_call_options_t* o) {
                     return strata_reduce_scatter_ex(sendbuff, recvbuff, recvcount, dt, sop, comm->comm, o);
                   });
} NCCL_CATCH_ESCAPES

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                           int root, ncclComm_t comm, cudaStream_t stream) try {
  Prepared p;
  ncclResult_t r = prepare(comm, stream, datatype, &p);
  if (r != ncclSuccess) return r;
  return issued(strata_broadcast_ex(sendbuff, recvbuff, count, p.dt, root, comm->comm, &p.options), comm,
                "ncclBroadcast", stream);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                       cudaStream_t stream) try {
  return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) try {
  Prepared p;
  ncclResult_t r = prepare(comm, stream, datatype, &p);
  if (r != ncclSuccess) return r;
  return issued(strata_allgather_ex(sendbuff, recvbuff, sendcount, p.dt, comm->comm, &p.options), comm,
                "ncclAllGather", stream);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
                          ncclComm_t comm, cudaStream_t stream) try {
  Prepared p;
  ncclResult_t r = prepare(comm, stream, datatype, &p);
  if (r != ncclSuccess) return r;
  return issued(strata_alltoall_ex(sendbuff, recvbuff, count, p.dt, comm->comm, &p.options), comm,
                "ncclAlltoAll", stream);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                        ncclComm_t comm, cudaStream_t stream) try {
  return rooted(true, sendbuff, recvbuff, count, datatype, root, comm, stream);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                         ncclComm_t comm, cudaStream_t stream) try {
  return rooted(false, sendbuff, recvbuff, count, datatype, root, comm, stream);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) try {
  Prepared p;
  ncclResult_t r = prepare(comm, stream, datatype, &p);
  if (r != ncclSuccess) return r;
  return issued(strata_send_ex(sendbuff, count, p.dt, peer, comm->comm, &p.options), comm, "ncclSend", stream);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) try {
  Prepared p;
  ncclResult_t r = prepare(comm, stream, datatype, &p);
  if (r != ncclSuccess) return r;
  return issued(strata_recv_ex(recvbuff, count, p.dt, peer, comm->comm, &p.options), comm, "ncclRecv", stream);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclGroupStart(void) try {
  strata_result_t rc = strata_group_start();
  if (rc == STRATA_SUCCESS) ++tGroupDepth;
  return done(rc, nullptr);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclGroupEnd(void) try {
  ncclResult_t r = done(strata_group_end(), nullptr);
  if (tGroupDepth > 0 && --tGroupDepth == 0) {
    ncclResult_t inits = finishGroupInits();
    if (r == ncclSuccess) r = inits;
  }
  return r;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags) try {
  if (!win) return fail(ncclInvalidArgument, comm, "win (the output pointer) is NULL");
  if (winFlags & ~NCCL_WIN_COLL_SYMMETRIC) return fail(ncclInvalidArgument, comm, "winFlags=%#x has unknown bits", winFlags);
  void* handle = nullptr;
  ncclResult_t r = ncclCommRegister(comm, buff, size, &handle);
  if (r == ncclSuccess) *win = static_cast<ncclWindow_t>(handle);
  return r;
} NCCL_CATCH_ESCAPES

ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) try {
  return ncclCommDeregister(comm, win);
} NCCL_CATCH_ESCAPES

ncclResult_t ncclDevCommCreate(ncclComm_t comm, const ncclDevCommRequirements_t* /*reqs*/, ncclDevComm_t* outDevComm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  if (!outDevComm) return fail(ncclInvalidArgument, comm, "outDevComm (the output pointer) is NULL");
  return fail(ncclInvalidUsage, comm, "strata has no device communicators (NCCL's device API for kernels that communicate)");
} NCCL_CATCH_ESCAPES

ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const ncclDevComm_t* devComm) try {
  if (!comm) return fail(ncclInvalidArgument, nullptr, "comm is NULL");
  return fail(ncclInvalidArgument, comm, "devComm=%p was not made by ncclDevCommCreate: strata makes none",
              static_cast<const void*>(devComm));
} NCCL_CATCH_ESCAPES

ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* simInfo) try {
  if (!simInfo) return fail(ncclInvalidArgument, nullptr, "simInfo is NULL");
  if (tGroupDepth == 0) return fail(ncclInvalidUsage, nullptr, "no group is open: ncclGroupSimulateEnd ends one");
  return fail(ncclInvalidUsage, nullptr,
              "strata cannot simulate a group: its operations stay queued and the group open; ncclGroupEnd runs them");
} NCCL_CATCH_ESCAPES

// NCCL's profiling names (pncclX): the same functions, for tools that wrap ncclX.
#define NCCL_PROFILING_NAME(fn) __typeof__(fn) p##fn __attribute__((alias(#fn)));
NCCL_PROFILING_NAME(ncclMemAlloc)
NCCL_PROFILING_NAME(ncclMemFree)
NCCL_PROFILING_NAME(ncclGetVersion)
NCCL_PROFILING_NAME(ncclGetUniqueId)
NCCL_PROFILING_NAME(ncclCommInitRankConfig)
NCCL_PROFILING_NAME(ncclCommInitRank)
NCCL_PROFILING_NAME(ncclCommInitRankScalable)
NCCL_PROFILING_NAME(ncclCommInitAll)
NCCL_PROFILING_NAME(ncclCommFinalize)
NCCL_PROFILING_NAME(ncclCommDestroy)
NCCL_PROFILING_NAME(ncclCommAbort)
NCCL_PROFILING_NAME(ncclCommSplit)
NCCL_PROFILING_NAME(ncclCommShrink)
NCCL_PROFILING_NAME(ncclCommRevoke)
NCCL_PROFILING_NAME(ncclCommGetUniqueId)
NCCL_PROFILING_NAME(ncclCommGrow)
NCCL_PROFILING_NAME(ncclGetErrorString)
NCCL_PROFILING_NAME(ncclGetLastError)
NCCL_PROFILING_NAME(ncclCommGetAsyncError)
NCCL_PROFILING_NAME(ncclCommCount)
NCCL_PROFILING_NAME(ncclCommCuDevice)
NCCL_PROFILING_NAME(ncclCommMemStats)
NCCL_PROFILING_NAME(ncclCommSuspend)
NCCL_PROFILING_NAME(ncclCommResume)
NCCL_PROFILING_NAME(ncclCommUserRank)
NCCL_PROFILING_NAME(ncclCommRegister)
NCCL_PROFILING_NAME(ncclCommDeregister)
NCCL_PROFILING_NAME(ncclRedOpCreatePreMulSum)
NCCL_PROFILING_NAME(ncclRedOpDestroy)
NCCL_PROFILING_NAME(ncclReduce)
NCCL_PROFILING_NAME(ncclBcast)
NCCL_PROFILING_NAME(ncclBroadcast)
NCCL_PROFILING_NAME(ncclAllReduce)
NCCL_PROFILING_NAME(ncclReduceScatter)
NCCL_PROFILING_NAME(ncclAllGather)
NCCL_PROFILING_NAME(ncclSend)
NCCL_PROFILING_NAME(ncclRecv)
NCCL_PROFILING_NAME(ncclAlltoAll)
NCCL_PROFILING_NAME(ncclGather)
NCCL_PROFILING_NAME(ncclScatter)
NCCL_PROFILING_NAME(ncclGroupStart)
NCCL_PROFILING_NAME(ncclGroupEnd)
NCCL_PROFILING_NAME(ncclCommWindowRegister)
NCCL_PROFILING_NAME(ncclCommWindowDeregister)
NCCL_PROFILING_NAME(ncclDevCommCreate)
NCCL_PROFILING_NAME(ncclDevCommDestroy)
NCCL_PROFILING_NAME(ncclGroupSimulateEnd)
#undef NCCL_PROFILING_NAME

}  // extern "C"
