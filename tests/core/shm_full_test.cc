// Ranks of one host whose environment gets in shared memory's way, as
// containers do. A /dev/shm too small for the segments (a container's
// default, or a full tmpfs): forced onto shm, every rank's init fails naming
// /dev/shm, the bytes needed and free and the parameters that shrink them,
// before any segment is made (so no SIGBUS at a first touch); by default the
// ranks fall back to tcp, within STRATA_MEM_BUDGET where one is set. Two
// ranks each with its own /dev/shm are told so at
// once; two in different pid namespaces are told that a death would be seen
// only at the deadline.
//
// The test process enters a mount namespace of its own and mounts a small
// tmpfs on /dev/shm there (root only); its ranks, forked from it, share that
// /dev/shm as ranks of one host share the real one. It exits 77 (skipped, for
// meson) where it cannot do that.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "multiproc.h"
#include "process_tools.h"

namespace strata::test {
namespace {

// Empty on success, else why not.
std::string enterOwnDevShm(const char* size = "64k") {
  if (unshare(CLONE_NEWNS) != 0) return std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
  // Private, so that the mount below stays in this namespace.
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
    return std::string("mount --make-rprivate /: ") + std::strerror(errno);
  const std::string options = std::string("size=") + size + ",mode=1777";
  if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0)
    return "mount -t tmpfs -o " + options + " tmpfs /dev/shm: " + std::strerror(errno);
  return "";
}

std::string enterTinyDevShm() { return enterOwnDevShm(); }

// Forced onto shm (STRATA_TRANSPORT=shm), or with STRATA_SHM_FALLBACK=0.
TEST(ShmFull, InitFailsOnEveryRankNamingTheSpaceAndTheKnobs) {
  const std::string why = enterTinyDevShm();
  if (!why.empty()) GTEST_SKIP() << "needs a private mount namespace with its own /dev/shm (root): " << why;
  auto outcomes = runRanks(2, 120, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm = nullptr;
    const strata_result_t rc = strata_comm_init_rank(&comm, nranks, id, rank);
    if (rc == STRATA_SUCCESS) {
      rep.fail("init succeeded on a 64 KiB /dev/shm");
      strata_comm_destroy(comm);
      return;
    }
    const std::string error = strata_last_error();
    if (rc != STRATA_ERR_SYSTEM) rep.fail("init returned %s, not STRATA_ERR_SYSTEM: %s", strata_result_string(rc), error.c_str());
    for (const char* needle : {"/dev/shm has ", "MiB free, and the 2 ranks of this host need", "STRATA_NCHANNELS",
                               "STRATA_NSLOTS", "STRATA_SLOT_BYTES"})
      if (error.find(needle) == std::string::npos) rep.fail("the error lacks '%s': %s", needle, error.c_str());
  }, {{"STRATA_TIMEOUT", "60"}, {"STRATA_TRANSPORT", "shm"}});
  expectAllPassed(outcomes);
}

// By default the ranks of a host whose /dev/shm is too small connect over
// the next transport (tcp), and their collectives are exact.
TEST(ShmFull, RanksFallBackToTcpAndComputeRight) {
  const std::string why = enterTinyDevShm();
  if (!why.empty()) GTEST_SKIP() << "needs a private mount namespace with its own /dev/shm (root): " << why;
  auto outcomes = runRanks(3, 120, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init on a 64 KiB /dev/shm")) return;
    for (int p = 0; p < nranks; ++p) {
      char name[16];
      if (p != rank && rep.ok(strata_comm_peer_transport(comm, p, name, sizeof(name)), comm, "peer transport") &&
          std::string(name) == "shm")
        rep.fail("rank %d is reached over shm on a 64 KiB /dev/shm", p);
    }
    std::vector<double> v(100000, rank + 1.0);
    if (rep.ok(strata_allreduce(v.data(), v.data(), v.size(), STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce"))
      for (double x : v)
        if (x != 6) {
          rep.fail("allreduce gave %g, want 6", x);
          break;
        }
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "60"}});
  expectAllPassed(outcomes);
}

// STRATA_MEM_BUDGET prices the transports the pairs end up on: where
// /dev/shm is too small and the pairs fall back to tcp (two rings a peer,
// against one shm FIFO), what every rank holds once it has reached every
// peer still fits, and the results are exact.
TEST(ShmFull, ABudgetHoldsAfterTheFallBackToTcp) {
  const std::string why = enterTinyDevShm();
  if (!why.empty()) GTEST_SKIP() << "needs a private mount namespace with its own /dev/shm (root): " << why;
  constexpr uint64_t kBudget = 1 << 20;
  auto outcomes = runRanks(3, 120, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init on a 64 KiB /dev/shm")) return;
    std::vector<int64_t> in(3 * 40000), out(in.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = rank * 1000000 + static_cast<int64_t>(i);
    if (rep.ok(strata_alltoall(in.data(), out.data(), 40000, STRATA_INT64, comm), comm, "alltoall"))
      for (int r = 0; r < nranks; ++r)
        if (out[r * 40000 + 9] != r * 1000000 + rank * 40000 + 9) rep.fail("alltoall: block %d is wrong", r);
    std::vector<double> v(300000, rank + 1.0);
    if (rep.ok(strata_allreduce(v.data(), v.data(), v.size(), STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce") &&
        v[123] != 6)
      rep.fail("allreduce gave %g, want 6", v[123]);
    strata_memory_t m = STRATA_MEMORY_INITIALIZER;
    if (rep.ok(strata_comm_memory(comm, &m), comm, "strata_comm_memory") &&
        (m.host_bytes == 0 || m.shared_bytes + m.host_bytes + m.pinned_bytes > kBudget))
      rep.fail("holds shared %llu + host %llu + pinned %llu bytes over tcp, budget %llu",
               (unsigned long long)m.shared_bytes, (unsigned long long)m.host_bytes,
               (unsigned long long)m.pinned_bytes, (unsigned long long)kBudget);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "60"}, {"STRATA_MEM_BUDGET", std::to_string(kBudget)}, {"STRATA_NCHANNELS", "2"}});
  expectAllPassed(outcomes);
}

// Two ranks of one host, each with its own /dev/shm (as containers without
// a shared IPC mount): both fail at once, saying so, instead of waiting
// STRATA_TIMEOUT for a segment that appeared in the other /dev/shm.
TEST(ShmFull, SeparateDevShmIsNamedAtOnce) {
  auto outcomes = runRanks(2, 120, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    // Each its own (the test process may be in a tiny one by now).
    const std::string why = enterOwnDevShm("64m");
    if (!why.empty()) {
      rep.skip("needs a private mount namespace with its own /dev/shm (root): %s", why.c_str());
      return;
    }
    const double start = now();
    strata_comm_t comm = nullptr;
    const strata_result_t rc = strata_comm_init_rank(&comm, nranks, id, rank);
    const std::string error = strata_last_error();
    if (rc == STRATA_SUCCESS) {
      rep.fail("init succeeded across two /dev/shm");
      strata_comm_destroy(comm);
      return;
    }
    if (now() - start > 10) rep.fail("init took %.1f s to fail", now() - start);
    // The first rank to see it says so and leaves; the other may see it gone.
    if (error.find("another /dev/shm") == std::string::npos && error.find("is gone") == std::string::npos)
      rep.fail("the error does not explain: %s", error.c_str());
    rep.value("explained", error.find("another /dev/shm") != std::string::npos);
  }, {{"STRATA_TIMEOUT", "60"}});
  if (!outcomes[0].skips.empty()) GTEST_SKIP() << outcomes[0].skips[0];
  expectAllPassed(outcomes);
  int explained = 0;
  for (const auto& o : outcomes) explained += o.values.count("explained") ? o.values.at("explained") : 0;
  EXPECT_GE(explained, 1) << "no rank said that the other's /dev/shm is another";
}

// Two ranks of one host in different pid namespaces (rank 1 runs as pid 1
// of its own): shared memory still works, and init says that a peer's death
// would be seen only at the deadline (no pidfd reaches across), and what to
// do about it.
TEST(ShmFull, SeparatePidNamespaceIsExplained) {
  // One /dev/shm for both ranks, with room (the earlier tests left a tiny one).
  const std::string why = enterOwnDevShm("64m");
  if (!why.empty()) GTEST_SKIP() << "needs a private mount namespace with its own /dev/shm (root): " << why;
  char dir[] = "/tmp/strata-pidns-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string pattern = std::string(dir) + "/log-%p";
  std::atomic<int>* rank0Pid = sharedPage<std::atomic<int>>();
  auto outcomes = runRanks(2, 120, [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    auto body = [&] {
      strata_comm_t comm = nullptr;
      if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
      double v = rank + 1.0;
      if (rep.ok(strata_allreduce(&v, &v, 1, STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce") && v != 3)
        rep.fail("allreduce gave %g", v);
      char name[16] = "";
      strata_comm_peer_transport(comm, 1 - rank, name, sizeof(name));
      if (std::string(name) != "shm") rep.fail("the peer is reached over %s, not shm", name);
      strata_comm_destroy(comm);
    };
    if (rank == 0) {
      *rank0Pid = getpid();
      body();
      return;
    }
    if (unshare(CLONE_NEWPID) != 0) {
      rep.skip("unshare(CLONE_NEWPID): %s", std::strerror(errno));
      return;
    }
    const pid_t child = fork();  // the first process of the new namespace
    if (child == 0) {
      body();
      _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rep.fail("rank 1 (pid 1 of its namespace) did not exit cleanly");
  }, {{"STRATA_TIMEOUT", "60"}, {"STRATA_TRANSPORT", "shm"}, {"STRATA_DEBUG_FILE", pattern}});
  if (!outcomes[1].skips.empty()) GTEST_SKIP() << outcomes[1].skips[0];
  expectAllPassed(outcomes);
  const std::string log = readFile(std::string(dir) + "/log-" + std::to_string(rank0Pid->load()));
  EXPECT_NE(log.find("shares this host and /dev/shm with rank 1"), std::string::npos) << log;
  EXPECT_NE(log.find("but not its pid namespace"), std::string::npos) << log;
  std::system(("rm -rf " + std::string(dir)).c_str());
}

}  // namespace
}  // namespace strata::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  // A skip is not a pass: meson reports exit status 77 as SKIP.
  const auto* unit = ::testing::UnitTest::GetInstance();
  if (failed == 0 && unit->skipped_test_count() > 0 && unit->successful_test_count() == 0) return 77;
  return failed;
}
