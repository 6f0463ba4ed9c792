// strata_comm_init_world run by a real launcher. Modes:
//   world_test collectives      under mpirun: rank and size agree with what
//                               Open MPI tells its own processes, then an
//                               allreduce and every other collective are
//                               checked against the reference; twice, so a
//                               second world communicator works too.
//   world_test size-mismatch    under mpirun with WORLD_SIZE set wrongly:
//                               init fails with INVALID_USAGE naming it.
//   world_test no-launcher      with no launcher's variables: INVALID_USAGE.
//   world_test no-server        PMIX_NAMESPACE set but no PMIx server: an
//                               error naming the variable, not a hang.
// Prints failures and exits non-zero on any.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "collective_checks.h"

namespace {

using strata::test::Reporter;

int envInt(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}

void checkWorld(Reporter& rep, strata_comm_t comm) {
  int rank = -1, size = -1;
  strata_comm_rank(comm, &rank);
  strata_comm_size(comm, &size);
  // Open MPI's own variables, set by mpirun independently of PMIx's answers.
  if (rank != envInt("OMPI_COMM_WORLD_RANK") || size != envInt("OMPI_COMM_WORLD_SIZE"))
    rep.fail("strata says rank %d of %d, mpirun says %d of %d", rank, size, envInt("OMPI_COMM_WORLD_RANK"),
             envInt("OMPI_COMM_WORLD_SIZE"));
  const size_t count = 1001;
  std::vector<double> buf(count);
  for (size_t i = 0; i < count; ++i) buf[i] = rank * 1000.0 + static_cast<double>(i);
  if (!rep.ok(strata_allreduce(buf.data(), buf.data(), count, STRATA_FLOAT64, STRATA_SUM, comm), comm,
              "strata_allreduce"))
    return;
  for (size_t i = 0; i < count; ++i) {
    double want = 1000.0 * size * (size - 1) / 2 + static_cast<double>(size) * static_cast<double>(i);
    if (buf[i] != want) {
      rep.fail("allreduce element %zu: %g, expected %g", i, buf[i], want);
      return;
    }
  }
  strata::test::checkEveryCollective(rank, size, comm, rep);
}

int expectFailure(strata_result_t rc, const char* needle) {
  if (rc == STRATA_ERR_INVALID_USAGE && std::strstr(strata_last_error(), needle)) return 0;
  std::printf("FAIL: expected invalid usage mentioning '%s', got %s: %s\n", needle, strata_result_string(rc),
              strata_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode = argc > 1 ? argv[1] : "";
  strata_comm_t comm = nullptr;
  if (mode == "size-mismatch") {
    setenv("WORLD_SIZE", std::to_string(envInt("OMPI_COMM_WORLD_SIZE") + 1).c_str(), 1);
    return expectFailure(strata_comm_init_world(&comm), "WORLD_SIZE");
  }
  if (mode == "no-launcher") {
    for (const char* v : {"PMIX_NAMESPACE", "RANK", "WORLD_SIZE"}) unsetenv(v);
    return expectFailure(strata_comm_init_world(&comm), "no launcher");
  }
  if (mode == "no-server") {
    for (const char* v : {"PMIX_SERVER_URI4", "PMIX_SERVER_URI3", "PMIX_SERVER_URI2", "PMIX_SERVER_URI21",
                          "PMIX_SERVER_URI41", "PMIX_RANK"})
      unsetenv(v);
    setenv("PMIX_NAMESPACE", "strata-test-no-such-job", 1);
    strata_result_t rc = strata_comm_init_world(&comm);
    if (rc != STRATA_SUCCESS && std::strstr(strata_last_error(), "PMIX_NAMESPACE")) return 0;
    std::printf("FAIL: expected an error naming PMIX_NAMESPACE, got %s: %s\n", strata_result_string(rc),
                strata_last_error());
    return 1;
  }
  if (mode != "collectives") {
    std::fprintf(stderr, "usage: %s collectives|size-mismatch|no-launcher|no-server\n", argv[0]);
    return 2;
  }
  Reporter rep(STDOUT_FILENO);
  for (int round = 0; round < 2 && !rep.failed(); ++round) {
    if (!rep.ok(strata_comm_init_world(&comm), nullptr, "strata_comm_init_world")) break;
    checkWorld(rep, comm);
    strata_comm_destroy(comm);
  }
  return rep.failed() ? 1 : 0;
}
