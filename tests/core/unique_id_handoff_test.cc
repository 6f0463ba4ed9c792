// Rank 0 in a process that did not create the unique id, as with subprocess or
// torch.multiprocessing's spawn: the id is made by one process and every rank,
// rank 0 included, is a new program (this binary, executed again with the id
// in its environment). Rank 0 copies the creator's listening socket out of it
// (pidfd_getfd); without a creator, rank 0 binds the id's address itself.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "strata/strata.h"

extern char** environ;

namespace {

// Set in a re-executed copy of this binary: it is then a rank (or the creator), not a test run.
constexpr const char* kRoleVar = "STRATA_TEST_HANDOFF_ROLE";  // "rank", or "creator"
constexpr const char* kRankVar = "STRATA_TEST_HANDOFF_RANK";
constexpr const char* kSizeVar = "STRATA_TEST_HANDOFF_NRANKS";
constexpr const char* kIdVar = "STRATA_TEST_HANDOFF_ID";

constexpr size_t kCount = 4099;
constexpr double kDeadlineSeconds = 60;

std::string toHex(const strata_unique_id_t& id) {
  std::string hex;
  char byte[3];
  for (char c : id.internal) {
    std::snprintf(byte, sizeof(byte), "%02x", static_cast<unsigned char>(c));
    hex += byte;
  }
  return hex;
}

bool fromHex(const char* hex, strata_unique_id_t* id) {
  if (!hex || std::strlen(hex) != 2 * sizeof(id->internal)) return false;
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    unsigned v;
    if (std::sscanf(hex + 2 * i, "%2x", &v) != 1) return false;
    id->internal[i] = static_cast<char>(v);
  }
  return true;
}

// Rank r contributes r * kCount + i at i, so the sum is exact in float64.
int allreduceAndCheck(strata_comm_t comm, int rank, int nranks) {
  std::vector<double> buf(kCount);
  for (size_t i = 0; i < kCount; ++i) buf[i] = static_cast<double>(rank * kCount + i);
  if (strata_allreduce(buf.data(), buf.data(), kCount, STRATA_FLOAT64, STRATA_SUM, comm) != STRATA_SUCCESS) {
    std::fprintf(stderr, "rank %d: allreduce: %s\n", rank, strata_comm_last_error(comm));
    return 4;
  }
  for (size_t i = 0; i < kCount; ++i) {
    double want = static_cast<double>(kCount) * nranks * (nranks - 1) / 2 + static_cast<double>(nranks * i);
    if (buf[i] != want) {
      std::fprintf(stderr, "rank %d: element %zu is %.17g, want %.17g\n", rank, i, buf[i], want);
      return 5;
    }
  }
  return 0;
}

// A rank of the job: exit status 0 if it did what it was told.
int runRank() {
  const int rank = std::atoi(std::getenv(kRankVar));
  const int nranks = std::atoi(std::getenv(kSizeVar));
  strata_unique_id_t id;
  if (!fromHex(std::getenv(kIdVar), &id)) {
    std::fprintf(stderr, "rank %d: %s is not a hex unique id\n", rank, kIdVar);
    return 2;
  }
  strata_comm_t comm;
  if (strata_comm_init_rank(&comm, nranks, id, rank) != STRATA_SUCCESS) {
    std::fprintf(stderr, "rank %d: init: %s\n", rank, strata_last_error());
    return 3;
  }
  int result = allreduceAndCheck(comm, rank, nranks);
  strata_comm_destroy(comm);
  return result;
}

// Creates an id, writes it to stdout as hex and exits: an id whose creator is gone.
int runCreator() {
  strata_unique_id_t id;
  if (strata_get_unique_id(&id) != STRATA_SUCCESS) {
    std::fprintf(stderr, "creator: %s\n", strata_last_error());
    return 2;
  }
  std::printf("%s", toHex(id).c_str());
  return 0;
}

// This binary again, as a new program with `vars` added to its environment;
// its stdout goes to stdoutFd when that is not -1.
pid_t spawnSelf(const std::vector<std::string>& vars, int stdoutFd = -1) {
  std::vector<std::string> env(vars);
  // The ranks give up well before the test's deadline.
  env.push_back("STRATA_TIMEOUT=20");
  for (char** e = environ; *e; ++e) env.push_back(*e);  // the first of a name wins
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  char self[] = "unique_id_handoff_test";
  char* argv[] = {self, nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdoutFd >= 0) posix_spawn_file_actions_adddup2(&actions, stdoutFd, STDOUT_FILENO);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

pid_t spawnRank(int rank, int nranks, const std::string& idHex) {
  std::vector<std::string> vars = {std::string(kRoleVar) + "=rank", kRankVar + ("=" + std::to_string(rank)),
                                   kSizeVar + ("=" + std::to_string(nranks)), kIdVar + ("=" + idHex)};
  return spawnSelf(vars);
}

// How each process ended ("exit status 0" when it succeeded). Those still
// running at the deadline are killed.
std::vector<std::string> waitAll(const std::vector<pid_t>& pids) {
  std::vector<std::string> ended(pids.size(), "not started");
  std::vector<pid_t> running(pids);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(kDeadlineSeconds);
  for (;;) {
    bool any = false;
    for (size_t i = 0; i < running.size(); ++i) {
      int status = 0;
      if (running[i] <= 0) continue;
      if (waitpid(running[i], &status, WNOHANG) != running[i]) {
        any = true;
        continue;
      }
      ended[i] = WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                                   : "killed by signal " + std::to_string(WTERMSIG(status));
      running[i] = -1;
    }
    if (!any) return ended;
    if (std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (size_t i = 0; i < running.size(); ++i) {
    if (running[i] <= 0) continue;
    kill(running[i], SIGKILL);
    waitpid(running[i], nullptr, 0);
    ended[i] = "still running at the test's deadline (killed)";
  }
  return ended;
}

bool allSucceeded(const std::vector<std::string>& ended) {
  return std::all_of(ended.begin(), ended.end(), [](const std::string& e) { return e == "exit status 0"; });
}

void expectAllSucceeded(const std::vector<std::string>& ended) {
  for (size_t r = 0; r < ended.size(); ++r) EXPECT_EQ(ended[r], "exit status 0") << "process " << r;
}

// A job of `nranks` new programs, rank 0 included, on the id.
std::vector<pid_t> spawnJob(const strata_unique_id_t& id, int nranks) {
  std::vector<pid_t> pids;
  for (int r = 0; r < nranks; ++r) pids.push_back(spawnRank(r, nranks, toHex(id)));
  return pids;
}

TEST(UniqueIdHandoff, EveryRankIsANewProgram) {
  strata_unique_id_t id;
  ASSERT_EQ(strata_get_unique_id(&id), STRATA_SUCCESS);
  expectAllSucceeded(waitAll(spawnJob(id, 3)));
}

// Rank 0 in the creating process, or in a child forked from it, takes the
// socket from the creator's registry as before.
TEST(UniqueIdHandoff, RankZeroHereOrForked) {
  strata_unique_id_t here, forked;
  ASSERT_EQ(strata_get_unique_id(&here), STRATA_SUCCESS);
  ASSERT_EQ(strata_get_unique_id(&forked), STRATA_SUCCESS);
  strata_comm_t comm;
  ASSERT_EQ(strata_comm_init_rank(&comm, 1, here, 0), STRATA_SUCCESS) << strata_last_error();
  EXPECT_EQ(strata_comm_destroy(comm), STRATA_SUCCESS);
  fflush(stdout);
  fflush(stderr);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    pid_t rank1 = spawnRank(1, 2, toHex(forked));
    strata_comm_t c;
    bool ok = strata_comm_init_rank(&c, 2, forked, 0) == STRATA_SUCCESS &&
              allreduceAndCheck(c, 0, 2) == 0;
    _exit(ok && allSucceeded(waitAll({rank1})) ? 0 : 1);
  }
  expectAllSucceeded(waitAll({child}));
}

// Several ids open at once, their jobs running together.
TEST(UniqueIdHandoff, SeveralIdsAtOnce) {
  std::vector<strata_unique_id_t> ids(3);
  for (auto& id : ids) ASSERT_EQ(strata_get_unique_id(&id), STRATA_SUCCESS);
  std::vector<pid_t> pids;
  for (auto& id : ids)
    for (pid_t pid : spawnJob(id, 2)) pids.push_back(pid);
  expectAllSucceeded(waitAll(pids));
}

TEST(UniqueIdHandoff, CreatorGoneRankZeroListensItself) {
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  pid_t creator = spawnSelf({std::string(kRoleVar) + "=creator"}, out[1]);
  close(out[1]);
  ASSERT_GT(creator, 0);
  // The id fits the pipe's buffer, so the creator never waits on us; once it
  // has exited the pipe reads to its end without blocking.
  expectAllSucceeded(waitAll({creator}));
  std::string idHex;
  char buf[512];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) idHex.append(buf, static_cast<size_t>(n));
  close(out[0]);
  const int nranks = 2;
  expectAllSucceeded(waitAll({spawnRank(0, nranks, idHex), spawnRank(1, nranks, idHex)}));
}

}  // namespace

int main(int argc, char** argv) {
  if (const char* role = std::getenv(kRoleVar))
    return std::strcmp(role, "creator") == 0 ? runCreator() : runRank();
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
