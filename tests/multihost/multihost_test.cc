// Ranks on different "hosts": network namespaces joined by a bridge
// (test_network.h), so ranks of one namespace share memory and ranks of
// different namespaces talk over tcp, as on a real cluster. Needs root;
// skips with a message otherwise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collective_checks.h"
#include "multiproc.h"
#include "process_tools.h"
#include "reference.h"
#include "test_network.h"

namespace strata::test {
namespace {

constexpr const char* kPort = "29500";  // free: the namespaces are new

#define SKIP_UNLESS_SUPPORTED()                                   \
  do {                                                            \
    std::string why = TestNetwork::unsupportedReason();           \
    if (!why.empty()) GTEST_SKIP() << why;                        \
  } while (0)

// Puts the calling rank on its host and joins the job torchrun-style.
bool joinFromHost(const TestNetwork& net, int host, int rank, int nranks, strata_comm_t* comm, Reporter& rep) {
  if (!net.enter(host)) {
    rep.fail("cannot enter namespace %s", net.nsName(host).c_str());
    return false;
  }
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(nranks).c_str(), 1);
  setenv("MASTER_ADDR", net.address(0).c_str(), 1);
  setenv("MASTER_PORT", kPort, 1);
  return rep.ok(strata_comm_init_env(comm), nullptr, "strata_comm_init_env");
}

// Inputs are small integers, so every result below is exact and the
// reference is plain integer arithmetic.
int64_t inputValue(int rank, size_t i) { return static_cast<int64_t>((i * 7 + rank * 13) % 19) - 9; }

template <typename T>
bool checkSum(const std::vector<T>& got, int nranks, strata_op_t op, Reporter& rep, const char* what) {
  for (size_t i = 0; i < got.size(); ++i) {
    int64_t acc = inputValue(0, i);
    for (int r = 1; r < nranks; ++r)
      acc = op == STRATA_MAX ? std::max(acc, inputValue(r, i)) : acc + inputValue(r, i);
    if (got[i] != static_cast<T>(acc)) {
      rep.fail("%s: element %zu is %g, want %lld", what, i, static_cast<double>(got[i]), static_cast<long long>(acc));
      return false;
    }
  }
  return true;
}

TEST(MultiHost, AllreduceAcrossTwoHostsOfTwoRanks) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(2);
  ASSERT_EQ(net.error(), "");
  auto outcomes = runRanks(4, 120, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    strata_comm_t comm;
    if (!joinFromHost(net, rank / 2, rank, nranks, &comm, rep)) return;
    for (size_t count : {size_t(1), size_t(1023), size_t(65537), size_t(1) << 20}) {
      for (strata_op_t op : {STRATA_SUM, STRATA_MAX}) {
        std::vector<float> f(count);
        std::vector<int64_t> l(count);
        for (size_t i = 0; i < count; ++i) f[i] = static_cast<float>(l[i] = inputValue(rank, i));
        std::string name = "n" + std::to_string(count) + (op == STRATA_SUM ? "-sum" : "-max");
        if (!rep.ok(strata_allreduce(f.data(), f.data(), count, STRATA_FLOAT32, op, comm), comm, name.c_str())) return;
        if (!rep.ok(strata_allreduce(l.data(), l.data(), count, STRATA_INT64, op, comm), comm, name.c_str())) return;
        checkSum(f, nranks, op, rep, (name + " float32").c_str());
        checkSum(l, nranks, op, rep, (name + " int64").c_str());
        rep.value(name, hashBytes(f.data(), count * 4) ^ hashBytes(l.data(), count * 8));
      }
    }
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "30"}});
  expectAllPassed(outcomes);
  expectValuesAgree(outcomes);
}

// Every other collective, point-to-point across hosts in a group, and a
// split into one communicator per host, on 2 hosts x 2 ranks; small slots so
// that modest counts are pipelined over tcp as well as shared memory.
TEST(MultiHost, EveryCollectiveAcrossHosts) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(2);
  ASSERT_EQ(net.error(), "");
  expectAllPassed(runRanks(4, 240, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    strata_comm_t comm;
    if (!joinFromHost(net, rank / 2, rank, nranks, &comm, rep)) return;
    if (!checkEveryCollective(rank, nranks, comm, rep)) return;
    // Each rank exchanges with its counterpart on the other host.
    const int peer = (rank + 2) % nranks;
    std::vector<char> out = inputs(rank, 70001, STRATA_FLOAT32), in(70001 * 4);
    strata_group_start();
    strata_send(out.data(), 70001, STRATA_FLOAT32, peer, comm);
    strata_recv(in.data(), 70001, STRATA_FLOAT32, peer, comm);
    if (!rep.ok(strata_group_end(), comm, "exchange across hosts")) return;
    check(rep, "exchange across hosts", in.data(), inputs(peer, 70001, STRATA_FLOAT32), 4);
    strata_comm_t local;
    if (!rep.ok(strata_comm_split(comm, rank / 2, rank, &local), comm, "split by host")) return;
    int64_t v = rank, sum = 0;
    if (!rep.ok(strata_allreduce(&v, &sum, 1, STRATA_INT64, STRATA_SUM, local), local, "allreduce on a host")) return;
    if (sum != (rank / 2 == 0 ? 0 + 1 : 2 + 3)) rep.fail("per-host split sum %lld", (long long)sum);
    strata_comm_destroy(local);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "30"}, {"STRATA_SLOT_BYTES", "8192"}}));
}

// Hosts with different core counts (here: rank 0's affinity mask cut to one
// core) still agree on the channel count, which every plan depends on: large
// collectives, whose plans use every channel, complete and are exact.
TEST(MultiHost, UnequalHostsAgreeOnChannels) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(2);
  ASSERT_EQ(net.error(), "");
  expectAllPassed(runRanks(2, 120, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    if (rank == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(0, &one);
      if (sched_setaffinity(0, sizeof(one), &one) != 0) rep.fail("sched_setaffinity failed");
    }
    strata_comm_t comm;
    if (!joinFromHost(net, rank, rank, nranks, &comm, rep)) return;
    std::vector<int64_t> v(size_t(1) << 21);
    for (size_t i = 0; i < v.size(); ++i) v[i] = inputValue(rank, i);
    if (rep.ok(strata_allreduce(v.data(), v.data(), v.size(), STRATA_INT64, STRATA_SUM, comm), comm, "allreduce"))
      checkSum(v, nranks, STRATA_SUM, rep, "allreduce across unequal hosts");
    std::vector<char> out(size_t(4) << 20);
    std::vector<char> in = inputs(rank, out.size() / 8, STRATA_FLOAT32);
    if (rep.ok(strata_allgather(in.data(), out.data(), in.size() / 4, STRATA_FLOAT32, comm), comm, "allgather"))
      for (int p = 0; p < nranks; ++p)
        check(rep, "allgather block", out.data() + p * in.size(), inputs(p, in.size() / 4, STRATA_FLOAT32), 4);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "10"}}));
}

// A unique id made inside host 0 (so it carries host 0's address); the test
// process returns to its own namespace afterwards.
void idFromHost0(const TestNetwork& net, strata_unique_id_t* id) {
  int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(home, 0);
  ASSERT_TRUE(net.enter(0));
  strata_result_t rc = strata_get_unique_id(id);
  ASSERT_EQ(setns(home, CLONE_NEWNET), 0);
  close(home);
  ASSERT_EQ(rc, STRATA_SUCCESS) << strata_last_error();
}

TEST(MultiHost, UniqueIdFromAnotherHost) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(3);
  ASSERT_EQ(net.error(), "");
  strata_unique_id_t id;
  ASSERT_NO_FATAL_FAILURE(idFromHost0(net, &id));
  auto outcomes = runRanks(3, 60, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    if (!net.enter(rank)) return rep.fail("cannot enter namespace");
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    std::vector<double> v(5000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(inputValue(rank, i));
    if (rep.ok(strata_allreduce(v.data(), v.data(), v.size(), STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce"))
      checkSum(v, nranks, STRATA_SUM, rep, "float64 sum");
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "30"}});
  expectAllPassed(outcomes);
}

TEST(MultiHost, Ipv6OnlyHosts) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(2, TestNetwork::Family::IPv6);
  ASSERT_EQ(net.error(), "");
  strata_unique_id_t id;
  ASSERT_NO_FATAL_FAILURE(idFromHost0(net, &id));
  // Both bootstraps: MASTER_ADDR as an IPv6 literal, then the unique id.
  auto outcomes = runRanks(2, 60, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    strata_comm_t viaEnv, viaId;
    if (!joinFromHost(net, rank, rank, nranks, &viaEnv, rep)) return;
    if (!rep.ok(strata_comm_init_rank(&viaId, nranks, id, rank), nullptr, "init from the unique id")) return;
    for (strata_comm_t comm : {viaEnv, viaId}) {
      std::vector<int64_t> v(300000);
      for (size_t i = 0; i < v.size(); ++i) v[i] = inputValue(rank, i);
      if (rep.ok(strata_allreduce(v.data(), v.data(), v.size(), STRATA_INT64, STRATA_SUM, comm), comm, "allreduce"))
        checkSum(v, nranks, STRATA_SUM, rep, "int64 sum over IPv6");
      strata_comm_destroy(comm);
    }
  }, {{"STRATA_TIMEOUT", "30"}});
  expectAllPassed(outcomes);
}

TEST(MultiHost, IntrudersFromAnotherHostAreDropped) {
  // From host 2, a process sends garbage to rank 0's bootstrap port, then a
  // rank of another job (a different world size, hence secret) tries to
  // join; both are refused and the real job on hosts 0 and 1 completes.
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(3);
  ASSERT_EQ(net.error(), "");
  auto outcomes = runRanks(3, 60, [&](int rank, int, const strata_unique_id_t&, Reporter& rep) {
    strata_comm_t comm;
    if (rank == 2) {
      if (!net.enter(2)) return rep.fail("cannot enter namespace");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::string garbage = "printf 'not a strata hello at all' | timeout 3 bash -c 'cat > /dev/tcp/" +
                            net.address(0) + "/" + kPort + "'";
      if (system(garbage.c_str()) != 0) rep.fail("could not reach rank 0's port from host 2");
      setenv("RANK", "1", 1);
      setenv("WORLD_SIZE", "5", 1);
      setenv("MASTER_ADDR", net.address(0).c_str(), 1);
      setenv("MASTER_PORT", kPort, 1);
      strata_result_t rc = strata_comm_init_env(&comm);
      if (rc != STRATA_ERR_INVALID_USAGE) rep.fail("foreign rank got %s: %s", strata_result_string(rc), strata_last_error());
      return;
    }
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(600));  // after the intruders
    if (!joinFromHost(net, rank, rank, 2, &comm, rep)) return;
    std::vector<int64_t> v(1000);
    for (size_t i = 0; i < v.size(); ++i) v[i] = inputValue(rank, i);
    if (rep.ok(strata_allreduce(v.data(), v.data(), v.size(), STRATA_INT64, STRATA_SUM, comm), comm, "allreduce"))
      checkSum(v, 2, STRATA_SUM, rep, "int64 sum");
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "10"}});
  expectAllPassed(outcomes);
}

struct FaultClock {
  std::atomic<double> at{0};
};

// Runs large allreduces on 2 hosts x 2 ranks; rank `victim` SIGKILLs itself
// at its fourth call. Every surviving rank must fail within STRATA_TIMEOUT +
// 1 s of the kill, then shrink to a communicator of the three left (across
// both hosts when the victim is rank 0, the bootstrap root) whose allreduce
// is exact.
void expectKillFailsEveryRank(const TestNetwork& net, int victim) {
  constexpr double kTimeout = 4;
  FaultClock* clock = sharedPage<FaultClock>();
  auto outcomes = runRanks(4, 90, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    strata_comm_t comm;
    if (!joinFromHost(net, rank / 2, rank, nranks, &comm, rep)) return;
    std::vector<float> buf(4 << 20, 1.0f);
    for (int i = 0; i < 100000; ++i) {
      if (rank == victim && clock->at.load() == 0 && i == 3) {
        clock->at = now();
        raise(SIGKILL);
      }
      strata_result_t rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_MAX, comm);
      if (rc != STRATA_SUCCESS) {
        double after = now() - clock->at.load();
        if (clock->at.load() == 0) rep.fail("failed before the fault: %s", strata_comm_last_error(comm));
        else if (after > kTimeout + 1) rep.fail("error %.2f s after the fault: %s", after, strata_comm_last_error(comm));
        rep.value("failed", 1);
        strata_comm_t shrunk;
        if (rep.ok(strata_comm_shrink(comm, nullptr, 0, STRATA_SHRINK_ABORT, &shrunk), comm, "shrink")) {
          int64_t v = rank + 1, sum = 0;
          if (rep.ok(strata_allreduce(&v, &sum, 1, STRATA_INT64, STRATA_SUM, shrunk), shrunk, "allreduce on survivors") &&
              sum != 1 + 2 + 3 + 4 - (victim + 1))
            rep.fail("survivors' sum %lld without rank %d", static_cast<long long>(sum), victim);
          if (now() - clock->at.load() > kTimeout + 1 + 2)
            rep.fail("the shrunk communicator worked %.2f s after the kill", now() - clock->at.load());
          strata_comm_destroy(shrunk);
        }
        strata_comm_destroy(comm);
        return;
      }
    }
    rep.fail("still running 100000 allreduces after the fault");
  }, {{"STRATA_TIMEOUT", "4"}});
  for (int r = 0; r < 4; ++r) {
    if (r == victim) continue;
    EXPECT_TRUE(outcomes[r].exited) << "rank " << r << ": " << outcomes[r].exitText;
    for (const auto& f : outcomes[r].failures) ADD_FAILURE() << "rank " << r << ": " << f;
  }
  munmap(clock, 4096);
}

TEST(MultiHostFaults, KilledRootThenSurvivorsShrinkAcrossHosts) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(2);
  ASSERT_EQ(net.error(), "");
  expectKillFailsEveryRank(net, 0);
}

// The shrink's own failures across hosts (2 hosts x 2 ranks). Mid-shrink:
// rank 0, coordinating on host 0, is killed while it waits for rank 3 (host
// 1, slow to call); ranks 1-3 agree without it, rank 1 coordinating.
TEST(MultiHostFaults, CoordinatorKilledMidShrink) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(2);
  ASSERT_EQ(net.error(), "");
  std::atomic<int>* pid0 = sharedPage<std::atomic<int>>();
  auto outcomes = runRanks(4, 90, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    if (rank == 0) *pid0 = getpid();
    strata_comm_t comm;
    if (!joinFromHost(net, rank / 2, rank, nranks, &comm, rep)) return;
    std::thread killer;
    if (rank == 1)  // on rank 0's host: a pid of its namespace
      killer = std::thread([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
        kill(pid0->load(), SIGKILL);
      });
    if (rank == 3) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    strata_comm_t shrunk = nullptr;
    const bool ok = rep.ok(strata_comm_shrink(comm, nullptr, 0, STRATA_SHRINK_DEFAULT, &shrunk), comm, "shrink");
    if (killer.joinable()) killer.join();
    if (rank == 0) rep.fail("rank 0 survived its kill");
    if (!ok) return;
    int64_t v = rank, sum = 0;
    if (rep.ok(strata_allreduce(&v, &sum, 1, STRATA_INT64, STRATA_SUM, shrunk), shrunk, "allreduce") && sum != 1 + 2 + 3)
      rep.fail("survivors' sum %lld", static_cast<long long>(sum));
    strata_comm_destroy(shrunk);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "6"}});
  expectAllPassed(outcomes, 0);
  munmap(pid0, 4096);
}

// At init: rank 3 (host 1) dies before it joins. Every other rank's init
// fails within the bootstrap deadline, rank 0's naming it; the three start
// again on another port and compute right.
TEST(MultiHostFaults, RankKilledAtInitThenTheRestStartAgain) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(2);
  ASSERT_EQ(net.error(), "");
  auto outcomes = runRanks(4, 90, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    if (rank == 3) raise(SIGKILL);
    if (!net.enter(rank / 2)) {
      rep.fail("cannot enter namespace %s", net.nsName(rank / 2).c_str());
      return;
    }
    setenv("RANK", std::to_string(rank).c_str(), 1);
    setenv("WORLD_SIZE", std::to_string(nranks).c_str(), 1);
    setenv("MASTER_ADDR", net.address(0).c_str(), 1);
    setenv("MASTER_PORT", kPort, 1);
    strata_comm_t comm = nullptr;
    if (strata_comm_init_env(&comm) == STRATA_SUCCESS) {
      rep.fail("init succeeded without rank 3");
      strata_comm_destroy(comm);
      return;
    }
    if (rank == 0 && !mentions(strata_last_error(), "missing ranks: 3"))
      rep.fail("rank 0's error does not name rank 3: %s", strata_last_error());
    setenv("WORLD_SIZE", "3", 1);
    setenv("MASTER_PORT", "29501", 1);
    if (!rep.ok(strata_comm_init_env(&comm), nullptr, "init of the three")) return;
    int64_t v = rank, sum = 0;
    if (rep.ok(strata_allreduce(&v, &sum, 1, STRATA_INT64, STRATA_SUM, comm), comm, "allreduce") && sum != 0 + 1 + 2)
      rep.fail("sum %lld without rank 3", static_cast<long long>(sum));
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "4"}, {"STRATA_BOOTSTRAP_TIMEOUT", "1.5"}});
  expectAllPassed(outcomes, 3);
}

TEST(MultiHostFaults, KilledRankOnAnotherHost) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(2);
  ASSERT_EQ(net.error(), "");
  expectKillFailsEveryRank(net, 3);
}

TEST(MultiHostFaults, LinkDownMidAllreduce) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(2);
  ASSERT_EQ(net.error(), "");
  constexpr double kTimeout = 4;
  FaultClock* clock = sharedPage<FaultClock>();
  // A process, not a thread: the ranks are forked next, and a fork taken
  // while another thread holds an allocator lock (ASan's, say) leaves the
  // child deadlocked on it.
  pid_t cutter = fork();
  if (cutter == 0) {
    // Let the job get going, then take host 1's link down.
    usleep(1500000);
    clock->at = now();
    net.exec(1, "ip link set " + net.device(1) + " down");
    _exit(0);
  }
  ASSERT_GT(cutter, 0) << "fork failed";
  auto outcomes = runRanks(4, 90, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    strata_comm_t comm;
    if (!joinFromHost(net, rank / 2, rank, nranks, &comm, rep)) return;
    std::vector<float> buf(4 << 20, 1.0f);
    for (int i = 0; i < 100000; ++i) {
      strata_result_t rc = strata_allreduce(buf.data(), buf.data(), buf.size(), STRATA_FLOAT32, STRATA_MAX, comm);
      if (rc != STRATA_SUCCESS) {
        double after = now() - clock->at.load();
        if (clock->at.load() == 0) rep.fail("failed before the link went down: %s", strata_comm_last_error(comm));
        else if (after > kTimeout + 1) rep.fail("error %.2f s after the link went down", after);
        strata_comm_destroy(comm);
        return;
      }
    }
    rep.fail("100000 allreduces completed over a dead link");
  }, {{"STRATA_TIMEOUT", "4"}});
  waitpid(cutter, nullptr, 0);
  expectAllPassed(outcomes);
  munmap(clock, 4096);
}

// strata_comm_check names the pair a throttled link slows: 4 hosts of one
// rank, host 3 sending at most 50 Mbit/s (tc tbf on its device), so each
// rank 3 -> rank p direction is far slower than the median pair, and the
// opposite directions are not.
TEST(MultiHost, CheckNamesTheThrottledPairs) {
  SKIP_UNLESS_SUPPORTED();
  TestNetwork net(4);
  ASSERT_EQ(net.error(), "");
  ASSERT_EQ(net.exec(3, "tc qdisc add dev " + net.device(3) + " root tbf rate 50mbit burst 32kb latency 400ms"), 0);
  expectAllPassed(runRanks(4, 120, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    strata_comm_t comm;
    if (!joinFromHost(net, rank, rank, nranks, &comm, rep)) return;
    char report[8192];
    int findings = -1;
    if (!rep.ok(strata_comm_check(comm, report, sizeof(report), &findings), comm, "check")) return;
    for (int p = 0; p < 3; ++p) {
      const std::string slow = "rank 3 -> rank " + std::to_string(p) + " over tcp: ";
      const std::string fine = "rank " + std::to_string(p) + " -> rank 3";
      if (!mentions(report, slow.c_str())) rep.fail("report does not name '%s': %s", slow.c_str(), report);
      if (mentions(report, fine.c_str())) rep.fail("report names '%s', whose link is not throttled: %s", fine.c_str(), report);
    }
    if (findings != 3) rep.fail("%d findings, want 3: %s", findings, report);
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "30"}}));
}

TEST(MultiHost, LossyRateCappedLinkStaysExact) {
  SKIP_UNLESS_SUPPORTED();
  if (system("command -v nft >/dev/null 2>&1") != 0) GTEST_SKIP() << "needs nftables' nft; skipped";
  TestNetwork net(2);
  ASSERT_EQ(net.error(), "");
  // Host 1 drops 1% of what it sends and receives, and sends at most 400 Mbit/s.
  ASSERT_EQ(net.exec(1, "nft add table inet lossy"), 0);
  ASSERT_EQ(net.exec(1, "nft add chain inet lossy out '{ type filter hook output priority 0; }'"), 0);
  ASSERT_EQ(net.exec(1, "nft add chain inet lossy in '{ type filter hook input priority 0; }'"), 0);
  ASSERT_EQ(net.exec(1, "nft add rule inet lossy out numgen random mod 100 '<' 1 drop"), 0);
  ASSERT_EQ(net.exec(1, "nft add rule inet lossy in numgen random mod 100 '<' 1 drop"), 0);
  ASSERT_EQ(net.exec(1, "tc qdisc add dev " + net.device(1) + " root tbf rate 400mbit burst 256kb latency 100ms"), 0);
  auto outcomes = runRanks(2, 180, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    strata_comm_t comm;
    if (!joinFromHost(net, rank, rank, nranks, &comm, rep)) return;
    for (size_t count : {size_t(3), size_t(100000), size_t(1) << 20}) {
      for (int it = 0; it < 3; ++it) {
        std::vector<int64_t> v(count);
        for (size_t i = 0; i < count; ++i) v[i] = inputValue(rank, i);
        if (!rep.ok(strata_allreduce(v.data(), v.data(), count, STRATA_INT64, STRATA_SUM, comm), comm, "allreduce")) return;
        if (!checkSum(v, nranks, STRATA_SUM, rep, "int64 sum over a lossy link")) return;
      }
    }
    strata_comm_destroy(comm);
  }, {{"STRATA_TIMEOUT", "20"}});
  expectAllPassed(outcomes);
}

// Many real ranks: `perHost` processes in each of `hosts` namespaces, on
// this machine's two cores. Every result is checked against integer
// arithmetic: allreduce from one element to several slots (the tree, the
// hierarchical and the ring plans at this size), allgather, broadcast from
// the last rank, reduce_scatter, and a split per host.
//
// Small slots: every connector holds nslots x slot bytes from init (a tcp
// peer 4 MiB at the defaults), which 128 ranks with 120 tcp peers each,
// their pages touched (meson's MALLOC_PERTURB_ fills every allocation),
// would make 61 GB.
const std::vector<std::pair<std::string, std::string>> kManyRanksEnv = {
    {"STRATA_TIMEOUT", "120"}, {"STRATA_SLOT_BYTES", "8192"}, {"STRATA_NSLOTS", "4"}};

void manyRanks(int hosts, int perHost) {
  TestNetwork net(hosts);
  ASSERT_EQ(net.error(), "");
  auto outcomes = runRanks(hosts * perHost, 300, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    strata_comm_t comm;
    if (!joinFromHost(net, rank / perHost, rank, nranks, &comm, rep)) return;
    for (size_t count : {size_t(1), size_t(4099), size_t(262147)}) {
      std::vector<int64_t> v(count);
      for (size_t i = 0; i < count; ++i) v[i] = inputValue(rank, i);
      if (!rep.ok(strata_allreduce(v.data(), v.data(), count, STRATA_INT64, STRATA_SUM, comm), comm, "allreduce") ||
          !checkSum(v, nranks, STRATA_SUM, rep, "int64 allreduce"))
        return;
    }
    const size_t block = 5;
    std::vector<int32_t> mine(block), all(block * nranks);
    for (size_t i = 0; i < block; ++i) mine[i] = static_cast<int32_t>(inputValue(rank, i));
    if (!rep.ok(strata_allgather(mine.data(), all.data(), block, STRATA_INT32, comm), comm, "allgather")) return;
    for (int r = 0; r < nranks; ++r)
      for (size_t i = 0; i < block; ++i)
        if (all[r * block + i] != inputValue(r, i)) return rep.fail("allgather: rank %d's element %zu", r, i);
    std::vector<int64_t> b(70001);
    for (size_t i = 0; i < b.size(); ++i) b[i] = rank == nranks - 1 ? inputValue(rank, i) : -1;
    if (!rep.ok(strata_broadcast(b.data(), b.data(), b.size(), STRATA_INT64, nranks - 1, comm), comm, "broadcast"))
      return;
    for (size_t i = 0; i < b.size(); ++i)
      if (b[i] != inputValue(nranks - 1, i)) return rep.fail("broadcast: element %zu is %lld", i, (long long)b[i]);
    // Small, from a rank in the middle: the binomial tree across the hosts.
    char algo[16] = "";
    int channels = 0;
    if (!rep.ok(strata_comm_algorithm(comm, "broadcast", 100, STRATA_INT64, algo, sizeof(algo), &channels), comm,
                "strata_comm_algorithm") ||
        std::string(algo) != "tree")
      return rep.fail("a 100-element broadcast on %d hosts runs '%s', not the tree", hosts, algo);
    std::vector<int64_t> s(100, rank == nranks / 2 ? 0 : -1);
    for (size_t i = 0; rank == nranks / 2 && i < s.size(); ++i) s[i] = inputValue(rank, i);
    if (!rep.ok(strata_broadcast(s.data(), s.data(), s.size(), STRATA_INT64, nranks / 2, comm), comm,
                "small broadcast"))
      return;
    for (size_t i = 0; i < s.size(); ++i)
      if (s[i] != inputValue(nranks / 2, i))
        return rep.fail("small broadcast: element %zu is %lld", i, (long long)s[i]);
    std::vector<int64_t> in(block * nranks), out(block);
    for (size_t i = 0; i < in.size(); ++i) in[i] = inputValue(rank, i);
    if (!rep.ok(strata_reduce_scatter(in.data(), out.data(), block, STRATA_INT64, STRATA_SUM, comm), comm,
                "reduce_scatter"))
      return;
    for (size_t i = 0; i < block; ++i) {
      int64_t want = 0;
      for (int r = 0; r < nranks; ++r) want += inputValue(r, rank * block + i);
      if (out[i] != want) return rep.fail("reduce_scatter: element %zu is %lld, want %lld", i, (long long)out[i],
                                          (long long)want);
    }
    strata_comm_t local;
    if (!rep.ok(strata_comm_split(comm, rank / perHost, rank, &local), comm, "split by host")) return;
    int64_t one = rank, sum = 0;
    const int64_t first = rank / perHost * perHost;
    if (rep.ok(strata_allreduce(&one, &sum, 1, STRATA_INT64, STRATA_SUM, local), local, "allreduce on a host") &&
        sum != perHost * first + perHost * (perHost - 1) / 2)
      rep.fail("per-host sum %lld", static_cast<long long>(sum));
    strata_comm_destroy(local);
    strata_comm_destroy(comm);
  }, kManyRanksEnv);
  expectAllPassed(outcomes);
}

TEST(MultiHostScale, SixtyFourRanksOnEightHosts) {
  SKIP_UNLESS_SUPPORTED();
  manyRanks(8, 8);
}

TEST(MultiHostScale, HundredTwentyEightRanksOnSixteenHosts) {
  SKIP_UNLESS_SUPPORTED();
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "128 instrumented processes on two cores take minutes; the uninstrumented build runs this case";
#endif
  manyRanks(16, 8);
}

}  // namespace
}  // namespace strata::test
