// C API: communicators made from communicators (split, dup) and the
// non-blocking health query. A split is built from the parent's own
// collectives: gather every rank's (color, key), let each new group's first
// member create a unique id and send it to the group's other members, and
// bootstrap each group concurrently with strata_comm_init_rank_config (the
// parent's settings inherited).
#include <cstring>
#include <string>
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

  *newcomm = nullptr;
  if (color == STRATA_SPLIT_NOCOLOR) return STRATA_SUCCESS;
  // The first member of each group creates its id and hands it to the
  // group's members alone: an id carries the new communicator's secret,
  // which ranks outside the group must not learn.
  struct Handoff {
    int32_t created;
    strata_unique_id_t id;
  } handoff;
  std::memset(&handoff, 0, sizeof(handoff));
  const int leader = static_cast<int>(group[0].rank);
  if (newRank == 0) handoff.created = strata_get_unique_id(&handoff.id) == STRATA_SUCCESS;
  const std::string why = handoff.created || newRank != 0 ? "" : strata_last_error();
  // Sent even after a failure (created = 0), so that no member is left waiting.
  rc = strata_group_start();
  for (size_t m = 1; m < group.size() && newRank == 0 && rc == STRATA_SUCCESS; ++m)
    rc = strata_send(&handoff, sizeof(handoff), STRATA_UINT8, static_cast<int>(group[m].rank), comm);
  if (newRank != 0 && rc == STRATA_SUCCESS) rc = strata_recv(&handoff, sizeof(handoff), STRATA_UINT8, leader, comm);
  const strata_result_t ended = strata_group_end();
  if (rc != STRATA_SUCCESS) return rc;
  if (ended != STRATA_SUCCESS) return ended;
  if (!handoff.created)
    return finish(newRank == 0 ? STRATA_ERROR(STRATA_ERR_SYSTEM, "creating the split's unique id: %s", why.c_str())
                               : STRATA_ERROR(STRATA_ERR_SYSTEM,
                                              "rank %d, the first of this split's group, could not create its "
                                              "unique id (its own error says why)",
                                              leader),
                  comm);
  const strata_config_t inherited = strata::api::inheritedConfig(*comm->impl);
  rc = strata_comm_init_rank_config(newcomm, static_cast<int>(group.size()), handoff.id, newRank, &inherited);
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
