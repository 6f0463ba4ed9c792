// Surviving a lost rank with real faults: ranks SIGKILLed in the middle of a
// collective (rank 0, the bootstrap root, among them), a coordinator killed
// while the survivors agree, a revoke while operations are pending, exclude
// lists, and a new process joining after a shrink. Every new communicator is
// checked with collectives against sums computed here in double precision.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "multiproc.h"
#include "process_tools.h"

namespace strata::test {
namespace {

constexpr double kTimeout = 4;  // STRATA_TIMEOUT here

struct Shared {
  std::atomic<double> killedAt{0};
  std::atomic<int> pids[8];
  std::atomic<bool> idReady{false};
  strata_unique_id_t growId;
};

// Checks that `comm` holds `ranks` (the parent ranks of its members, in
// order) with this rank at `parentRank`: its size, its rank, and an
// allreduce and a broadcast of values only the right members give.
void checkMembers(strata_comm_t comm, const std::vector<int>& ranks, int parentRank, Reporter& rep) {
  int size = -1, rank = -1;
  if (!rep.ok(strata_comm_size(comm, &size), comm, "size") || !rep.ok(strata_comm_rank(comm, &rank), comm, "rank"))
    return;
  if (size != static_cast<int>(ranks.size())) rep.fail("new communicator has %d ranks, want %zu", size, ranks.size());
  if (rank < 0 || rank >= size || ranks[rank] != parentRank) {
    rep.fail("rank %d of the new communicator, but parent rank %d should be there", rank, parentRank);
    return;
  }
  std::vector<double> buf(1000);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = (parentRank + 1) * 1000.0 + static_cast<double>(i);
  if (!rep.ok(strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT64, STRATA_SUM, comm), comm,
              "allreduce on the new communicator"))
    return;
  for (size_t i = 0; i < buf.size(); ++i) {
    double want = 0;
    for (int r : ranks) want += (r + 1) * 1000.0 + static_cast<double>(i);
    if (buf[i] != want) {
      rep.fail("allreduce element %zu is %g, want %g", i, buf[i], want);
      return;
    }
  }
  int64_t root = parentRank * 7;
  if (rep.ok(strata_broadcast(&root, &root, 1, STRATA_INT64, size - 1, comm), comm, "broadcast") &&
      root != ranks.back() * 7)
    rep.fail("broadcast from the last rank gave %lld, want %d", static_cast<long long>(root), ranks.back() * 7);
}

// A communicator on which every rank has completed allreduce #1 of `buf`;
// null (the failure reported) if not.
strata_comm_t joinWithOneAllreduce(int rank, int n, const strata_unique_id_t& id, std::vector<float>& buf,
                                   Reporter& rep) {
  strata_comm_t comm;
  if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return nullptr;
  if (rep.ok(strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_SUM, comm), comm,
             "first allreduce"))
    return comm;
  strata_comm_destroy(comm);
  return nullptr;
}

std::vector<int> without(int n, std::vector<int> gone) {
  std::vector<int> out;
  for (int r = 0; r < n; ++r)
    if (std::find(gone.begin(), gone.end(), r) == gone.end()) out.push_back(r);
  return out;
}

// Ranks 0 and 2 wait in an allreduce that rank 1 never starts: rank 1
// revokes instead, and both return STRATA_ERR_REVOKED long before the
// timeout. Every later call fails alike; shrink then rebuilds all three.
TEST(Revoke, PendingOperationsFailOnEveryRankThenShrinkKeepsAll) {
  auto outcomes = runRanks(3, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    std::vector<float> buf(1 << 16, 1.0f);
    const double start = now();
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      rep.ok(strata_comm_revoke(comm), comm, "revoke");
    } else {
      strata_result_t rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_SUM, comm);
      if (rc != STRATA_ERR_REVOKED)
        rep.fail("pending allreduce ended with %s (%s), want revoked", strata_result_string(rc),
                 strata_comm_last_error(comm));
      if (now() - start > 2) rep.fail("the revoke took %.2f s to reach a waiting rank", now() - start);
      if (!mentions(strata_comm_last_error(comm), "rank 1 revoked"))
        rep.fail("message '%s' does not name the revoking rank", strata_comm_last_error(comm));
    }
    strata_result_t later = strata_allreduce(buf.data(), buf.data(), 4, STRATA_FLOAT32, STRATA_SUM, comm);
    if (later != STRATA_ERR_REVOKED) rep.fail("an allreduce after the revoke gave %s", strata_result_string(later));
    strata_comm_t shrunk = nullptr;
    if (rep.ok(strata_comm_shrink(comm, nullptr, 0, STRATA_SHRINK_DEFAULT, &shrunk), comm, "shrink")) {
      checkMembers(shrunk, {0, 1, 2}, rank, rep);
      strata_comm_destroy(shrunk);
    }
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "30"}});
  expectAllPassed(outcomes);
}

// A rank SIGKILLed in the middle of large allreduces, or right after init
// before any collective: the survivors see an error, shrink (revoking first,
// as a training loop would), and hold a working communicator of the rest
// within STRATA_TIMEOUT + 1 s of the kill. Killing rank 0 takes the
// bootstrap root and the first coordinator with it.
struct Kill {
  int victim;
  double after;  // seconds after init
};

class KilledMidAllreduce : public ::testing::TestWithParam<Kill> {};

TEST_P(KilledMidAllreduce, SurvivorsShrinkAndGoOn) {
  const int victim = GetParam().victim, nranks = 4;
  const double after = GetParam().after;
  Shared* shared = sharedPage<Shared>();
  auto outcomes = runRanks(nranks, 90, [&](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    std::vector<float> buf(4 << 20, 1.0f);
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    const double start = now();
    strata_result_t rc = STRATA_SUCCESS;
    for (int i = 0; i < 1000 && rc == STRATA_SUCCESS; ++i) {
      if (rank == victim && now() - start >= after) {
        shared->killedAt = now();
        raise(SIGKILL);
      }
      rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_MAX, comm);
    }
    if (rc == STRATA_SUCCESS) {
      rep.fail("1000 allreduces completed although rank %d was killed", victim);
      return;
    }
    strata_comm_t shrunk = nullptr;
    if (!rep.ok(strata_comm_shrink(comm, nullptr, 0, STRATA_SHRINK_ABORT, &shrunk), comm, "shrink")) return;
    const double took = now() - shared->killedAt.load();
    if (took > kTimeout + 1) rep.fail("the shrunk communicator came %.2f s after the kill", took);
    checkMembers(shrunk, without(n, {victim}), rank, rep);
    strata_comm_destroy(shrunk);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "4"}});
  expectAllPassed(outcomes, victim);
  munmap(shared, 4096);
}

INSTANTIATE_TEST_SUITE_P(Victims, KilledMidAllreduce, ::testing::Values(Kill{2, 0.3}, Kill{0, 0.3}, Kill{3, 0}),
                         [](const auto& info) {
                           return "rank" + std::to_string(info.param.victim) +
                                  (info.param.after > 0 ? "_midAllreduce" : "_rightAfterInit");
                         });

// A rank SIGKILLed before it joins: there is no communicator to shrink yet.
// Rank 0's init names the missing rank, every other rank's init fails
// within the bootstrap deadline, and the survivors then make a communicator
// of three from another id and compute right on it.
TEST(Shrink, RankKilledAtInitLeavesAClearErrorAndTheRestStartAgain) {
  strata_unique_id_t again;
  ASSERT_EQ(strata_get_unique_id(&again), STRATA_SUCCESS) << strata_last_error();
  auto outcomes = runRanks(4, 60, [&](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    if (rank == 2) raise(SIGKILL);
    const double start = now();
    strata_comm_t comm = nullptr;
    if (strata_comm_init_rank(&comm, n, id, rank) == STRATA_SUCCESS) {
      rep.fail("init succeeded without rank 2");
      strata_comm_destroy(comm);
      return;
    }
    if (now() - start > kTimeout + 1) rep.fail("init took %.1f s to fail", now() - start);
    if (rank == 0 && !mentions(strata_last_error(), "missing ranks: 2"))
      rep.fail("rank 0's error does not name rank 2: %s", strata_last_error());
    const int newRank = rank < 2 ? rank : rank - 1;
    if (!rep.ok(strata_comm_init_rank(&comm, 3, again, newRank), nullptr, "init without rank 2")) return;
    checkMembers(comm, {0, 1, 3}, rank, rep);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "4"}, {"STRATA_BOOTSTRAP_TIMEOUT", "1.5"}});
  expectAllPassed(outcomes, 2);
}

// Failures during the agreement itself, while the coordinator waits for
// rank 3, which calls shrink only after 1.5 s: 0.5 s in, the coordinator
// (rank 0) is SIGKILLed, and ranks 1-3 agree without it, rank 1 taking
// over; or a rank that has proposed (rank 2) is, and the coordinator sees
// its connection closed when it decides. Either way at the first try.
struct MidShrink {
  int victim, killer;
};

class KilledMidShrink : public ::testing::TestWithParam<MidShrink> {};

TEST_P(KilledMidShrink, SurvivorsAgreeWithoutIt) {
  const int victim = GetParam().victim, killer = GetParam().killer;
  Shared* shared = sharedPage<Shared>();
  auto outcomes = runRanks(4, 60, [&](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    shared->pids[rank] = static_cast<int>(getpid());
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    std::thread killing;
    if (rank == killer)
      killing = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        kill(shared->pids[victim].load(), SIGKILL);
      });
    if (rank == 3) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    strata_comm_t shrunk = nullptr;
    const bool ok = rep.ok(strata_comm_shrink(comm, nullptr, 0, STRATA_SHRINK_DEFAULT, &shrunk), comm, "shrink");
    if (killing.joinable()) killing.join();
    if (rank == victim) rep.fail("rank %d survived its kill", victim);
    if (!ok) return;
    checkMembers(shrunk, without(n, {victim}), rank, rep);
    strata_comm_destroy(shrunk);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "6"}});
  expectAllPassed(outcomes, victim);
  munmap(shared, 4096);
}

INSTANTIATE_TEST_SUITE_P(Shrink, KilledMidShrink, ::testing::Values(MidShrink{0, 2}, MidShrink{2, 1}),
                         [](const auto& info) { return info.param.victim == 0 ? "coordinator" : "proposer"; });

// Ranks named in exclude are left out although alive (one that calls gets
// NULL); ranks that pass different lists all get STRATA_ERR_INVALID_USAGE.
TEST(Shrink, ExcludeListsAreHonouredAndMustAgree) {
  auto outcomes = runRanks(4, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    const int one[] = {1};
    strata_comm_t shrunk = nullptr;
    if (rep.ok(strata_comm_shrink(comm, one, 1, STRATA_SHRINK_DEFAULT, &shrunk), comm, "shrink excluding rank 1")) {
      if (rank == 1 && shrunk) rep.fail("the excluded rank got a communicator");
      if (rank != 1) checkMembers(shrunk, {0, 2, 3}, rank, rep);
      if (shrunk) strata_comm_destroy(shrunk);
    }
    // Rank 3 alone also leaves out rank 2.
    const int two[] = {1, 2};
    if (rank != 1) {
      strata_result_t rc = strata_comm_shrink(comm, rank == 3 ? two : one, rank == 3 ? 2 : 1, STRATA_SHRINK_DEFAULT,
                                              &shrunk);
      if (rank != 2 && rc != STRATA_ERR_INVALID_USAGE)
        rep.fail("shrink with differing lists gave %s, want invalid usage", strata_result_string(rc));
      if (rank == 2 && rc == STRATA_SUCCESS) rep.fail("rank 2, excluded by rank 3 alone, got a communicator");
    }
    // Bad arguments name themselves and disturb nobody.
    const int outside[] = {n};
    if (strata_comm_shrink(comm, outside, 1, STRATA_SHRINK_DEFAULT, &shrunk) != STRATA_ERR_INVALID_ARGUMENT ||
        !mentions(strata_last_error(), "exclude[0]"))
      rep.fail("an exclude rank out of range was not refused by name: %s", strata_last_error());
    if (strata_comm_shrink(comm, nullptr, 0, 7, &shrunk) != STRATA_ERR_INVALID_ARGUMENT)
      rep.fail("flags=7 was not refused");
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "4"}});
  expectAllPassed(outcomes);
}

// Back to full size: rank 3 dies, the others shrink to three, and a new
// process joins through an id from the shrunk communicator's rank 0.
TEST(Grow, NewProcessJoinsAfterAShrink) {
  Shared* shared = sharedPage<Shared>();
  strata_unique_id_t id;
  ASSERT_EQ(strata_get_unique_id(&id), STRATA_SUCCESS) << strata_last_error();
  std::vector<ChildBody> bodies;
  for (int r = 0; r < 4; ++r)
    bodies.push_back([&, r](Reporter& rep) {
      strata_comm_t comm;
      if (!rep.ok(strata_comm_init_rank(&comm, 4, id, r), nullptr, "init")) return;
      if (r == 3) raise(SIGKILL);
      strata_comm_t shrunk = nullptr, grown = nullptr;
      if (!rep.ok(strata_comm_shrink(comm, nullptr, 0, STRATA_SHRINK_ABORT, &shrunk), comm, "shrink")) return;
      strata_unique_id_t growId;
      if (r == 0) {
        if (!rep.ok(strata_comm_grow_id(shrunk, &growId), shrunk, "grow_id")) return;
        shared->growId = growId;
        shared->idReady = true;
      }
      if (!rep.ok(strata_comm_grow(shrunk, 4, r == 0 ? &growId : nullptr, -1, &grown), shrunk, "grow")) return;
      checkMembers(grown, {0, 1, 2, 3}, r, rep);
      strata_comm_destroy(grown);
      strata_comm_destroy(shrunk);
      strata_comm_destroy(comm);
    });
  bodies.push_back([&](Reporter& rep) {  // the replacement, as rank 3
    while (!shared->idReady.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    strata_unique_id_t growId = shared->growId;
    strata_comm_t grown = nullptr;
    if (!rep.ok(strata_comm_grow(nullptr, 4, &growId, 3, &grown), nullptr, "grow (joining)")) return;
    checkMembers(grown, {0, 1, 2, 3}, 3, rep);
    strata_comm_destroy(grown);
  });
  auto outcomes = runChildren(bodies, 60, {{"STRATA_TIMEOUT", "4"}});
  expectAllPassed(outcomes, 3);
  munmap(shared, 4096);
}

// A rank that stays in its own code (asleep) while the others start the
// next collective: their timeout's message carries the stall report's
// summary, which names it and what it last completed. Rank 0, the
// bootstrap root, as the sleeper too.
class SleeperStalls : public ::testing::TestWithParam<int> {};

TEST_P(SleeperStalls, TimeoutReportNamesIt) {
  const int sleeper = GetParam();
  auto outcomes = runRanks(3, 60, [&](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    std::vector<float> buf(1000, 1.0f);
    strata_comm_t comm = joinWithOneAllreduce(rank, n, id, buf, rep);
    if (!comm) return;
    if (rank == sleeper) {
      std::this_thread::sleep_for(std::chrono::seconds(4));
      strata_comm_destroy(comm);
      return;
    }
    strata_result_t rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_SUM, comm);
    const std::string text = strata_comm_last_error(comm);
    if (rc == STRATA_ERR_TIMEOUT) {
      rep.value("timeouts", 1);
      // The other waiting rank may have timed out and destroyed its
      // communicator first: then it is reported gone, and waited for too.
      const std::string where = "rank " + std::to_string(sleeper) + " completed #1";
      for (const std::string& part : {std::string("Stall report: "), std::string(" in allreduce(count=1000, float32, sum) #2 for "),
                                      where, std::string("has issued nothing since")})
        if (text.find(part) == std::string::npos)
          rep.fail("timeout message '%s' does not mention '%s'", text.c_str(), part.c_str());
      const size_t at = text.find(" #2 for ");
      const std::string waitedFor = at == std::string::npos ? "" : text.substr(at + 8, text.find(';', at) - at - 8);
      if (waitedFor.find(std::to_string(sleeper)) == std::string::npos)
        rep.fail("the report waits for '%s', not for rank %d", waitedFor.c_str(), sleeper);
    } else if (rc != STRATA_ERR_REMOTE) {
      rep.fail("second allreduce ended with %s: %s", strata_result_string(rc), text.c_str());
    }
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "1.5"}});
  expectAllPassed(outcomes);
  int timeouts = 0;
  for (const auto& o : outcomes) timeouts += o.values.count("timeouts") ? o.values.at("timeouts") : 0;
  EXPECT_GE(timeouts, 1) << "no rank timed out";
}

INSTANTIATE_TEST_SUITE_P(Sleepers, SleeperStalls, ::testing::Values(2, 0),
                         [](const auto& info) { return "rank" + std::to_string(info.param); });

// strata_comm_dump from one rank, while two others have a collective in
// flight and are busy in their own code (one also waiting for a message
// that never comes), and a fourth is dead: the report says who waits for
// whom, that rank 3 is gone, and lists each rank's operations.
TEST(StallReport, DumpWithARankDeadAndOthersBusy) {
  auto outcomes = runRanks(4, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    std::vector<float> buf(1000, 1.0f);
    strata_comm_t comm = joinWithOneAllreduce(rank, n, id, buf, rep);
    if (!comm) return;
    if (rank == 3) raise(SIGKILL);
    if (rank == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      char report[4096];
      if (rep.ok(strata_comm_dump(comm, report, sizeof(report)), comm, "dump")) {
        for (const char* part : {"ranks 0,1 wait in allreduce(count=1000, float32, sum) #2 for ranks 2,3;",
                                 "rank 2 completed #1", "rank 3 is gone", "\n  rank 0: #1 allreduce",
                                 "#2 allreduce(count=1000, float32, sum) (pending", "\n  rank 3: gone",
                                 "; rank 1 waits in a receive of 64 B from rank 2 (issued",
                                 "; a receive of 64 B from rank 2 (pending"})
          if (!mentions(report, part)) rep.fail("report '%s' does not mention '%s'", report, part);
      }
      if (strata_comm_dump(comm, report, 0) != STRATA_ERR_INVALID_ARGUMENT) rep.fail("len 0 was not refused");
      strata_comm_destroy(comm);
      return;
    }
    // Rank 1 also waits for a message rank 2 never sends.
    float never[16];
    strata_request_t recv = nullptr;
    if (rank == 1 && !rep.ok(strata_irecv(never, 16, STRATA_FLOAT32, 2, comm, &recv), comm, "irecv")) return;
    strata_request_t req;
    if (!rep.ok(strata_iallreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_SUM, comm, &req), comm,
                "iallreduce"))
      return;
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (strata_wait(req) == STRATA_SUCCESS) rep.fail("an allreduce without ranks 2 and 3 completed");
    if (recv && strata_wait(recv) == STRATA_SUCCESS) rep.fail("a message rank 2 never sent arrived");
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "4"}});
  expectAllPassed(outcomes, 3);
}

// STRATA_DUMP_ON_SIGNAL=1: a SIGUSR1 logs the report (here to the file
// STRATA_DEBUG_FILE names), and the process goes on.
TEST(StallReport, Sigusr1LogsTheReport) {
  char dir[] = "/tmp/strata-dump-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string pattern = std::string(dir) + "/log-%p";
  auto outcomes = runRanks(2, 60, [&](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    float v = 1;
    if (!rep.ok(strata_allreduce(&v, &v, 1, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce")) return;
    if (rank == 0) {
      kill(getpid(), SIGUSR1);
      std::string log;
      for (int i = 0; i < 200 && log.find("\n  rank 1:") == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        log = readFile(std::string(dir) + "/log-" + std::to_string(getpid()));
      }
      // Rank 1 may not have returned from its allreduce yet, or have issued
      // its next one already.
      for (const char* part : {"SIGUSR1", "stall report, rank 0 of 2", "\n  rank 0: #1 allreduce(count=1, float32, sum) done",
                               "\n  rank 1: #1 allreduce(count=1, float32, sum)"})
        if (log.find(part) == std::string::npos) rep.fail("log '%s' does not mention '%s'", log.c_str(), part);
    }
    rep.ok(strata_allreduce(&v, &v, 1, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce after the signal");
    strata_comm_destroy(comm);
  }, {{"STRATA_DUMP_ON_SIGNAL", "1"}, {"STRATA_DEBUG_FILE", pattern}});
  expectAllPassed(outcomes);
  std::system(("rm -rf " + std::string(dir)).c_str());
}

}  // namespace
}  // namespace strata::test
