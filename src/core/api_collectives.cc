// C API: collectives, point-to-point and requests. Every argument is checked
// here, before anything is queued, so a bad call never disturbs the other ranks.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <string>

#include "api_streams.h"
#include "call_pick.h"
#include "cuda_seam.h"
#include "kernels.h"
#include "op_desc.h"

namespace strata::api {
namespace {

Status checkComm(strata_comm* comm) {
  if (!comm) return STRATA_INVALID_ARG("comm is NULL");
  STRATA_CHECK(ready(comm));
  if (comm->impl->failed()) {
    Status earlier = comm->impl->failure();
    return makeErrorQuiet(earlier.code(), "the communicator failed earlier: %s", earlier.message().c_str());
  }
  return Status::ok();
}

Status checkDatatype(strata_datatype_t datatype) {
  if (datatype < 0 || datatype >= STRATA_NUM_DATATYPES)
    return STRATA_INVALID_ARG("datatype=%d is not a strata_datatype_t", static_cast<int>(datatype));
  return Status::ok();
}

Status checkOp(strata_op_t op) {
  if (op < 0 || op >= STRATA_NUM_OPS)
    return STRATA_INVALID_ARG("op=%d is not a strata_op_t", static_cast<int>(op));
  return Status::ok();
}

// `count` elements, `blocks` times over (the whole buffer), must fit a slot
// tag, which also keeps their bytes addressable: no datatype is wider than 8
// bytes. The datatype is valid.
static_assert(OpDesc::kMaxCount <= SIZE_MAX / 8, "a tag's count in bytes must fit size_t");
Status checkCount(const char* name, size_t count, uint64_t blocks, strata_datatype_t datatype) {
  const uint64_t limit = OpDesc::kMaxCount / blocks;
  if (count > limit)
    return STRATA_INVALID_ARG("%s=%zu is too large (at most %llu elements of %s%s)", name, count,
                              (unsigned long long)limit, datatypeName(datatype),
                              blocks > 1 ? " per rank" : "");
  return Status::ok();
}

Status checkRank(const char* name, int value, strata_comm* comm) {
  if (value < 0 || value >= comm->impl->size())
    return STRATA_INVALID_ARG("%s=%d is outside 0..%d (the communicator's ranks)", name, value,
                              comm->impl->size() - 1);
  return Status::ok();
}

Status checkBuffer(const char* name, const void* buf, uint64_t bytes) {
  if (bytes > 0 && !buf) return STRATA_INVALID_ARG("%s is NULL with %llu bytes to move", name, (unsigned long long)bytes);
  return Status::ok();
}

bool overlaps(const void* a, uint64_t aBytes, const void* b, uint64_t bBytes) {
  auto x = reinterpret_cast<uintptr_t>(a);
  auto y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

// sendbuf and recvbuf are either the in-place pair (sendbuf == inPlaceAt) or
// disjoint.
Status checkPlacement(const void* sendbuf, uint64_t sendBytes, const void* recvbuf, uint64_t recvBytes,
                      const void* inPlaceAt, const char* inPlaceRule) {
  if (inPlaceAt && sendbuf == inPlaceAt) return Status::ok();
  if (overlaps(sendbuf, sendBytes, recvbuf, recvBytes))
    return STRATA_INVALID_ARG("sendbuf=%p (%llu bytes) and recvbuf=%p (%llu bytes) overlap; %s",
                              sendbuf, (unsigned long long)sendBytes, recvbuf,
                              (unsigned long long)recvBytes, inPlaceRule);
  return Status::ok();
}

// The extent in elements of blocks (counts[i] at displs[i]), checked for
// arrays present and no overflow.
Status blocksExtent(const char* countsName, const size_t* counts, const char* displsName,
                    const size_t* displs, int n, uint64_t* extent) {
  if (!counts) return STRATA_INVALID_ARG("%s is NULL", countsName);
  if (!displs) return STRATA_INVALID_ARG("%s is NULL", displsName);
  *extent = 0;
  for (int p = 0; p < n; ++p) {
    if (counts[p] > OpDesc::kMaxCount || displs[p] > OpDesc::kMaxCount)
      return STRATA_INVALID_ARG("%s[%d]=%zu or %s[%d]=%zu is too large", countsName, p, counts[p],
                                displsName, p, displs[p]);
    if (counts[p] > 0) *extent = std::max<uint64_t>(*extent, counts[p] + displs[p]);
  }
  return Status::ok();
}

// Runs submit(callerWaits, request): blocking (request == NULL) it waits for
// the operation; otherwise it hands out a strata_request.
template <typename Submit>
strata_result_t start(strata_comm* comm, strata_request_t* request, Submit submit) {
  CallGuard guard(comm);
  if (!request) {
    Request r;
    Status s = submit(true, &r);
    if (s.isOk()) s = comm->impl->wait(r);
    return finish(s, comm);
  }
  auto* r = new strata_request(comm);
  Status s = submit(false, &r->request);
  if (!s.isOk()) {
    freeRequest(r);
    return finish(s, comm);
  }
  *request = r;
  return STRATA_SUCCESS;
}

// Queues the call in the thread's group, or submits it and (blocking) waits.
strata_result_t issue(strata_comm* comm, const CollCall& call, bool nothingToDo,
                      strata_request_t* request) {
  if (groupActive()) {
    if (request)
      return finish(makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                   "non-blocking %s inside strata_group_start/end; use the "
                                   "blocking form, which the group makes asynchronous",
                                   collName(call.coll)),
                    comm);
    if (!nothingToDo) deferCollective(comm, call);
    return STRATA_SUCCESS;
  }
  if (nothingToDo) {
    if (request) *request = nullptr;
    return STRATA_SUCCESS;
  }
  return start(comm, request,
               [&](bool callerWaits, Request* r) {
                 return callerWaits ? comm->impl->run(call, r) : comm->impl->submit(call, false, r);
               });
}

strata_result_t issueP2p(strata_comm* comm, const P2pOp& op, strata_request_t* request) {
  if (groupActive()) {
    if (request)
      return finish(makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                   "strata_i%s inside strata_group_start/end; use strata_%s",
                                   op.send ? "send" : "recv", op.send ? "send" : "recv"),
                    comm);
    if (op.count > 0) deferP2p(comm, op);
    return STRATA_SUCCESS;
  }
  if (op.count == 0) {
    if (request) *request = nullptr;
    return STRATA_SUCCESS;
  }
  if (op.peer == comm->impl->rank())
    return finish(makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                 "peer=%d is this rank itself: a message to oneself needs its send "
                                 "and receive in one strata_group_start/end", op.peer),
                  comm);
  return start(comm, request,
               [&](bool callerWaits, Request* r) { return comm->impl->submitGroup({op}, callerWaits, r); });
}

CollCall makeCall(Coll coll, const void* sendbuf, void* recvbuf, size_t count,
                  strata_datatype_t datatype, strata_op_t op = STRATA_SUM, int root = 0) {
  return CollCall{coll, sendbuf, recvbuf, count, datatype, op, root, nullptr, nullptr, nullptr, nullptr};
}

#define STRATA_TRY(expr)                        \
  do {                                          \
    ::strata::Status s_ = (expr);               \
    if (!s_.isOk()) return finish(s_, comm);    \
  } while (0)

// The bytes a call's buffers span on this rank.
struct Extents {
  uint64_t in, out;
};

// A host-ordered pre-multiplied sum: the input scaled into a copy, then the
// call on it (in a group, the copy lives until the group's calls are done).
strata_result_t issueHostPremul(strata_comm* comm, const CollCall& call, bool nothingToDo, const CallOptions& o,
                                Extents e) {
  if (!gpu::mapped(o.premul, strata_datatype_size(call.datatype)))
    return finish(STRATA_INVALID_ARG("options->premul_scalar=%p is not memory this process can read: without a "
                                     "stream the scalar is read by the CPU when the call is made", o.premul),
                  comm);
  if (nothingToDo) return issue(comm, call, true, nullptr);
  std::vector<char> scaled(e.in);
  kernels::scaleBy(scaled.data(), call.sendbuf, e.in / strata_datatype_size(call.datatype), call.datatype, o.premul);
  CollCall c = call;
  c.sendbuf = scaled.data();
  if (groupActive()) {
    deferCollective(comm, c, nullptr, std::move(scaled));
    return STRATA_SUCCESS;
  }
  return issue(comm, c, false, nullptr);
}

// The strata_*_ex forms, once the call's own arguments are checked.
// options->algorithm, channels and chunk_bytes, checked against the communicator.
Status pickOf(const Comm& comm, Coll coll, const CallOptions& o, CallPick* pick) {
  return makePick(coll, o.algorithm, o.channels, o.chunkBytes,
                  {comm.channels(), comm.slotBytes(), comm.reproducible()}, "options->", pick);
}

strata_result_t issueEx(strata_comm* comm, const CollCall& asGiven, bool nothingToDo, const CallOptions& given,
                        Extents e) {
  CollCall call = asGiven;
  STRATA_TRY(pickOf(*comm->impl, call.coll, given, &call.pick));
  STRATA_TRY(checkPremul(call.coll, call.op, given));
  CallOptions o = given;
  if (!o.stream) {
    STRATA_TRY(placeWithoutStream(&o, call.sendbuf, e.in, call.recvbuf, e.out, call.datatype));
    if (!o.stream)
      return o.premul ? issueHostPremul(comm, call, nothingToDo, o, e) : issue(comm, call, nothingToDo, nullptr);
  }
  StreamCall sc;
  STRATA_TRY(describeStreamCall(o, call.sendbuf, e.in, call.recvbuf, e.out, call.datatype, &sc));
  if (groupActive()) {
    if (!nothingToDo) deferCollective(comm, call, &sc);
    return STRATA_SUCCESS;
  }
  if (nothingToDo) return STRATA_SUCCESS;
  CallGuard guard(comm);
  return finish(submitOnStream(*comm->impl, call, sc), comm);
}

// Host-ordered (request, or blocking when null) or a strata_*_ex call (opts).
strata_result_t issueAny(strata_comm* comm, const CollCall& call, bool nothingToDo, strata_request_t* request,
                         const CallOptions* opts, Extents e) {
  return opts ? issueEx(comm, call, nothingToDo, *opts, e) : issue(comm, call, nothingToDo, request);
}

strata_result_t allreduce(const void* sendbuf, void* recvbuf, size_t count,
                          strata_datatype_t datatype, strata_op_t op, strata_comm* comm,
                          strata_request_t* request, const CallOptions* opts = nullptr) {
  STRATA_TRY(checkComm(comm));
  STRATA_TRY(checkDatatype(datatype));
  STRATA_TRY(checkOp(op));
  STRATA_TRY(checkCount("count", count, 1, datatype));
  const uint64_t bytes = count * strata_datatype_size(datatype);
  STRATA_TRY(checkBuffer("sendbuf", sendbuf, bytes));
  STRATA_TRY(checkBuffer("recvbuf", recvbuf, bytes));
  STRATA_TRY(checkPlacement(sendbuf, bytes, recvbuf, bytes, recvbuf, "in place means sendbuf == recvbuf"));
  return issueAny(comm, makeCall(Coll::Allreduce, sendbuf, recvbuf, count, datatype, op), count == 0, request,
                  opts, {bytes, bytes});
}

strata_result_t broadcast(const void* sendbuf, void* recvbuf, size_t count,
                          strata_datatype_t datatype, int root, strata_comm* comm,
                          strata_request_t* request, const CallOptions* opts = nullptr) {
  STRATA_TRY(checkComm(comm));
  STRATA_TRY(checkDatatype(datatype));
  STRATA_TRY(checkCount("count", count, 1, datatype));
  STRATA_TRY(checkRank("root", root, comm));
  const uint64_t bytes = count * strata_datatype_size(datatype);
  const bool isRoot = root == comm->impl->rank();
  if (isRoot) STRATA_TRY(checkBuffer("sendbuf", sendbuf, bytes));
  STRATA_TRY(checkBuffer("recvbuf", recvbuf, bytes));
  if (isRoot)
    STRATA_TRY(checkPlacement(sendbuf, bytes, recvbuf, bytes, recvbuf, "in place means sendbuf == recvbuf"));
  return issueAny(comm, makeCall(Coll::Broadcast, sendbuf, recvbuf, count, datatype, STRATA_SUM, root),
                  count == 0, request, opts, {isRoot ? bytes : 0, bytes});
}

strata_result_t reduce(const void* sendbuf, void* recvbuf, size_t count, strata_datatype_t datatype,
                       strata_op_t op, int root, strata_comm* comm, strata_request_t* request,
                       const CallOptions* opts = nullptr) {
  STRATA_TRY(checkComm(comm));
  STRATA_TRY(checkDatatype(datatype));
  STRATA_TRY(checkOp(op));
  STRATA_TRY(checkCount("count", count, 1, datatype));
  STRATA_TRY(checkRank("root", root, comm));
  const uint64_t bytes = count * strata_datatype_size(datatype);
  const bool isRoot = root == comm->impl->rank();
  STRATA_TRY(checkBuffer("sendbuf", sendbuf, bytes));
  if (isRoot) {
    STRATA_TRY(checkBuffer("recvbuf", recvbuf, bytes));
    STRATA_TRY(checkPlacement(sendbuf, bytes, recvbuf, bytes, recvbuf, "in place means sendbuf == recvbuf"));
  }
  return issueAny(comm, makeCall(Coll::Reduce, sendbuf, recvbuf, count, datatype, op, root), count == 0,
                  request, opts, {bytes, isRoot ? bytes : 0});
}

strata_result_t allgather(const void* sendbuf, void* recvbuf, size_t count,
                          strata_datatype_t datatype, strata_comm* comm, strata_request_t* request,
                          const CallOptions* opts = nullptr) {
  STRATA_TRY(checkComm(comm));
  STRATA_TRY(checkDatatype(datatype));
  const int n = comm->impl->size();
  STRATA_TRY(checkCount("count", count, n, datatype));
  const uint64_t bytes = count * strata_datatype_size(datatype);
  STRATA_TRY(checkBuffer("sendbuf", sendbuf, bytes));
  STRATA_TRY(checkBuffer("recvbuf", recvbuf, bytes * n));
  const char* inPlace = static_cast<const char*>(recvbuf) + bytes * comm->impl->rank();
  STRATA_TRY(checkPlacement(sendbuf, bytes, recvbuf, bytes * n, bytes ? inPlace : nullptr,
                            "in place means sendbuf == recvbuf + rank * count elements"));
  return issueAny(comm, makeCall(Coll::Allgather, sendbuf, recvbuf, count, datatype), count == 0, request, opts,
                  {bytes, bytes * n});
}

strata_result_t reduceScatter(const void* sendbuf, void* recvbuf, size_t count,
                              strata_datatype_t datatype, strata_op_t op, strata_comm* comm,
                              strata_request_t* request, const CallOptions* opts = nullptr) {
  STRATA_TRY(checkComm(comm));
  STRATA_TRY(checkDatatype(datatype));
  STRATA_TRY(checkOp(op));
  const int n = comm->impl->size();
  STRATA_TRY(checkCount("count", count, n, datatype));
  const uint64_t bytes = count * strata_datatype_size(datatype);
  STRATA_TRY(checkBuffer("sendbuf", sendbuf, bytes * n));
  STRATA_TRY(checkBuffer("recvbuf", recvbuf, bytes));
  // In place: the output block is the own block of the input.
  if (bytes && recvbuf != static_cast<const char*>(sendbuf) + bytes * comm->impl->rank())
    STRATA_TRY(checkPlacement(sendbuf, bytes * n, recvbuf, bytes, nullptr,
                              "in place means recvbuf == sendbuf + rank * count elements"));
  return issueAny(comm, makeCall(Coll::ReduceScatter, sendbuf, recvbuf, count, datatype, op), count == 0,
                  request, opts, {bytes * n, bytes});
}

strata_result_t alltoall(const void* sendbuf, void* recvbuf, size_t count,
                         strata_datatype_t datatype, strata_comm* comm, strata_request_t* request,
                         const CallOptions* opts = nullptr) {
  STRATA_TRY(checkComm(comm));
  STRATA_TRY(checkDatatype(datatype));
  const int n = comm->impl->size();
  STRATA_TRY(checkCount("count", count, n, datatype));
  const uint64_t bytes = count * strata_datatype_size(datatype) * n;
  STRATA_TRY(checkBuffer("sendbuf", sendbuf, bytes));
  STRATA_TRY(checkBuffer("recvbuf", recvbuf, bytes));
  STRATA_TRY(checkPlacement(sendbuf, bytes, recvbuf, bytes, nullptr, "alltoall is never in place"));
  return issueAny(comm, makeCall(Coll::Alltoall, sendbuf, recvbuf, count, datatype), count == 0, request, opts,
                  {bytes, bytes});
}

strata_result_t allgatherv(const void* sendbuf, size_t sendcount, void* recvbuf,
                           const size_t* recvcounts, const size_t* displs,
                           strata_datatype_t datatype, strata_comm* comm, strata_request_t* request) {
  STRATA_TRY(checkComm(comm));
  STRATA_TRY(checkDatatype(datatype));
  const int n = comm->impl->size(), rank = comm->impl->rank();
  uint64_t extent = 0;
  STRATA_TRY(blocksExtent("recvcounts", recvcounts, "displs", displs, n, &extent));
  STRATA_TRY(checkCount("the receive extent (max displs[p] + recvcounts[p])", extent, 1, datatype));
  if (sendcount != recvcounts[rank])
    return finish(STRATA_INVALID_ARG("sendcount=%zu differs from recvcounts[%d]=%zu (this rank's block)",
                                     sendcount, rank, recvcounts[rank]),
                  comm);
  const size_t size = strata_datatype_size(datatype);
  STRATA_TRY(checkBuffer("sendbuf", sendbuf, sendcount * size));
  STRATA_TRY(checkBuffer("recvbuf", recvbuf, extent * size));
  const char* inPlace = static_cast<const char*>(recvbuf) + displs[rank] * size;
  STRATA_TRY(checkPlacement(sendbuf, sendcount * size, recvbuf, extent * size, sendcount ? inPlace : nullptr,
                            "in place means sendbuf == recvbuf + displs[rank] elements"));
  CollCall call = makeCall(Coll::Allgatherv, sendbuf, recvbuf, 0, datatype);
  call.recvCounts = recvcounts;
  call.recvDispls = displs;
  return issue(comm, call, false, request);
}

strata_result_t alltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                          void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                          strata_datatype_t datatype, strata_comm* comm, strata_request_t* request) {
  STRATA_TRY(checkComm(comm));
  STRATA_TRY(checkDatatype(datatype));
  const int n = comm->impl->size(), rank = comm->impl->rank();
  uint64_t sendExtent = 0, recvExtent = 0;
  STRATA_TRY(blocksExtent("sendcounts", sendcounts, "sdispls", sdispls, n, &sendExtent));
  STRATA_TRY(blocksExtent("recvcounts", recvcounts, "rdispls", rdispls, n, &recvExtent));
  STRATA_TRY(checkCount("the send extent (max sdispls[p] + sendcounts[p])", sendExtent, 1, datatype));
  STRATA_TRY(checkCount("the receive extent (max rdispls[p] + recvcounts[p])", recvExtent, 1, datatype));
  if (sendcounts[rank] != recvcounts[rank])
    return finish(STRATA_INVALID_ARG("sendcounts[%d]=%zu differs from recvcounts[%d]=%zu (the block "
                                     "this rank sends to itself)", rank, sendcounts[rank], rank,
                                     recvcounts[rank]),
                  comm);
  const size_t size = strata_datatype_size(datatype);
  STRATA_TRY(checkBuffer("sendbuf", sendbuf, sendExtent * size));
  STRATA_TRY(checkBuffer("recvbuf", recvbuf, recvExtent * size));
  STRATA_TRY(checkPlacement(sendbuf, sendExtent * size, recvbuf, recvExtent * size, nullptr,
                            "alltoallv is never in place"));
  CollCall call = makeCall(Coll::Alltoallv, sendbuf, recvbuf, 0, datatype);
  call.sendCounts = sendcounts;
  call.sendDispls = sdispls;
  call.recvCounts = recvcounts;
  call.recvDispls = rdispls;
  return issue(comm, call, false, request);
}

// A stream-ordered send or receive.
strata_result_t issueP2pEx(strata_comm* comm, const P2pOp& op, const CallOptions& given) {
  STRATA_TRY(checkPremul(Coll::SendRecv, STRATA_SUM, given));
  const uint64_t bytes = op.count * strata_datatype_size(op.datatype);
  const uint64_t in = op.send ? bytes : 0, out = op.send ? 0 : bytes;
  CallOptions o = given;
  if (!o.stream) {
    STRATA_TRY(placeWithoutStream(&o, op.sendbuf, in, op.recvbuf, out, op.datatype));
    if (!o.stream) return issueP2p(comm, op, nullptr);
  }
  StreamCall sc;
  STRATA_TRY(describeStreamCall(o, op.sendbuf, in, op.recvbuf, out, op.datatype, &sc));
  if (groupActive()) {
    if (op.count > 0) deferP2p(comm, op, &sc);
    return STRATA_SUCCESS;
  }
  if (op.count == 0) return STRATA_SUCCESS;
  if (op.peer == comm->impl->rank())
    return finish(makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                 "peer=%d is this rank itself: a message to oneself needs its send "
                                 "and receive in one strata_group_start/end", op.peer),
                  comm);
  CallGuard guard(comm);
  return finish(submitGroupOnStream(*comm->impl, o.stream, {op}, {sc.part}), comm);
}

strata_result_t p2p(bool send, const void* sendbuf, void* recvbuf, size_t count,
                    strata_datatype_t datatype, int peer, strata_comm* comm,
                    strata_request_t* request, const CallOptions* opts = nullptr) {
  STRATA_TRY(checkComm(comm));
  STRATA_TRY(checkDatatype(datatype));
  STRATA_TRY(checkCount("count", count, 1, datatype));
  STRATA_TRY(checkRank("peer", peer, comm));
  const uint64_t bytes = count * strata_datatype_size(datatype);
  STRATA_TRY(send ? checkBuffer("sendbuf", sendbuf, bytes) : checkBuffer("recvbuf", recvbuf, bytes));
  const P2pOp op{send, peer, sendbuf, recvbuf, count, datatype};
  return opts ? issueP2pEx(comm, op, *opts) : issueP2p(comm, op, request);
}

strata_result_t barrier(strata_comm* comm, strata_request_t* request) {
  STRATA_TRY(checkComm(comm));
  return issue(comm, makeCall(Coll::Barrier, nullptr, nullptr, 1, STRATA_UINT8), false, request);
}

// The call strata_comm_algorithm and strata_comm_explain ask about, checked.
Status queryCall(strata_comm* comm, const char* collective, size_t count, strata_datatype_t datatype,
                 CollCall* call) {
  if (!collective) return STRATA_INVALID_ARG("collective is NULL");
  Coll coll;
  if (!namedColl(std::string(collective, strnlen(collective, 64)), &coll))
    return STRATA_INVALID_ARG("collective='%.64s' is not one of allreduce, broadcast, reduce, "
                              "allgather, reduce_scatter, alltoall", collective);
  STRATA_CHECK(checkDatatype(datatype));
  // Allgather, reduce_scatter and alltoall buffers hold a block per rank.
  const bool perRank = coll == Coll::Allgather || coll == Coll::ReduceScatter || coll == Coll::Alltoall;
  STRATA_CHECK(checkCount("count", count, perRank ? static_cast<uint64_t>(comm->impl->size()) : 1, datatype));
  *call = makeCall(coll, nullptr, nullptr, count, datatype, STRATA_SUM);
  return Status::ok();
}

strata_result_t algorithm(strata_comm* comm, const char* collective, size_t count,
                          strata_datatype_t datatype, char* name, size_t len, int* nchannels) {
  STRATA_TRY(checkComm(comm));
  CollCall call;
  STRATA_TRY(queryCall(comm, collective, count, datatype, &call));
  if (!name || len == 0) return finish(STRATA_INVALID_ARG("name is NULL or len is 0"), comm);
  PlanChoice choice;
  STRATA_TRY(comm->impl->choose(call, &choice));
  std::snprintf(name, len, "%s", choice.algo);
  if (nchannels) *nchannels = choice.nchannels;
  return STRATA_SUCCESS;
}

strata_result_t explain(strata_comm* comm, const char* collective, size_t count, strata_datatype_t datatype,
                        char* record, size_t len, size_t* needed) {
  STRATA_TRY(checkComm(comm));
  CollCall call;
  STRATA_TRY(queryCall(comm, collective, count, datatype, &call));
  std::string json;
  STRATA_TRY(comm->impl->explain(call, &json));
  if (needed) *needed = json.size() + 1;
  if (!record || len < json.size() + 1)
    return finish(STRATA_INVALID_ARG("record holds %zu bytes (len); the record needs %zu", record ? len : size_t(0),
                                     json.size() + 1),
                  comm);
  std::memcpy(record, json.c_str(), json.size() + 1);
  return STRATA_SUCCESS;
}

#undef STRATA_TRY

// Non-blocking forms require somewhere to put the request.
#define STRATA_NEED_REQUEST(request)                                                     \
  do {                                                                                   \
    if (!(request)) return finish(STRATA_INVALID_ARG("request (the output pointer) is NULL"), comm); \
  } while (0)

}  // namespace
}  // namespace strata::api

using namespace strata;
using strata::api::finish;

extern "C" {

STRATA_API strata_result_t strata_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, strata_op_t op,
                                            strata_comm_t comm) try {
  return api::allreduce(sendbuf, recvbuf, count, datatype, op, comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_iallreduce(const void* sendbuf, void* recvbuf, size_t count,
                                             strata_datatype_t datatype, strata_op_t op,
                                             strata_comm_t comm, strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::allreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, int root,
                                            strata_comm_t comm) try {
  return api::broadcast(sendbuf, recvbuf, count, datatype, root, comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_ibroadcast(const void* sendbuf, void* recvbuf, size_t count,
                                             strata_datatype_t datatype, int root,
                                             strata_comm_t comm, strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::broadcast(sendbuf, recvbuf, count, datatype, root, comm, request);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_reduce(const void* sendbuf, void* recvbuf, size_t count,
                                         strata_datatype_t datatype, strata_op_t op, int root,
                                         strata_comm_t comm) try {
  return api::reduce(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_ireduce(const void* sendbuf, void* recvbuf, size_t count,
                                          strata_datatype_t datatype, strata_op_t op, int root,
                                          strata_comm_t comm, strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::reduce(sendbuf, recvbuf, count, datatype, op, root, comm, request);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_allgather(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, strata_comm_t comm) try {
  return api::allgather(sendbuf, recvbuf, count, datatype, comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_iallgather(const void* sendbuf, void* recvbuf, size_t count,
                                             strata_datatype_t datatype, strata_comm_t comm,
                                             strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::allgather(sendbuf, recvbuf, count, datatype, comm, request);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_allgatherv(const void* sendbuf, size_t sendcount, void* recvbuf,
                                             const size_t* recvcounts, const size_t* displs,
                                             strata_datatype_t datatype, strata_comm_t comm) try {
  return api::allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_iallgatherv(const void* sendbuf, size_t sendcount,
                                              void* recvbuf, const size_t* recvcounts,
                                              const size_t* displs, strata_datatype_t datatype,
                                              strata_comm_t comm, strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::allgatherv(sendbuf, sendcount, recvbuf, recvcounts, displs, datatype, comm, request);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_reduce_scatter(const void* sendbuf, void* recvbuf, size_t count,
                                                 strata_datatype_t datatype, strata_op_t op,
                                                 strata_comm_t comm) try {
  return api::reduceScatter(sendbuf, recvbuf, count, datatype, op, comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_ireduce_scatter(const void* sendbuf, void* recvbuf,
                                                  size_t count, strata_datatype_t datatype,
                                                  strata_op_t op, strata_comm_t comm,
                                                  strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::reduceScatter(sendbuf, recvbuf, count, datatype, op, comm, request);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_alltoall(const void* sendbuf, void* recvbuf, size_t count,
                                           strata_datatype_t datatype, strata_comm_t comm) try {
  return api::alltoall(sendbuf, recvbuf, count, datatype, comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_ialltoall(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, strata_comm_t comm,
                                            strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::alltoall(sendbuf, recvbuf, count, datatype, comm, request);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_alltoallv(const void* sendbuf, const size_t* sendcounts,
                                            const size_t* sdispls, void* recvbuf,
                                            const size_t* recvcounts, const size_t* rdispls,
                                            strata_datatype_t datatype, strata_comm_t comm) try {
  return api::alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype, comm,
                        nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_ialltoallv(const void* sendbuf, const size_t* sendcounts,
                                             const size_t* sdispls, void* recvbuf,
                                             const size_t* recvcounts, const size_t* rdispls,
                                             strata_datatype_t datatype, strata_comm_t comm,
                                             strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::alltoallv(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype, comm,
                        request);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_send(const void* sendbuf, size_t count,
                                       strata_datatype_t datatype, int peer, strata_comm_t comm) try {
  return api::p2p(true, sendbuf, nullptr, count, datatype, peer, comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_recv(void* recvbuf, size_t count, strata_datatype_t datatype,
                                       int peer, strata_comm_t comm) try {
  return api::p2p(false, nullptr, recvbuf, count, datatype, peer, comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_isend(const void* sendbuf, size_t count,
                                        strata_datatype_t datatype, int peer, strata_comm_t comm,
                                        strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::p2p(true, sendbuf, nullptr, count, datatype, peer, comm, request);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_irecv(void* recvbuf, size_t count, strata_datatype_t datatype,
                                        int peer, strata_comm_t comm, strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::p2p(false, nullptr, recvbuf, count, datatype, peer, comm, request);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_barrier(strata_comm_t comm) try {
  return api::barrier(comm, nullptr);
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_ibarrier(strata_comm_t comm, strata_request_t* request) try {
  STRATA_NEED_REQUEST(request);
  return api::barrier(comm, request);
} STRATA_CATCH_ESCAPES

// The strata_*_ex forms: options read (and checked) first.
#define STRATA_EX(call)                                          \
  do {                                                           \
    api::CallOptions opts_;                                      \
    Status s_ = api::readOptions(options, &opts_);               \
    if (!s_.isOk()) return finish(s_, comm);                     \
    const api::CallOptions* opts = &opts_;                       \
    return call;                                                 \
  } while (0)

STRATA_API strata_result_t strata_allreduce_ex(const void* sendbuf, void* recvbuf, size_t count,
                                               strata_datatype_t datatype, strata_op_t op,
                                               strata_comm_t comm, const strata_call_options_t* options) try {
  STRATA_EX(api::allreduce(sendbuf, recvbuf, count, datatype, op, comm, nullptr, opts));
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_broadcast_ex(const void* sendbuf, void* recvbuf, size_t count,
                                               strata_datatype_t datatype, int root, strata_comm_t comm,
                                               const strata_call_options_t* options) try {
  STRATA_EX(api::broadcast(sendbuf, recvbuf, count, datatype, root, comm, nullptr, opts));
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_reduce_ex(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, strata_op_t op, int root,
                                            strata_comm_t comm, const strata_call_options_t* options) try {
  STRATA_EX(api::reduce(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr, opts));
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_allgather_ex(const void* sendbuf, void* recvbuf, size_t count,
                                               strata_datatype_t datatype, strata_comm_t comm,
                                               const strata_call_options_t* options) try {
  STRATA_EX(api::allgather(sendbuf, recvbuf, count, datatype, comm, nullptr, opts));
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_reduce_scatter_ex(const void* sendbuf, void* recvbuf, size_t count,
                                                    strata_datatype_t datatype, strata_op_t op,
                                                    strata_comm_t comm, const strata_call_options_t* options) try {
  STRATA_EX(api::reduceScatter(sendbuf, recvbuf, count, datatype, op, comm, nullptr, opts));
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_alltoall_ex(const void* sendbuf, void* recvbuf, size_t count,
                                              strata_datatype_t datatype, strata_comm_t comm,
                                              const strata_call_options_t* options) try {
  STRATA_EX(api::alltoall(sendbuf, recvbuf, count, datatype, comm, nullptr, opts));
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_send_ex(const void* sendbuf, size_t count, strata_datatype_t datatype,
                                          int peer, strata_comm_t comm, const strata_call_options_t* options) try {
  STRATA_EX(api::p2p(true, sendbuf, nullptr, count, datatype, peer, comm, nullptr, opts));
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_recv_ex(void* recvbuf, size_t count, strata_datatype_t datatype, int peer,
                                          strata_comm_t comm, const strata_call_options_t* options) try {
  STRATA_EX(api::p2p(false, nullptr, recvbuf, count, datatype, peer, comm, nullptr, opts));
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_mem_alloc(void** ptr, size_t bytes) try {
  if (!ptr) return finish(STRATA_INVALID_ARG("ptr (the output pointer) is NULL"));
  if (bytes == 0) return finish(STRATA_INVALID_ARG("bytes is 0"));
  return finish(gpu::allocDevice(bytes, ptr));
} STRATA_CATCH_ESCAPES
STRATA_API strata_result_t strata_mem_free(void* ptr) try {
  if (!ptr) return STRATA_SUCCESS;
  return finish(gpu::freeDevice(ptr));
} STRATA_CATCH_ESCAPES

#undef STRATA_EX

STRATA_API strata_result_t strata_test(strata_request_t request, int* done) try {
  if (!done) return finish(STRATA_INVALID_ARG("done (the output pointer) is NULL"));
  if (!request) {
    *done = 1;
    return STRATA_SUCCESS;
  }
  strata_comm* comm = request->comm;
  bool finished;
  {
    api::CallGuard guard(comm);
    finished = comm->impl->test(request->request);
  }
  if (!finished) {
    *done = 0;
    return STRATA_SUCCESS;
  }
  Status s = request->request.status();
  // The message first: freeing the request may free the communicator.
  strata_result_t rc = finish(s, comm);
  api::freeRequest(request);
  *done = 1;
  return rc;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_algorithm(strata_comm_t comm, const char* collective, size_t count,
                                                 strata_datatype_t datatype, char* name, size_t len,
                                                 int* nchannels) try {
  return api::algorithm(comm, collective, count, datatype, name, len, nchannels);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_explain(strata_comm_t comm, const char* collective, size_t count,
                                               strata_datatype_t datatype, char* record, size_t len,
                                               size_t* needed) try {
  return api::explain(comm, collective, count, datatype, record, len, needed);
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_wait(strata_request_t request) try {
  if (!request) return STRATA_SUCCESS;
  strata_comm* comm = request->comm;
  Status s;
  {
    api::CallGuard guard(comm);
    s = comm->impl->wait(request->request);
  }
  strata_result_t rc = finish(s, comm);
  api::freeRequest(request);
  return rc;
} STRATA_CATCH_ESCAPES

}  // extern "C"
