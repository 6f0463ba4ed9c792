// Diagnostics (strata_comm_check, STRATA_CHECK=1) on real ranks: a rank whose
// STRATA_* setting differs is named in every rank's report, a healthy job
// has no finding, and with STRATA_CHECK=1 a difference that breaks init
// (a setting that sizes shared-memory segments) is named before init fails.
// A throttled pair between hosts is in tests/multihost.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "multiproc.h"
#include "process_tools.h"

namespace strata::test {
namespace {

TEST(Check, DifferingSettingIsNamedOnEveryRank) {
  auto outcomes = runRanks(4, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    if (rank == 2) setenv("STRATA_SPIN", "100", 1);
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    char report[8192];
    int findings = -1;
    if (!rep.ok(strata_comm_check(comm, report, sizeof(report), &findings), comm, "check")) return;
    for (const char* part : {"strata check, 4 ranks: strata 0.1.0", "6 pairs tested",
                             "STRATA_SPIN differs: rank 2: STRATA_SPIN=100; ranks 0,1,3: unset"})
      if (!mentions(report, part)) rep.fail("report '%s' does not mention '%s'", report, part);
    if (findings != 1) rep.fail("%d findings, want 1: %s", findings, report);
    // The same report everywhere, but for the times measured.
    const std::string text = report;
    rep.value("report without its timing line", hashBytes(text.data(), text.find("pairs tested")) ^
                                                    hashBytes(text.data() + text.find("STRATA_SPIN"),
                                                              text.size() - text.find("STRATA_SPIN")));
    float v = 1;  // the communicator works on after the check
    if (rep.ok(strata_allreduce(&v, &v, 1, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce") && v != 4)
      rep.fail("allreduce after the check gave %g", v);
    strata_comm_destroy(comm);
  });
  expectAllPassed(outcomes);
  expectValuesAgree(outcomes);
}

TEST(Check, HealthyJobHasNoFinding) {
  auto outcomes = runRanks(3, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    char report[8192];
    int findings = -1;
    if (!rep.ok(strata_comm_check(comm, report, sizeof(report), &findings), comm, "check")) return;
    if (findings != 0 || !mentions(report, "3 pairs tested") || !mentions(report, "no differences between ranks"))
      rep.fail("%d findings: %s", findings, report);
    if (strata_comm_check(comm, report, 0, nullptr) != STRATA_ERR_INVALID_ARGUMENT) rep.fail("len 0 was not refused");
    strata_comm_destroy(comm);
  });
  expectAllPassed(outcomes);
}

TEST(Check, AtInitADifferenceThatBreaksInitIsNamedFirst) {
  const char* forced = std::getenv("STRATA_TRANSPORT");
  if (forced && std::string(forced) != "shm")
    GTEST_SKIP() << "slot counts size shared-memory segments; STRATA_TRANSPORT=" << forced << " uses none";
  char dir[] = "/tmp/strata-check-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string pattern = std::string(dir) + "/log-%p";
  std::atomic<int>* rank0Pid = sharedPage<std::atomic<int>>();
  auto outcomes = runRanks(2, 60, [&](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    if (rank == 0) *rank0Pid = getpid();
    if (rank == 1) setenv("STRATA_NSLOTS", "4", 1);
    strata_comm_t comm = nullptr;
    if (strata_comm_init_rank(&comm, n, id, rank) == STRATA_SUCCESS) {
      rep.fail("init succeeded with different slot counts");
      strata_comm_destroy(comm);
    }
  }, {{"STRATA_CHECK", "1"}, {"STRATA_TIMEOUT", "3"}, {"STRATA_DEBUG_FILE", pattern}});
  expectAllPassed(outcomes);
  const std::string log = readFile(std::string(dir) + "/log-" + std::to_string(rank0Pid->load()));
  EXPECT_NE(log.find("before connecting the ranks, 2 of them:\n  STRATA_NSLOTS differs: rank 0: unset; rank 1: STRATA_NSLOTS=4"),
            std::string::npos)
      << log;
  std::system(("rm -rf " + std::string(dir)).c_str());
}

}  // namespace
}  // namespace strata::test
