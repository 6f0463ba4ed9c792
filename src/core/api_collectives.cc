// C API: collectives and requests. Every argument is checked here, before
// anything is queued, so a bad call never disturbs the other ranks.
#include <cstdint>

#include "api_state.h"
#include "op_desc.h"

namespace strata::api {
namespace {

bool overlaps(const void* a, const void* b, size_t bytes) {
  auto x = reinterpret_cast<uintptr_t>(a);
  auto y = reinterpret_cast<uintptr_t>(b);
  return x < y + bytes && y < x + bytes;
}

Status checkAllreduce(const void* sendbuf, void* recvbuf, size_t count, strata_datatype_t datatype,
                      strata_op_t op, strata_comm* comm) {
  if (!comm) return STRATA_INVALID_ARG("comm is NULL");
  if (datatype < 0 || datatype >= STRATA_NUM_DATATYPES)
    return STRATA_INVALID_ARG("datatype=%d is not a strata_datatype_t", static_cast<int>(datatype));
  if (op < 0 || op >= STRATA_NUM_OPS)
    return STRATA_INVALID_ARG("op=%d is not a strata_op_t", static_cast<int>(op));
  const size_t size = strata_datatype_size(datatype);
  if (count > OpDesc::kMaxCount || count > SIZE_MAX / size)
    return STRATA_INVALID_ARG("count=%zu is too large (at most %llu elements of %s)", count,
                              (unsigned long long)std::min<uint64_t>(OpDesc::kMaxCount, SIZE_MAX / size),
                              datatypeName(datatype));
  if (count > 0 && !sendbuf) return STRATA_INVALID_ARG("sendbuf is NULL with count=%zu", count);
  if (count > 0 && !recvbuf) return STRATA_INVALID_ARG("recvbuf is NULL with count=%zu", count);
  if (sendbuf != recvbuf && count > 0 && overlaps(sendbuf, recvbuf, count * size))
    return STRATA_INVALID_ARG("sendbuf=%p and recvbuf=%p overlap without being equal (%zu bytes)",
                              sendbuf, static_cast<void*>(recvbuf), count * size);
  if (comm->impl->failed()) {
    Status earlier = comm->impl->failure();
    return makeErrorQuiet(earlier.code(), "the communicator failed earlier: %s", earlier.message().c_str());
  }
  return Status::ok();
}

}  // namespace
}  // namespace strata::api

using namespace strata;
using strata::api::finish;

extern "C" {

STRATA_API strata_result_t strata_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                                            strata_datatype_t datatype, strata_op_t op,
                                            strata_comm_t comm) {
  Status s = api::checkAllreduce(sendbuf, recvbuf, count, datatype, op, comm);
  if (!s.isOk() || count == 0) return finish(s, comm);
  api::CallGuard guard(comm);
  Request request;
  s = comm->impl->submitAllreduce(sendbuf, recvbuf, count, datatype, op, true, &request);
  if (s.isOk()) s = comm->impl->wait(request);
  return finish(s, comm);
}

STRATA_API strata_result_t strata_iallreduce(const void* sendbuf, void* recvbuf, size_t count,
                                             strata_datatype_t datatype, strata_op_t op,
                                             strata_comm_t comm, strata_request_t* request) {
  if (!request) return finish(STRATA_INVALID_ARG("request (the output pointer) is NULL"), comm);
  Status s = api::checkAllreduce(sendbuf, recvbuf, count, datatype, op, comm);
  if (!s.isOk()) return finish(s, comm);
  if (count == 0) {
    *request = nullptr;
    return STRATA_SUCCESS;
  }
  api::CallGuard guard(comm);
  auto* r = new strata_request{{}, comm};
  s = comm->impl->submitAllreduce(sendbuf, recvbuf, count, datatype, op, false, &r->request);
  if (!s.isOk()) {
    delete r;
    return finish(s, comm);
  }
  *request = r;
  return STRATA_SUCCESS;
}

STRATA_API strata_result_t strata_test(strata_request_t request, int* done) {
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
  delete request;
  *done = 1;
  return finish(s, comm);
}

STRATA_API strata_result_t strata_wait(strata_request_t request) {
  if (!request) return STRATA_SUCCESS;
  strata_comm* comm = request->comm;
  Status s;
  {
    api::CallGuard guard(comm);
    s = comm->impl->wait(request->request);
  }
  delete request;
  return finish(s, comm);
}

}  // extern "C"
