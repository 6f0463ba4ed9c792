// The C API's stream-ordered calls: options, their checks, and the step from
// a checked call to staged work on its stream (api_streams.cc).
#pragma once

#include "api_state.h"

namespace strata::api {

// strata_call_options_t, read within its declared size.
struct CallOptions {
  void* stream = nullptr;
  const void* premul = nullptr;
  const char* algorithm = nullptr;  // the per-call choice, checked by pickOf
  int channels = 0;
  size_t chunkBytes = 0;
};
Status readOptions(const strata_call_options_t* options, CallOptions* out);
// A pre-multiplier only on sums of allreduce, reduce and reduce_scatter.
Status checkPremul(Coll coll, strata_op_t op, const CallOptions& opts);

// Checks the stream and fills *sc: the buffers (in/out, with the bytes they
// span on this rank) with their memory found once, and the pre-multiplier.
Status describeStreamCall(const CallOptions& opts, const void* in, uint64_t inBytes, const void* out,
                          uint64_t outBytes, strata_datatype_t datatype, StreamCall* sc);
// A call without a stream: GPU memory among its buffers (or its scalar)
// puts it on the legacy default stream, as NCCL's stream 0; otherwise the
// CPU reads them, and memory not mapped here gets an error naming it.
Status placeWithoutStream(CallOptions* opts, const void* in, uint64_t inBytes, const void* out, uint64_t outBytes,
                          strata_datatype_t datatype);

}  // namespace strata::api
