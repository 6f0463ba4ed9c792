// The parts of multiproc.h that call the C API (strata_*): kept apart so
// that tests below the C API (tests/transport) can run processes without it.
#include <gtest/gtest.h>

#include "multiproc.h"

namespace strata::test {

bool Reporter::ok(strata_result_t rc, strata_comm_t comm, const char* what) {
  if (rc == STRATA_SUCCESS) return true;
  fail("%s returned %s: %s", what, strata_result_string(rc),
       comm ? strata_comm_last_error(comm) : strata_last_error());
  return false;
}

std::vector<RankOutcome> runRanks(int nranks, double timeoutSeconds, const RankBody& body,
                                  const std::vector<std::pair<std::string, std::string>>& env) {
  strata_unique_id_t id;
  if (strata_get_unique_id(&id) != STRATA_SUCCESS) {
    ADD_FAILURE() << "strata_get_unique_id: " << strata_last_error();
    return std::vector<RankOutcome>(nranks);
  }
  std::vector<ChildBody> bodies;
  for (int r = 0; r < nranks; ++r)
    bodies.push_back([&body, r, nranks, &id](Reporter& rep) { body(r, nranks, id, rep); });
  return runChildren(bodies, timeoutSeconds, env);
}

}  // namespace strata::test
