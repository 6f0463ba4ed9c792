// C API: communicators made from communicators (split, dup) and the
// non-blocking health query. A split is built from the parent's own
// collectives: gather every rank's (color, key), let each new group's first
// member create a unique id, gather the ids, and bootstrap each group
// concurrently with strata_comm_init_rank.
#include <cstring>
#include <vector>

#include "api_state.h"
#include "split_members.h"

using strata::api::finish;
using strata::api::SplitMember;

extern "C" {

STRATA_API strata_result_t strata_comm_split(strata_comm_t comm, int color, int key,
                                             strata_comm_t* newcomm) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!newcomm) return finish(STRATA_INVALID_ARG("newcomm (the output pointer) is NULL"), comm);
  strata::Status init = strata::api::ready(comm);
  if (!init.isOk()) return finish(init, comm);
  if (color < 0 && color != STRATA_SPLIT_NOCOLOR)
    return finish(STRATA_INVALID_ARG("color=%d must be >= 0 or STRATA_SPLIT_NOCOLOR", color), comm);
  if (strata::api::groupActive())
    return finish(strata::makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                         "strata_comm_split inside strata_group_start/end"),
                  comm);
  const int n = comm->impl->size(), rank = comm->impl->rank();
  std::vector<SplitMember> all(n);
  SplitMember mine{color, key, rank};
  strata_result_t rc = strata_allgather(&mine, all.data(), 3, STRATA_INT64, comm);
  if (rc != STRATA_SUCCESS) return rc;
  std::vector<SplitMember> group;
  int newRank = -1;
  strata::Status checked = strata::api::splitGroup(all, rank, color, key, &group, &newRank);
  if (!checked.isOk()) return finish(checked, comm);

  // The first member of each group creates its id; everyone gathers all ids.
  std::vector<strata_unique_id_t> ids(n);
  strata_unique_id_t id;
  std::memset(&id, 0, sizeof(id));
  strata::Status created;
  if (color != STRATA_SPLIT_NOCOLOR && newRank == 0 && strata_get_unique_id(&id) != STRATA_SUCCESS)
    created = strata::makeErrorQuiet(STRATA_ERR_SYSTEM, "creating the split's unique id: %s",
                                     strata_last_error());
  // Gathered even after a failure, so that no rank is left waiting.
  rc = strata_allgather(&id, ids.data(), sizeof(id), STRATA_UINT8, comm);
  if (!created.isOk()) return finish(created, comm);
  if (rc != STRATA_SUCCESS) return rc;
  *newcomm = nullptr;
  if (color == STRATA_SPLIT_NOCOLOR) return STRATA_SUCCESS;
  rc = strata_comm_init_rank(newcomm, static_cast<int>(group.size()), ids[group[0].rank], newRank);
  if (rc != STRATA_SUCCESS) comm->impl->setLastError(strata_last_error());
  return rc;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_dup(strata_comm_t comm, strata_comm_t* newcomm) try {
  int rank = 0;
  strata_result_t rc = strata_comm_rank(comm, &rank);  // waits for a non-blocking init
  return rc == STRATA_SUCCESS ? strata_comm_split(comm, 0, rank, newcomm) : rc;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_get_async_error(strata_comm_t comm, strata_result_t* error) try {
  if (!comm) return finish(STRATA_INVALID_ARG("comm is NULL"));
  if (!error) return finish(STRATA_INVALID_ARG("error (the output pointer) is NULL"), comm);
  if (!comm->initDone.load(std::memory_order_acquire)) {
    *error = STRATA_IN_PROGRESS;
    return STRATA_SUCCESS;
  }
  strata::Status init = strata::api::ready(comm);
  *error = !init.isOk() ? init.code() : comm->impl->failed() ? comm->impl->failure().code() : STRATA_SUCCESS;
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

}  // extern "C"
