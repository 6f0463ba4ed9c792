// C API: stream-ordered calls (strata_*_ex with a stream). The checks every
// collective shares live in api_collectives.cc; this file turns a checked
// call into staged work on its CUDA stream (streams/staging.h), and holds
// the options' and buffers' checks specific to streams.
#include "api_streams.h"

#include <cstring>

#include "cuda_seam.h"
#include "op_desc.h"

namespace strata::api {
namespace {

std::unique_ptr<gpu::StreamLane> laneFor(void* stream, Status* error) {
  std::unique_ptr<gpu::StreamLane> lane = gpu::cudaLane(stream);
  if (!lane)
    *error = STRATA_ERROR(STRATA_ERR_CUDA, "stream=%p: %s", stream, gpu::runtime().why.c_str());
  return lane;
}

// A buffer the CPU reads directly must at least be mapped here: a device
// pointer passed where no GPU answers gets this error, not a crash.
Status checkHostBuffer(const char* name, const streams::UserBuffer& b) {
  if (b.bytes == 0 || b.staged || gpu::mapped(b.ptr, b.bytes)) return Status::ok();
  return STRATA_INVALID_ARG("%s=%p (%zu bytes) is not memory this process can read%s", name, b.ptr, b.bytes,
                            gpu::runtime().usable ? ""
                                                  : ": device memory? No CUDA device is usable here");
}

// Where a buffer lives, found once per call.
Status describe(const char* name, const void* ptr, uint64_t bytes, streams::UserBuffer* out) {
  const gpu::BufferKind kind = bytes ? gpu::classify(ptr) : gpu::BufferKind{};
  if (kind.kind == gpu::MemKind::Unknown)
    return STRATA_ERROR(STRATA_ERR_CUDA, "CUDA could not say where %s=%p lives (cuPointerGetAttributes failed)",
                        name, ptr);
  *out = {ptr, static_cast<size_t>(bytes), !gpu::hostReadable(kind.kind), kind.kind,
          kind.kind == gpu::MemKind::Device ? kind.device : -1};
  return Status::ok();
}

}  // namespace

Status readOptions(const strata_call_options_t* options, CallOptions* out) {
  *out = CallOptions{};
  if (!options) return Status::ok();
  constexpr size_t kSmallest = offsetof(strata_call_options_t, stream) + sizeof(options->stream);
  if (options->size < kSmallest)
    return STRATA_INVALID_ARG("options->size=%zu is smaller than any strata_call_options_t; initialise it "
                              "with STRATA_CALL_OPTIONS_INIT", options->size);
  out->stream = options->stream;
  if (options->size >= offsetof(strata_call_options_t, premul_scalar) + sizeof(options->premul_scalar))
    out->premul = options->premul_scalar;
  // Programs built before the per-call choice existed pass a smaller struct.
  if (options->size >= offsetof(strata_call_options_t, chunk_bytes) + sizeof(options->chunk_bytes)) {
    out->algorithm = options->algorithm;
    out->channels = options->channels;
    out->chunkBytes = options->chunk_bytes;
  }
  return Status::ok();
}

Status checkPremul(Coll coll, strata_op_t op, const CallOptions& opts) {
  if (!opts.premul) return Status::ok();
  if (coll != Coll::Allreduce && coll != Coll::Reduce && coll != Coll::ReduceScatter)
    return STRATA_INVALID_ARG("options->premul_scalar is set for %s; only allreduce, reduce and "
                              "reduce_scatter pre-multiply their input", collName(coll));
  if (op != STRATA_SUM)
    return STRATA_INVALID_ARG("options->premul_scalar is set with op=%d; a pre-multiplied reduction is a "
                              "sum (STRATA_SUM)", static_cast<int>(op));
  return Status::ok();
}

Status describeStreamCall(const CallOptions& opts, const void* in, uint64_t inBytes, const void* out,
                          uint64_t outBytes, strata_datatype_t datatype, StreamCall* sc) {
  STRATA_CHECK(gpu::checkStream(opts.stream, "options->stream"));
  sc->stream = opts.stream;
  STRATA_CHECK(describe("sendbuf", in, inBytes, &sc->part.in));
  STRATA_CHECK(describe("recvbuf", out, outBytes, &sc->part.out));
  STRATA_CHECK(checkHostBuffer("sendbuf", sc->part.in));
  STRATA_CHECK(checkHostBuffer("recvbuf", sc->part.out));
  if (opts.premul) {
    const size_t elem = strata_datatype_size(datatype);
    sc->premul.set = true;
    sc->premul.datatype = datatype;
    if (!gpu::hostReadable(gpu::classify(opts.premul).kind)) {
      sc->premul.onDevice = opts.premul;
    } else if (gpu::mapped(opts.premul, elem)) {
      std::memcpy(sc->premul.value, opts.premul, elem);  // host memory is read when the call is made
    } else {
      return STRATA_INVALID_ARG("options->premul_scalar=%p is not memory this process or its GPU can read",
                                opts.premul);
    }
  }
  return Status::ok();
}

Status placeWithoutStream(CallOptions* opts, const void* in, uint64_t inBytes, const void* out,
                          uint64_t outBytes, strata_datatype_t datatype) {
  streams::UserBuffer buffers[2], scalar;
  STRATA_CHECK(describe("sendbuf", in, inBytes, &buffers[0]));
  STRATA_CHECK(describe("recvbuf", out, outBytes, &buffers[1]));
  if (opts->premul) STRATA_CHECK(describe("options->premul_scalar", opts->premul, strata_datatype_size(datatype), &scalar));
  if (buffers[0].staged || buffers[1].staged || scalar.staged) {
    opts->stream = gpu::legacyStream();
    return Status::ok();
  }
  STRATA_CHECK(checkHostBuffer("sendbuf", buffers[0]));
  return checkHostBuffer("recvbuf", buffers[1]);
}

Status submitOnStream(Comm& comm, const CollCall& call, const StreamCall& sc) {
  Status error;
  auto lane = laneFor(sc.stream, &error);
  if (!lane) return error;
  return comm.submitOnStream(call, *lane, sc.part, sc.premul);
}

Status submitGroupOnStream(Comm& comm, void* stream, const std::vector<P2pOp>& ops,
                           const std::vector<streams::PartSpec>& parts) {
  Status error;
  auto lane = laneFor(stream, &error);
  if (!lane) return error;
  return comm.submitGroupOnStream(ops, *lane, parts);
}

}  // namespace strata::api
