// What must hold when things go wrong, or merely get busy: dead and aborting
// peers, ranks that disagree, intruders on the bootstrap port, many
// operations in flight, repeated setup and teardown, and an idle comm.
#include <arpa/inet.h>
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "multiproc.h"
#include "process_tools.h"

namespace strata::test {
namespace {

std::set<std::string> shmSegments() {
  std::set<std::string> names;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, "strata-", 7) == 0) names.insert(e->d_name);
    closedir(d);
  }
  return names;
}

constexpr double kTimeout = 4;  // STRATA_TIMEOUT in the fault tests

TEST(Faults, KilledPeerBecomesAnErrorOnEveryRankAndLeavesNoSegments) {
  struct Shared {
    std::atomic<double> killedAt{0};
    std::atomic<int> pids[4];
  };
  Shared* shared = sharedPage<Shared>();
  const int victim = 2;
  auto outcomes = runRanks(4, 60, [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    shared->pids[rank] = static_cast<int>(getpid());
    // 64 MiB: many slots in flight when the kill lands. Filled before init,
    // so that every rank starts its first allreduce when init returns: a
    // rank still filling (slow under a sanitizer, with more ranks than
    // cores) would otherwise hold its peers up for STRATA_TIMEOUT.
    std::vector<float> buf(16 << 20, 1.0f);
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    const double start = now();
    for (int i = 0; i < 1000; ++i) {
      if (rank == victim && now() - start > 0.3) {
        shared->killedAt = now();
        raise(SIGKILL);
      }
      strata_result_t rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_MAX, comm);
      if (rc != STRATA_SUCCESS) {
        double after = now() - shared->killedAt.load();
        if (rc != STRATA_ERR_REMOTE && rc != STRATA_ERR_TIMEOUT) rep.fail("unexpected %s", strata_result_string(rc));
        if (shared->killedAt.load() == 0) rep.fail("failed before the kill: %s", strata_comm_last_error(comm));
        else if (after > kTimeout + 1) rep.fail("error came %.2f s after the kill", after);
        if (strata_comm_last_error(comm)[0] == '\0') rep.fail("no message");
        // The failure is sticky.
        if (strata_allreduce(buf.data(), buf.data(), 4, STRATA_FLOAT32, STRATA_SUM, comm) == STRATA_SUCCESS)
          rep.fail("a failed communicator accepted another allreduce");
        strata_comm_destroy(comm);
        return;
      }
    }
    rep.fail("1000 allreduces completed although rank %d was killed", victim);
  }, {{"STRATA_TIMEOUT", "4"}});
  for (int r = 0; r < 4; ++r) {
    if (r == victim) {
      EXPECT_EQ(outcomes[r].exitText, "killed by signal 9");
      continue;
    }
    EXPECT_TRUE(outcomes[r].exited) << "rank " << r << ": " << outcomes[r].exitText;
    for (const auto& f : outcomes[r].failures) ADD_FAILURE() << "rank " << r << ": " << f;
  }
  // Segment names end in the creator's pid; other tests may run meanwhile.
  for (const auto& name : shmSegments())
    for (const auto& pid : shared->pids)
      EXPECT_NE(name.substr(name.rfind("-p") + 2), std::to_string(pid.load()))
          << "left behind by one of this job's ranks: /dev/shm/" << name;
  munmap(shared, 4096);
}

TEST(Faults, AbortUnblocksTheCallerAndFailsThePeers) {
  auto outcomes = runRanks(3, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    std::vector<float> buf(1 << 20, 1.0f);
    if (rank == 0) {
      // Blocked in an allreduce nobody else has started; another thread aborts.
      std::thread aborter([comm] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        strata_comm_abort(comm);
      });
      double start = now();
      strata_result_t rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_SUM, comm);
      aborter.join();
      if (rc == STRATA_SUCCESS) rep.fail("allreduce succeeded on an aborted communicator");
      if (now() - start > kTimeout) rep.fail("abort took %.2f s to unblock the caller", now() - start);
      return;  // abort freed the communicator
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    double start = now();
    strata_result_t rc = STRATA_SUCCESS;
    for (int i = 0; i < 3 && rc == STRATA_SUCCESS; ++i)
      rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_SUM, comm);
    if (rc == STRATA_SUCCESS) rep.fail("peers never noticed the abort");
    if (now() - start > kTimeout + 1) rep.fail("peer error took %.2f s", now() - start);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "4"}});
  expectAllPassed(outcomes);
}

// A rank that stays in its own code (here: asleep) while the others start
// the next collective: the rank whose deadline passes names it, and says it
// is behind (its last message belonged to the operation before).
TEST(Faults, TimeoutNamesTheRankThatIsBehind) {
  auto outcomes = runRanks(3, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    std::vector<float> buf(1000, 1.0f);
    if (!rep.ok(strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_SUM, comm), comm,
                "first allreduce"))
      return;
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::seconds(4));
      strata_comm_destroy(comm);
      return;
    }
    strata_result_t rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_SUM, comm);
    const char* text = strata_comm_last_error(comm);
    if (rc == STRATA_ERR_TIMEOUT) {
      rep.value("timeouts", 1);
      for (const char* part : {"operation #2", "waiting for rank 2", "#1", "rank 2 has not reached it"})
        if (!mentions(text, part)) rep.fail("timeout message '%s' does not mention '%s'", text, part);
    } else if (rc != STRATA_ERR_REMOTE) {
      rep.fail("second allreduce ended with %s: %s", strata_result_string(rc), text);
    }
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "1.5"}});
  expectAllPassed(outcomes);
  int timeouts = 0;
  for (int r = 0; r < 2; ++r) timeouts += outcomes[r].values.count("timeouts") ? outcomes[r].values.at("timeouts") : 0;
  EXPECT_GE(timeouts, 1) << "no rank timed out";
}

// A communicator's own timeout (strata_comm_init_rank_config) overrides
// STRATA_TIMEOUT for its operations, and its splits inherit it: with
// STRATA_TIMEOUT at 300 s, a rank that sleeps 5 s instead of calling (long
// enough for both of its peer's deadlines) makes its peer's allreduce fail
// after about 1 s, on the split and then on the parent alike.
TEST(Faults, ConfigTimeoutOverridesTheVariableAndSplitsInheritIt) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_config_t config = STRATA_CONFIG_INITIALIZER;
    config.timeout_seconds = 1;
    strata_comm_t comm, split;
    if (!rep.ok(strata_comm_init_rank_config(&comm, nranks, id, rank, &config), nullptr, "init")) return;
    if (!rep.ok(strata_comm_split(comm, 0, rank, &split), comm, "split")) return;
    std::vector<float> buf(1000, 1.0f);
    if (rank == 1) std::this_thread::sleep_for(std::chrono::seconds(5));
    for (strata_comm_t c : {split, comm}) {
      if (rank == 1) break;
      const double start = now();
      strata_result_t rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_SUM, c);
      const double took = now() - start;
      if (rc != STRATA_ERR_TIMEOUT)
        rep.fail("%s: allreduce ended with %s: %s", c == comm ? "parent" : "split", strata_result_string(rc),
                 strata_comm_last_error(c));
      if (took < 0.9 || took > 3)
        rep.fail("%s: timed out after %.2f s, expected about 1 s", c == comm ? "parent" : "split", took);
    }
    strata_comm_destroy(split);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "300"}});
  expectAllPassed(outcomes);
}

struct Mismatch {
  const char* name;
  size_t count1;
  strata_datatype_t dt1;
  strata_op_t op1;
  const char* word;
};

class Mismatches : public ::testing::TestWithParam<Mismatch> {};

TEST_P(Mismatches, EveryRankGetsInvalidUsageNamingBothCalls) {
  const Mismatch m = GetParam();
  auto outcomes = runRanks(3, 60, [m](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    std::vector<double> buf(300000, 1.0);
    size_t count = rank == 1 ? m.count1 : 1000;
    strata_datatype_t dt = rank == 1 ? m.dt1 : STRATA_FLOAT32;
    strata_op_t op = rank == 1 ? m.op1 : STRATA_SUM;
    double start = now();
    strata_result_t rc = strata_allreduce(buf.data(), buf.data(), count, dt, op, comm);
    if (rc == STRATA_SUCCESS) rep.fail("mismatched allreduce succeeded");
    if (now() - start > kTimeout + 1) rep.fail("took %.2f s", now() - start);
    // The rank that saw the mismatch says so; the others may only learn that it failed.
    if (rc == STRATA_ERR_INVALID_USAGE && !mentions(strata_comm_last_error(comm), m.word))
      rep.fail("message '%s' does not mention %s", strata_comm_last_error(comm), m.word);
    rep.value("failed", 1);
    rep.value(std::string("usage-") + std::to_string(rank), rc == STRATA_ERR_INVALID_USAGE);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "4"}});
  expectAllPassed(outcomes);
  int usage = 0;
  for (int r = 0; r < 3; ++r) usage += outcomes[r].values.count("usage-" + std::to_string(r)) ? outcomes[r].values.at("usage-" + std::to_string(r)) : 0;
  EXPECT_GE(usage, 1) << "no rank reported STRATA_ERR_INVALID_USAGE";
}

INSTANTIATE_TEST_SUITE_P(
    Calls, Mismatches,
    ::testing::Values(Mismatch{"count", 2000, STRATA_FLOAT32, STRATA_SUM, "count=2000"},
                      Mismatch{"bigcount", 200000, STRATA_FLOAT32, STRATA_SUM, "count=200000"},
                      Mismatch{"datatype", 1000, STRATA_INT32, STRATA_SUM, "int32"},
                      Mismatch{"op", 1000, STRATA_FLOAT32, STRATA_MAX, "max"}),
    [](const ::testing::TestParamInfo<Mismatch>& info) { return info.param.name; });

TEST(Bootstrap, IntrudersAreDroppedAndTheJobCompletes) {
  const int port = freePort();
  const std::string portText = std::to_string(port);
  auto outcomes = runRanks(4, 60, [&](int rank, int, const strata_unique_id_t&, Reporter& rep) {
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", portText.c_str(), 1);
    if (rank >= 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (rank == 2) {
        // Garbage: a short write, and a hello-sized block of noise.
        for (size_t bytes : {size_t(7), size_t(512)}) {
          int s = socket(AF_INET, SOCK_STREAM, 0);
          sockaddr_in a{};
          a.sin_family = AF_INET;
          a.sin_port = htons(static_cast<uint16_t>(std::stoi(portText)));
          a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
          if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
            std::vector<char> noise(bytes, 'z');
            (void)!write(s, noise.data(), noise.size());
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          close(s);
        }
        return;
      }
      // Another job's rank on the same port: a different secret, refused.
      setenv("RANK", "1", 1);
      setenv("WORLD_SIZE", "3", 1);
      strata_comm_t comm;
      strata_result_t rc = strata_comm_init_env(&comm);
      if (rc != STRATA_ERR_INVALID_USAGE) rep.fail("foreign rank got %s: %s", strata_result_string(rc), strata_last_error());
      else if (!mentions(strata_last_error(), "does not hold this job's secret")) rep.fail("message '%s'", strata_last_error());
      return;
    }
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", "2", 1);
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(400));  // after the intruders
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_env(&comm), nullptr, "strata_comm_init_env")) return;
    float v[3] = {1.0f + rank, 2, 3};
    if (rep.ok(strata_allreduce(v, v, 3, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce") &&
        (v[0] != 3 || v[1] != 4 || v[2] != 6))
      rep.fail("wrong sums %g %g %g", v[0], v[1], v[2]);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "10"}});
  expectAllPassed(outcomes);
}

// Ranks 0-2 of a 3-rank job, rank 2 after the others (and after whatever
// the test sends meanwhile), sum rank+1 and check it.
void joinLateAndSum(int rank, const strata_unique_id_t& id, Reporter& rep) {
  if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(600));
  strata_comm_t comm;
  if (!rep.ok(strata_comm_init_rank(&comm, 3, id, rank), nullptr, "init")) return;
  int x = rank + 1;
  rep.ok(strata_allreduce(&x, &x, 1, STRATA_INT32, STRATA_SUM, comm), comm, "allreduce");
  if (x != 6) rep.fail("sum %d", x);
  strata_comm_destroy(comm);
}

TEST(Bootstrap, WrongWorldSizeAndDuplicateRankAreRefused) {
  // Processes 0..2 form a 3-rank job; rank 2 joins late. In between, process
  // 3 (it has the id, so the secret is right) claims a world of 4, then rank
  // 1 again: both are refused and the real job completes.
  auto outcomes = runRanks(4, 60, [](int rank, int, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (rank == 3) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      strata_result_t rc = strata_comm_init_rank(&comm, 4, id, 3);
      if (rc != STRATA_ERR_INVALID_USAGE || !mentions(strata_last_error(), "nranks"))
        rep.fail("wrong world size: %s: %s", strata_result_string(rc), strata_last_error());
      rc = strata_comm_init_rank(&comm, 3, id, 1);
      if (rc != STRATA_ERR_INVALID_USAGE || !mentions(strata_last_error(), "already joined"))
        rep.fail("duplicate rank: %s: %s", strata_result_string(rc), strata_last_error());
      return;
    }
    joinLateAndSum(rank, id, rep);
  }, {{"STRATA_TIMEOUT", "10"}});
  expectAllPassed(outcomes);
}

TEST(Bootstrap, TlsOnSomeRanksOnlyIsAClearError) {
  // A 3-rank job under STRATA_TLS=1; before rank 2 joins, process 3 tries as
  // rank 2 without TLS: it is told at once to set STRATA_TLS alike, and the
  // job goes on to complete over TLS.
  auto outcomes = runRanks(4, 60, [](int rank, int, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (rank == 3) {
      setenv("STRATA_TLS", "0", 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const double start = now();
      strata_result_t rc = strata_comm_init_rank(&comm, 3, id, 2);
      if (rc != STRATA_ERR_INVALID_USAGE || !mentions(strata_last_error(), "set STRATA_TLS alike"))
        rep.fail("plain rank: %s: %s", strata_result_string(rc), strata_last_error());
      if (now() - start > 2) rep.fail("refused after %.2f s, not at once", now() - start);
      return;
    }
    joinLateAndSum(rank, id, rep);
  }, {{"STRATA_TIMEOUT", "10"}, {"STRATA_TLS", "1"}});
  expectAllPassed(outcomes);
}

// Sockets this process holds (bootstrap, control plane; shared memory holds none).
int openSockets() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char target[64] = {};
      const std::string path = std::string("/proc/self/fd/") + e->d_name;
      if (readlink(path.c_str(), target, sizeof(target) - 1) > 0 && std::strncmp(target, "socket:", 7) == 0) ++n;
    }
    closedir(d);
  }
  return n;
}

TEST(Bootstrap, RanksHoldOnlyTheirTreeNeighboursAfterInit) {
  // 13 ranks: a tree of depth 4 with a partial last level. Under a star
  // rank 0 held 12 bootstrap sockets for the communicator's life.
  constexpr int kRanks = 13;
  struct Shared {
    std::atomic<int> sockets[kRanks];
  };
  Shared* shared = sharedPage<Shared>();
  auto outcomes = runRanks(kRanks, 60, [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    const int before = openSockets();
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    shared->sockets[rank] = openSockets() - before;
    // The tree carried init's exchanges; a collective checks the result.
    double mine = rank + 0.5, sum = 0;
    if (rep.ok(strata_allreduce(&mine, &sum, 1, STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce") &&
        sum != nranks * (nranks - 1) / 2.0 + nranks * 0.5)
      rep.fail("allreduce gave %g", sum);
    strata_comm_destroy(comm);
  }, {{"STRATA_TRANSPORT", "shm"}});
  expectAllPassed(outcomes);
  for (int r = 0; r < kRanks; ++r) {
    // Its parent (its lowest set bit cleared) and the ranks whose parent it is.
    int neighbours = r > 0;
    for (int c = 1; c < kRanks; ++c) neighbours += (c & (c - 1)) == r;
    // Plus the control plane's listener (rank 0 also closed the unique id's).
    EXPECT_LE(shared->sockets[r].load(), neighbours + 1) << "rank " << r;
  }
}

TEST(Bootstrap, UnreachableRootTimesOutWithAClearError) {
  auto outcomes = runRanks(1, 30, [](int, int, const strata_unique_id_t& id, Reporter& rep) {
    // The id's rank 0 never comes: joining as rank 1 must give up at the deadline.
    strata_comm_t comm;
    double start = now();
    strata_result_t rc = strata_comm_init_rank(&comm, 2, id, 1);
    if (rc != STRATA_ERR_TIMEOUT) rep.fail("got %s: %s", strata_result_string(rc), strata_last_error());
    if (now() - start > 2 + 1.5) rep.fail("took %.2f s with STRATA_TIMEOUT=2", now() - start);
  }, {{"STRATA_TIMEOUT", "2"}});
  expectAllPassed(outcomes);
}

TEST(Bootstrap, MasterPortInUseIsAClearError) {
  // Another process already listens on MASTER_PORT: rank 0 must say so.
  int busy = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  ASSERT_EQ(bind(busy, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(listen(busy, 1), 0);
  socklen_t len = sizeof(a);
  getsockname(busy, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  auto outcomes = runRanks(1, 30, [&](int, int, const strata_unique_id_t&, Reporter& rep) {
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", port.c_str(), 1);
    strata_comm_t comm;
    strata_result_t rc = strata_comm_init_env(&comm);
    if (rc != STRATA_ERR_SYSTEM) rep.fail("got %s: %s", strata_result_string(rc), strata_last_error());
    if (!mentions(strata_last_error(), port.c_str()) || !mentions(strata_last_error(), "MASTER_PORT"))
      rep.fail("message '%s' names neither the port nor MASTER_PORT", strata_last_error());
  });
  close(busy);
  expectAllPassed(outcomes);
}

TEST(Progress, NonBlockingRequestsInFlightComplete) {
  for (const char* threads : {"0", "1", "2"}) {
    auto outcomes = runRanks(3, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
      const size_t counts[] = {3, 4000, 300000, 17};
      for (int round = 0; round < 5; ++round) {
        std::vector<std::vector<int64_t>> bufs;
        std::vector<strata_request_t> reqs;
        for (size_t j = 0; j < 12; ++j) {
          size_t count = counts[j % 4];
          bufs.emplace_back(count);
          for (size_t i = 0; i < count; ++i) bufs.back()[i] = static_cast<int64_t>(rank * 1000 + j * 10 + i % 7);
          strata_request_t req;
          if (!rep.ok(strata_iallreduce(bufs.back().data(), bufs.back().data(), count, STRATA_INT64, STRATA_SUM, comm, &req), comm, "iallreduce")) return;
          reqs.push_back(req);
        }
        // Finish them out of order: odd ones by polling strata_test.
        for (size_t j = reqs.size(); j-- > 0;) {
          if (j % 2) {
            int done = 0;
            while (!done)
              if (!rep.ok(strata_test(reqs[j], &done), comm, "strata_test")) return;
          } else if (!rep.ok(strata_wait(reqs[j]), comm, "strata_wait")) {
            return;
          }
        }
        for (size_t j = 0; j < bufs.size(); ++j)
          for (size_t i = 0; i < bufs[j].size(); ++i) {
            int64_t want = 0;
            for (int r = 0; r < nranks; ++r) want += r * 1000 + static_cast<int64_t>(j * 10 + i % 7);
            if (bufs[j][i] != want) {
              rep.fail("round %d request %zu element %zu: %lld, want %lld", round, j, i, (long long)bufs[j][i], (long long)want);
              return;
            }
          }
      }
      strata_comm_destroy(comm);
    }, {{"STRATA_NTHREADS", threads}});
    expectAllPassed(outcomes);
  }
}

TEST(Progress, ThousandSmallAllreducesBackToBack) {
  auto outcomes = runRanks(4, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    float buf[16];
    for (int it = 0; it < 1000; ++it) {
      size_t count = 1 + it % 16;
      for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>(rank + it + i);
      if (!rep.ok(strata_allreduce(buf, buf, count, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce")) return;
      for (size_t i = 0; i < count; ++i) {
        float want = static_cast<float>(nranks * (it + i) + nranks * (nranks - 1) / 2);
        if (buf[i] != want) {
          rep.fail("iteration %d element %zu: %g, want %g", it, i, buf[i], want);
          return;
        }
      }
    }
    strata_comm_destroy(comm);
  });
  expectAllPassed(outcomes);
}

TEST(Progress, TwoCommunicatorsUsedAlternately) {
  strata_unique_id_t second;
  ASSERT_EQ(strata_get_unique_id(&second), STRATA_SUCCESS);
  auto outcomes = runRanks(3, 60, [&](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t a, b;
    if (!rep.ok(strata_comm_init_rank(&a, nranks, id, rank), nullptr, "init a")) return;
    if (!rep.ok(strata_comm_init_rank(&b, nranks, second, rank), nullptr, "init b")) return;
    for (int it = 0; it < 200; ++it) {
      int32_t x[2] = {rank + 1, it};
      strata_comm_t c = it % 2 ? a : b;
      strata_op_t op = it % 2 ? STRATA_SUM : STRATA_MAX;
      if (!rep.ok(strata_allreduce(x, x, 2, STRATA_INT32, op, c), c, "allreduce")) return;
      int32_t want0 = op == STRATA_SUM ? nranks * (nranks + 1) / 2 : nranks;
      int32_t want1 = op == STRATA_SUM ? it * nranks : it;
      if (x[0] != want0 || x[1] != want1) {
        rep.fail("iteration %d: %d %d", it, x[0], x[1]);
        return;
      }
    }
    strata_comm_destroy(a);
    strata_comm_destroy(b);
  });
  expectAllPassed(outcomes);
}

TEST(Lifecycle, InitAndDestroyFiftyTimes) {
  std::vector<strata_unique_id_t> ids(50);
  for (auto& id : ids) ASSERT_EQ(strata_get_unique_id(&id), STRATA_SUCCESS);
  auto outcomes = runRanks(2, 120, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    for (int it = 0; it < 50; ++it) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, nranks, ids[it], rank), nullptr, "init")) return;
      double v = it + rank;
      if (!rep.ok(strata_allreduce(&v, &v, 1, STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce")) return;
      if (v != 2.0 * it + 1) rep.fail("iteration %d: %g", it, v);
      if (!rep.ok(strata_comm_destroy(comm), nullptr, "destroy")) return;
    }
  });
  expectAllPassed(outcomes);
}

TEST(Lifecycle, IdleCommunicatorUsesNoCpu) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    float v = 1;
    // Leave non-blocking work behind first, so the progress threads have run.
    strata_request_t req;
    if (!rep.ok(strata_iallreduce(&v, &v, 1, STRATA_FLOAT32, STRATA_SUM, comm, &req), comm, "iallreduce")) return;
    rep.ok(strata_wait(req), comm, "wait");
    auto cpu = [] {
      rusage u;
      getrusage(RUSAGE_SELF, &u);
      return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
    };
    double before = cpu();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    double used = cpu() - before;
    if (used > 0.05) rep.fail("idle communicator used %.3f s of CPU in 1 s", used);
    strata_comm_destroy(comm);
  }, {{"STRATA_NTHREADS", "2"}});
  expectAllPassed(outcomes);
}

TEST(Lifecycle, TorchrunStyleEnvironment) {
  // freePort() hands out a port that anything on the machine may take before
  // rank 0 binds it (other tests run alongside): then try another.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string port = std::to_string(freePort());
    auto outcomes = runRanks(3, 60, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
      setenv("RANK", std::to_string(rank).c_str(), 1);
      setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
      setenv("WORLD_SIZE", std::to_string(nranks).c_str(), 1);
      setenv("MASTER_ADDR", "localhost", 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));  // others wait for rank 0
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_env(&comm), nullptr, "strata_comm_init_env")) return;
      int r = -1, n = -1;
      strata_comm_rank(comm, &r);
      strata_comm_size(comm, &n);
      if (r != rank || n != nranks) rep.fail("rank/size %d/%d", r, n);
      uint64_t v[100];
      for (int i = 0; i < 100; ++i) v[i] = static_cast<uint64_t>(rank) << i % 60;
      if (!rep.ok(strata_allreduce(v, v, 100, STRATA_UINT64, STRATA_MAX, comm), comm, "allreduce")) return;
      for (int i = 0; i < 100; ++i)
        if (v[i] != static_cast<uint64_t>(nranks - 1) << i % 60) rep.fail("element %d", i);
      strata_comm_destroy(comm);
    }, {{"STRATA_TIMEOUT", "20"}});
    const bool portTaken = !outcomes[0].failures.empty() && mentions(outcomes[0].failures[0].c_str(), "in use");
    if (portTaken && attempt < 2) continue;
    expectAllPassed(outcomes);
    return;
  }
}

}  // namespace
}  // namespace strata::test
