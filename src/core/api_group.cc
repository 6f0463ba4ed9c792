// C API: groups. Calls made between strata_group_start and strata_group_end on
// one thread are queued in the thread's Group and issued by the outermost end.
#include "api_state.h"
#include "group.h"

namespace strata::api {
namespace {

thread_local int tDepth = 0;
thread_local Group tGroup;

}  // namespace

bool groupActive() { return tDepth > 0; }

void deferCollective(strata_comm* comm, const CollCall& call, const StreamCall* stream, std::vector<char> scratch) {
  tGroup.defer(comm, call, stream, std::move(scratch));
}

void deferP2p(strata_comm* comm, const P2pOp& op, const StreamCall* stream) { tGroup.defer(comm, op, stream); }

}  // namespace strata::api

using strata::api::finish;

extern "C" {

STRATA_API strata_result_t strata_group_start(void) try {
  ++strata::api::tDepth;
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_group_end(void) try {
  using namespace strata::api;
  if (tDepth == 0)
    return finish(strata::makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                         "strata_group_end without a matching strata_group_start"));
  if (--tDepth > 0) return STRATA_SUCCESS;
  strata_comm* failed = nullptr;
  strata::Status s = tGroup.issue(&failed);
  return finish(s, failed);
} STRATA_CATCH_ESCAPES

}  // extern "C"
