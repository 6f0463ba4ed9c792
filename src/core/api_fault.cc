// C API: surviving a lost rank. Revoke fails every rank's operations on a
// communicator; shrink makes a communicator of the ranks still alive, agreed
// over the control plane (fault/shrink.h) and bootstrapped like any other
// (strata_comm_init_rank_config, the parent's settings inherited); grow
// brings new processes into a communicator's ranks.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "api_state.h"
#include "clock.h"
#include "log.h"
#include "shrink.h"

using strata::api::finish;

namespace strata::api {
namespace {

// How long strata_comm_dump asks each rank, twice over for them all.
constexpr double kAskSeconds = 1.0;

// The calls here make communicators: not inside a group, not on a
// communicator whose init failed.
Status checkMaker(strata_comm* comm, const char* call) {
  if (!comm) return STRATA_INVALID_ARG("comm is NULL");
  STRATA_CHECK(ready(comm));
  if (groupActive())
    return makeErrorQuiet(STRATA_ERR_INVALID_USAGE, "%s inside strata_group_start/end", call);
  return Status::ok();
}

}  // namespace

void deliverReport(const std::string& text, const char* what, char* out, size_t len) {
  if (!out) {
    STRATA_WARN(COLL, "%s:\n%s", what, text.c_str());
    return;
  }
  const size_t n = std::min(len - 1, text.size());
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace strata::api

extern "C" {

STRATA_API strata_result_t strata_comm_revoke(strata_comm_t comm) try {
  strata::Status checked = comm ? strata::api::ready(comm) : STRATA_INVALID_ARG("comm is NULL");
  if (!checked.isOk()) return finish(checked, comm);
  strata::api::CallGuard guard(comm);
  comm->impl->revoke();
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_shrink(strata_comm_t comm, const int* exclude, int nexclude, int flags,
                                              strata_comm_t* newcomm) try {
  strata::Status checked = strata::api::checkMaker(comm, "strata_comm_shrink");
  if (!checked.isOk()) return finish(checked, comm);
  if (!newcomm) return finish(STRATA_INVALID_ARG("newcomm (the output pointer) is NULL"), comm);
  if (nexclude < 0) return finish(STRATA_INVALID_ARG("nexclude=%d is negative", nexclude), comm);
  if (nexclude > 0 && !exclude) return finish(STRATA_INVALID_ARG("exclude is NULL with nexclude=%d", nexclude), comm);
  if (flags != STRATA_SHRINK_DEFAULT && flags != STRATA_SHRINK_ABORT)
    return finish(STRATA_INVALID_ARG("flags=%d is neither STRATA_SHRINK_DEFAULT nor STRATA_SHRINK_ABORT", flags), comm);
  strata::Comm& parent = *comm->impl;
  std::vector<int> excluded(exclude, exclude + nexclude);
  for (int i = 0; i < nexclude; ++i)
    if (exclude[i] < 0 || exclude[i] >= parent.size())
      return finish(STRATA_INVALID_ARG("exclude[%d]=%d is outside 0..%d (the communicator's ranks)", i, exclude[i],
                                       parent.size() - 1),
                    comm);
  std::sort(excluded.begin(), excluded.end());
  excluded.erase(std::unique(excluded.begin(), excluded.end()), excluded.end());
  if (static_cast<int>(excluded.size()) == parent.size())
    return finish(STRATA_INVALID_ARG("exclude names every rank of the communicator"), comm);
  *newcomm = nullptr;
  strata::api::CallGuard guard(comm);
  if (flags == STRATA_SHRINK_ABORT) parent.revoke();
  // A rank that leaves itself out takes no part, like a split's NOCOLOR.
  if (std::binary_search(excluded.begin(), excluded.end(), parent.rank())) return STRATA_SUCCESS;

  auto makeId = [](const strata::security::Secret& secret, strata::boot::IdContents* id) {
    strata_unique_id_t fresh;
    STRATA_CHECK(strata::api::newUniqueId(&fresh, &secret));
    return strata::boot::decodeId(fresh, id);
  };
  strata::fault::ShrinkOutcome agreed;
  strata::Status st = strata::fault::agreeOnSurvivors(parent.control(), excluded, parent.timeoutSeconds(), makeId, &agreed);
  if (!st.isOk()) return finish(st, comm);
  strata_unique_id_t id;
  strata::boot::encodeId(agreed.id, &id);
  const strata_config_t inherited = strata::api::inheritedConfig(parent);
  strata_result_t rc =
      strata_comm_init_rank_config(newcomm, static_cast<int>(agreed.survivors.size()), id, agreed.newRank, &inherited);
  if (rc != STRATA_SUCCESS) parent.setLastError(strata_last_error());
  return rc;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_grow_id(strata_comm_t comm, strata_unique_id_t* id) try {
  strata::Status checked = strata::api::checkMaker(comm, "strata_comm_grow_id");
  if (!checked.isOk()) return finish(checked, comm);
  if (!id) return finish(STRATA_INVALID_ARG("id (the output pointer) is NULL"), comm);
  if (comm->impl->rank() != 0)
    return finish(strata::makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                         "strata_comm_grow_id on rank %d: only rank 0 makes it (it stays rank 0 of "
                                         "the grown communicator, and holds its listener)",
                                         comm->impl->rank()),
                  comm);
  strata_result_t rc = strata_get_unique_id(id);
  if (rc != STRATA_SUCCESS) comm->impl->setLastError(strata_last_error());
  return rc;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_grow(strata_comm_t comm, int nranks, const strata_unique_id_t* id, int rank,
                                            strata_comm_t* newcomm) try {
  if (!newcomm) return finish(STRATA_INVALID_ARG("newcomm (the output pointer) is NULL"), comm);
  if (!comm) {  // a joining process
    if (!id) return finish(STRATA_INVALID_ARG("id is NULL for a joining process (comm NULL)"));
    return strata_comm_init_rank(newcomm, nranks, *id, rank);
  }
  strata::Status checked = strata::api::checkMaker(comm, "strata_comm_grow");
  if (!checked.isOk()) return finish(checked, comm);
  strata::Comm& parent = *comm->impl;
  if (rank != -1)
    return finish(STRATA_INVALID_ARG("rank=%d: members of comm keep their rank and pass -1", rank), comm);
  if (nranks <= parent.size())
    return finish(STRATA_INVALID_ARG("nranks=%d does not grow a communicator of %d ranks", nranks, parent.size()),
                  comm);
  if ((parent.rank() == 0) != (id != nullptr))
    return finish(STRATA_INVALID_ARG(parent.rank() == 0 ? "id is NULL on rank 0, which hands it to the other members"
                                                        : "id is not NULL on rank %d: only rank 0 passes it",
                                     parent.rank()),
                  comm);
  // Rank 0 hands the id and the size to the other members; a member that
  // expects another size fails alone, and the grown communicator's
  // bootstrap times out on the others.
  struct Offer {
    strata_unique_id_t id;
    int64_t nranks;
  } offer{};
  if (id) offer = {*id, nranks};
  *newcomm = nullptr;
  strata_result_t rc = strata_broadcast(&offer, &offer, sizeof(offer), STRATA_UINT8, 0, comm);
  if (rc != STRATA_SUCCESS) return rc;
  if (offer.nranks != nranks)
    return finish(strata::makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                         "nranks=%d here, but rank 0 grows the communicator to %lld ranks", nranks,
                                         static_cast<long long>(offer.nranks)),
                  comm);
  const strata_config_t inherited = strata::api::inheritedConfig(parent);
  rc = strata_comm_init_rank_config(newcomm, nranks, offer.id, parent.rank(), &inherited);
  if (rc != STRATA_SUCCESS) parent.setLastError(strata_last_error());
  return rc;
} STRATA_CATCH_ESCAPES

STRATA_API strata_result_t strata_comm_dump(strata_comm_t comm, char* report, size_t len) try {
  strata::Status checked = comm ? strata::api::ready(comm) : STRATA_INVALID_ARG("comm is NULL");
  if (!checked.isOk()) return finish(checked, comm);
  if (report && len == 0) return finish(STRATA_INVALID_ARG("len is 0 with a report buffer"), comm);
  strata::api::CallGuard guard(comm);
  const std::string text = comm->impl->stallReport(true, strata::nowSeconds() + 2 * strata::api::kAskSeconds);
  const std::string title = strata::formatText("stall report, rank %d of %d", comm->impl->rank(), comm->impl->size());
  strata::api::deliverReport(text, title.c_str(), report, len);
  return STRATA_SUCCESS;
} STRATA_CATCH_ESCAPES

}  // extern "C"
