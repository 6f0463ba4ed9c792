// Pairs connected at the first call that needs them (STRATA_CONNECT=lazy,
// over tcp): a rank holds sockets only to the peers its calls used, counted
// in /proc/self/fd and against strata_comm_explain's peers; an ungrouped
// isend/irecv ring shift does not wait for the next rank's caller; a peer
// that died before its pair connected fails the call that needs it, at once;
// STRATA_CONNECT=eager connects every pair at init, and ranks that disagree
// are refused by name.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "multiproc.h"
#include "strata/strata.h"

namespace strata::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;
const Env kTcp = {{"STRATA_TRANSPORT", "tcp"}, {"STRATA_NCHANNELS", "1"}, {"STRATA_NSOCKS", "1"},
                  {"STRATA_TIMEOUT", "30"}};

Env with(Env env, const std::string& name, const std::string& value) {
  env.emplace_back(name, value);
  return env;
}

// Sockets this process holds: every tcp connection, the bootstrap's and
// the control plane's among them.
int openSockets() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = d ? readdir(d) : nullptr) {
    char target[64] = {};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (readlink(link.c_str(), target, sizeof(target) - 1) > 0 && std::strncmp(target, "socket:", 7) == 0) ++n;
  }
  if (d) closedir(d);
  return n;
}

// Waits, up to 5 s, for this process to hold `want` sockets: a pair's
// request socket closes a moment after the call that needed the pair
// returns (on the rank that served it, from its own thread).
int settledSockets(int want) {
  int n = openSockets();
  for (int i = 0; i < 500 && n != want; ++i) {
    usleep(10000);
    n = openSockets();
  }
  return n;
}

// A barrier outside strata, on memory the test shares with its forked
// ranks: no rank may ask another for a pair while that one counts its
// sockets at init.
struct SharedBarrier {
  std::atomic<int> arrived{0};

  static SharedBarrier* make() {
    void* at = mmap(nullptr, sizeof(SharedBarrier), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    return at == MAP_FAILED ? nullptr : new (at) SharedBarrier();
  }
  bool wait(int n) {
    arrived.fetch_add(1);
    for (int i = 0; i < 3000 && arrived.load() < n; ++i) usleep(10000);
    return arrived.load() >= n;
  }
};

std::string explain(strata_comm_t comm, const char* collective, size_t count, strata_datatype_t datatype) {
  std::vector<char> record(1 << 16);
  if (strata_comm_explain(comm, collective, count, datatype, record.data(), record.size(), nullptr) != STRATA_SUCCESS)
    return "";
  return record.data();
}

int connectedPeers(strata_comm_t comm) {
  const std::string json = explain(comm, "allreduce", 1, STRATA_FLOAT32);
  const size_t at = json.find("\"connected_peers\":");
  return at == std::string::npos ? -1 : std::atoi(json.c_str() + at + 18);
}

// explain's "peers" list for the call.
std::set<int> planPeers(strata_comm_t comm, const char* collective, size_t count, strata_datatype_t datatype) {
  const std::string json = explain(comm, collective, count, datatype);
  std::set<int> peers;
  const size_t at = json.find("\"peers\":[");
  if (at == std::string::npos) return {-1};
  for (const char* p = json.c_str() + at + 9; *p && *p != ']';) {
    char* end = nullptr;
    peers.insert(static_cast<int>(std::strtol(p, &end, 10)));
    p = *end == ',' ? end + 1 : end;
  }
  return peers;
}

TEST(LazyConnect, RanksHoldSocketsOnlyToThePeersTheirCallsUsed) {
  constexpr int kRanks = 6;
  SharedBarrier* counted = SharedBarrier::make();
  ASSERT_NE(counted, nullptr);
  expectAllPassed(runRanks(kRanks, 90, [counted](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    const int atInit = openSockets();
    if (connectedPeers(comm) != 0) rep.fail("%d peers connected after init, before any call", connectedPeers(comm));
    if (!counted->wait(n)) return rep.fail("not every rank counted its sockets within 30 s");

    // A ring: two neighbours, each a socket (one channel, one socket per peer).
    constexpr size_t kCount = 1 << 16;
    const std::set<int> ringPeers = planPeers(comm, "allreduce", kCount, STRATA_FLOAT64);
    std::vector<double> data(kCount);
    for (size_t i = 0; i < kCount; ++i) data[i] = (rank + 1) * 0.5 + double(i % 97);
    if (!rep.ok(strata_allreduce(data.data(), data.data(), kCount, STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce"))
      return;
    for (size_t i = 0; i < kCount; ++i) {
      double want = 0;
      for (int r = 0; r < n; ++r) want += (r + 1) * 0.5 + double(i % 97);
      if (data[i] != want) {
        rep.fail("allreduce[%zu] = %g, want %g", i, data[i], want);
        break;
      }
    }
    if (ringPeers.size() != 2 || ringPeers.count(rank))
      rep.fail("the ring's plan names %zu peers, want its 2 neighbours", ringPeers.size());
    if (connectedPeers(comm) != int(ringPeers.size()))
      rep.fail("%d peers connected after a ring allreduce, which uses %zu", connectedPeers(comm), ringPeers.size());
    const int afterRing = settledSockets(atInit + int(ringPeers.size()));
    if (afterRing - atInit != int(ringPeers.size()))
      rep.fail("%d sockets more than at init after a ring allreduce over %zu peers", afterRing - atInit,
               ringPeers.size());
    // A barrier over the same pairs (another ring allreduce): nobody starts
    // the alltoall, which connects everyone, while another rank still counts.
    float token = 0;
    if (!rep.ok(strata_allreduce(&token, &token, 1, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce (barrier)"))
      return;

    // All to all: every peer, each once.
    constexpr size_t kBlock = 1000;
    std::vector<int32_t> send(kBlock * n), recv(kBlock * n, -1);
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < kBlock; ++i) send[p * kBlock + i] = rank * 1000000 + p * 1000 + int32_t(i);
    if (!rep.ok(strata_alltoall(send.data(), recv.data(), kBlock, STRATA_INT32, comm), comm, "alltoall")) return;
    for (int p = 0; p < n; ++p)
      for (size_t i = 0; i < kBlock; ++i)
        if (recv[p * kBlock + i] != p * 1000000 + rank * 1000 + int32_t(i)) {
          rep.fail("alltoall block from rank %d [%zu] = %d", p, i, recv[p * kBlock + i]);
          p = n;
          break;
        }
    if (connectedPeers(comm) != n - 1) rep.fail("%d peers connected after an alltoall, want %d", connectedPeers(comm), n - 1);
    const int afterAlltoall = settledSockets(atInit + n - 1);
    if (afterAlltoall - atInit != n - 1)
      rep.fail("%d sockets more than at init after an alltoall, want %d", afterAlltoall - atInit, n - 1);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }, with(kTcp, "STRATA_ALGO", "ring")));
  munmap(counted, sizeof(SharedBarrier));
}

TEST(LazyConnect, UngroupedRingShiftDoesNotWaitForTheNextRanksCaller) {
  // Every rank sends to the next before it receives from the one before:
  // each isend needs a pair whose other rank is inside its own isend.
  expectAllPassed(runRanks(4, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    constexpr size_t kCount = 50000;
    std::vector<int32_t> out(kCount), in(kCount, -1);
    for (size_t i = 0; i < kCount; ++i) out[i] = rank * 100000 + int32_t(i);
    strata_request_t sent = nullptr, received = nullptr;
    if (!rep.ok(strata_isend(out.data(), kCount, STRATA_INT32, (rank + 1) % n, comm, &sent), comm, "isend")) return;
    if (!rep.ok(strata_irecv(in.data(), kCount, STRATA_INT32, (rank + n - 1) % n, comm, &received), comm, "irecv"))
      return;
    if (!rep.ok(strata_wait(sent), comm, "wait(isend)") || !rep.ok(strata_wait(received), comm, "wait(irecv)")) return;
    const int from = (rank + n - 1) % n;
    for (size_t i = 0; i < kCount; ++i)
      if (in[i] != from * 100000 + int32_t(i)) {
        rep.fail("received[%zu] = %d from rank %d", i, in[i], from);
        break;
      }
    if (connectedPeers(comm) != 2) rep.fail("%d peers connected, want the 2 neighbours", connectedPeers(comm));
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }, kTcp));
}

TEST(LazyConnect, APeerDeadBeforeItsPairConnectedFailsTheCallAtOnce) {
  // Rank 2 dies right after init; the others' first allreduce (a ring
  // through it) must fail well before STRATA_TIMEOUT (30 s), on both.
  auto outcomes = runRanks(3, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    if (rank == 2) raise(SIGKILL);
    usleep(200000);  // its process gone, not just its caller
    float x = 1;
    const auto start = std::chrono::steady_clock::now();
    const strata_result_t rc = strata_allreduce(&x, &x, 1, STRATA_FLOAT32, STRATA_SUM, comm);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (rc == STRATA_SUCCESS) rep.fail("allreduce through a dead rank succeeded");
    if (took > 10) rep.fail("allreduce through a dead rank failed only after %.1f s", took);
    if (std::strlen(strata_comm_last_error(comm)) == 0) rep.fail("no message");
    strata_comm_abort(comm);
  }, with(kTcp, "STRATA_ALGO", "ring"));
  expectAllPassed(outcomes, /*killed=*/2);
}

TEST(LazyConnect, EagerConnectsEveryPairAtInit) {
  expectAllPassed(runRanks(4, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    const int before = openSockets();
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    if (connectedPeers(comm) != n - 1) rep.fail("%d peers connected at init, want %d", connectedPeers(comm), n - 1);
    // Every tcp pair's socket, the bootstrap's and the control plane's.
    if (openSockets() - before < n - 1) rep.fail("only %d sockets opened by init", openSockets() - before);
    double x = rank + 1;
    if (!rep.ok(strata_allreduce(&x, &x, 1, STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce")) return;
    if (x != n * (n + 1) / 2.0) rep.fail("allreduce = %g", x);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }, with(kTcp, "STRATA_CONNECT", "eager")));
}

TEST(LazyConnect, RanksThatDisagreeAreRefusedByName) {
  expectAllPassed(runRanks(3, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    if (rank == 1) setenv("STRATA_CONNECT", "eager", 1);
    strata_comm_t comm = nullptr;
    const strata_result_t rc = strata_comm_init_rank(&comm, n, id, rank);
    if (rc != STRATA_ERR_INVALID_ARGUMENT) rep.fail("init returned %d, want STRATA_ERR_INVALID_ARGUMENT", int(rc));
    if (!std::strstr(strata_last_error(), "STRATA_CONNECT"))
      rep.fail("the error does not name STRATA_CONNECT: %s", strata_last_error());
  }, kTcp));
}

}  // namespace
}  // namespace strata::test
