// Outsiders against a job's bootstrap, in real processes over real sockets:
// a job launched from environment variables with and without a secret, a
// forged hello for a rank that has not joined yet, and a flood of idle
// connections while the ranks join. In every case the job itself completes
// and computes the right sums.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "handshake_wire.h"
#include "multiproc.h"
#include "process_tools.h"

namespace strata::test {
namespace {

constexpr const char* kSecret = "0123456789abcdef0123456789abcdef";

void joinEnv(int rank, int nranks, int port) {
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(nranks).c_str(), 1);
}

// Inits from the environment, sums rank+1 over the job and checks it.
void initAndSum(int rank, int nranks, Reporter& rep) {
  strata_comm_t comm;
  if (!rep.ok(strata_comm_init_env(&comm), nullptr, "strata_comm_init_env")) return;
  int x = rank + 1;
  if (rep.ok(strata_allreduce(&x, &x, 1, STRATA_INT32, STRATA_SUM, comm), comm, "allreduce") &&
      x != nranks * (nranks + 1) / 2)
    rep.fail("sum %d, expected %d", x, nranks * (nranks + 1) / 2);
  strata_comm_destroy(comm);
}

// A connection to 127.0.0.1:port, retried until the listener is up.
int connectLocal(int port, double seconds) {
  const double until = now() + seconds;
  while (now() < until) {
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) return s;
    close(s);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

// This host's first IPv4 address other than loopback, or "" if none.
std::string otherLocalAddress() {
  ifaddrs* list = nullptr;
  std::string found;
  if (getifaddrs(&list) != 0) return found;
  for (ifaddrs* i = list; i && found.empty(); i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !(i->ifa_flags & IFF_LOOPBACK) && (i->ifa_flags & IFF_UP)) {
      char text[INET_ADDRSTRLEN];
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof(text));
      found = text;
    }
  freeifaddrs(list);
  return found;
}

bool reachable(const std::string& address, int port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  bool ok = connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  close(s);
  return ok;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(Intruders, AnEnvJobWithoutASecretSaysSoAndListensOnlyOnMasterAddr) {
  const int port = freePort();
  const std::string other = otherLocalAddress();
  char dir[] = "/tmp/strata-intruders-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string logs = std::string(dir) + "/log.%p";
  auto outcomes = runRanks(2, 60, [&](int rank, int nranks, const strata_unique_id_t&, Reporter& rep) {
    joinEnv(rank, nranks, port);
    if (rank == 1) {
      // Rank 0 listens now: on MASTER_ADDR (127.0.0.1), and on no other address.
      int probe = connectLocal(port, 10);
      if (probe < 0) return rep.fail("rank 0 never listened on 127.0.0.1:%d", port);
      close(probe);
      if (!other.empty() && reachable(other, port))
        rep.fail("rank 0 of a job without a secret also listens on %s", other.c_str());
    }
    initAndSum(rank, nranks, rep);
    std::string log = readFile(std::string(dir) + "/log." + std::to_string(getpid()));
    if (!mentions(log.c_str(), "no STRATA_SECRET or STRATA_SECRET_FILE") || !mentions(log.c_str(), "openssl rand"))
      rep.fail("no warning about the missing secret in the log: '%s'", log.c_str());
  }, {{"STRATA_DEBUG_FILE", logs}, {"STRATA_TIMEOUT", "20"}});
  expectAllPassed(outcomes);
  if (other.empty()) std::printf("this host has no address besides loopback: rank 0's binding was not probed from one\n");
  (void)!system(("rm -rf " + std::string(dir)).c_str());
}

TEST(Intruders, AnEnvJobWithASecretRefusesOutsiders) {
  // Ranks 0 and 1 hold the secret; processes 2 and 3 know everything the
  // launcher published (address, port, world size, a rank) but not the
  // secret: one has none, one a wrong one. Rank 1 joins after them.
  const int port = freePort();
  auto outcomes = runRanks(4, 60, [&](int rank, int, const strata_unique_id_t&, Reporter& rep) {
    if (rank >= 2) {
      joinEnv(1, 2, port);
      if (rank == 2) unsetenv("STRATA_SECRET");
      else setenv("STRATA_SECRET", "not the job's secret, but long enough", 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      strata_comm_t comm;
      strata_result_t rc = strata_comm_init_env(&comm);
      if (rc != STRATA_ERR_INVALID_USAGE || !mentions(strata_last_error(), "does not hold this job's secret"))
        rep.fail("an outsider got %s: %s", strata_result_string(rc), strata_last_error());
      return;
    }
    joinEnv(rank, 2, port);
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(600));
    initAndSum(rank, 2, rep);
  }, {{"STRATA_SECRET", kSecret}, {"STRATA_TIMEOUT", "20"}});
  expectAllPassed(outcomes);
}

TEST(Intruders, ASecretFileServesLikeTheVariableAndAShortSecretIsRefused) {
  // Rank 0 has the secret in STRATA_SECRET, rank 1 in a file (with the
  // newline editors add): the same secret, so they form a job. Process 2
  // offers a secret too short to be one.
  char path[] = "/tmp/strata-secret-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string line = std::string(kSecret) + "\n";
  ASSERT_EQ(write(fd, line.data(), line.size()), static_cast<ssize_t>(line.size()));
  close(fd);
  const int port = freePort();
  auto outcomes = runRanks(3, 60, [&](int rank, int, const strata_unique_id_t&, Reporter& rep) {
    if (rank == 2) {
      joinEnv(1, 2, port);
      setenv("STRATA_SECRET", "too short", 1);
      strata_comm_t comm;
      strata_result_t rc = strata_comm_init_env(&comm);
      if (rc != STRATA_ERR_INVALID_ARGUMENT || !mentions(strata_last_error(), "STRATA_SECRET"))
        rep.fail("a 9-character secret got %s: %s", strata_result_string(rc), strata_last_error());
      return;
    }
    joinEnv(rank, 2, port);
    if (rank == 0) setenv("STRATA_SECRET", kSecret, 1);
    else setenv("STRATA_SECRET_FILE", path, 1);
    initAndSum(rank, 2, rep);
  }, {{"STRATA_TIMEOUT", "20"}});
  expectAllPassed(outcomes);
  unlink(path);
}

TEST(Intruders, AForgedHelloForALateRankIsDropped) {
  // Before rank 1 joins, an outsider connects to rank 0 as rank 1: first
  // with the hello of earlier strata versions (which carried the secret it
  // does not know), then with a well-formed handshake hello followed by a
  // proof it cannot compute. Rank 1 then joins as itself.
  const int port = freePort();
  auto outcomes = runRanks(3, 60, [&](int rank, int, const strata_unique_id_t&, Reporter& rep) {
    if (rank == 2) {
      int old = connectLocal(port, 10);
      if (old < 0) return rep.fail("rank 0 never listened");
      std::vector<char> oldHello(600, 0);
      (void)!send(old, oldHello.data(), oldHello.size(), MSG_NOSIGNAL);
      int fd = connectLocal(port, 10);
      security::ClientHello hello;
      std::memset(&hello, 0, sizeof(hello));
      hello.magic = security::kHandshakeMagic;
      hello.version = security::kHandshakeVersion;
      hello.claim = security::Claim{0x31544f4f42525453ull /* the bootstrap's, "STRBOOT1" */, 0, 1, 0, 0, 2, 0, 0};
      security::ServerProof answer;
      if (send(fd, &hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello) ||
          recv(fd, &answer, sizeof(answer), MSG_WAITALL) != sizeof(answer))
        return rep.fail("rank 0 did not answer a well-formed hello with its own proof");
      security::ClientProof forged;
      forged.mac.fill(0x5a);
      (void)!send(fd, &forged, sizeof(forged), MSG_NOSIGNAL);
      char byte;
      if (recv(fd, &byte, 1, 0) != 0) rep.fail("rank 0 kept a connection whose proof was forged");
      close(fd);
      close(old);
      return;
    }
    joinEnv(rank, 2, port);
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(800));
    initAndSum(rank, 2, rep);
  }, {{"STRATA_SECRET", kSecret}, {"STRATA_TIMEOUT", "20"}});
  expectAllPassed(outcomes);
}

TEST(Intruders, AThousandIdleConnectionsDoNotStopInit) {
  // Process 4 opens 1,000 connections to rank 0's bootstrap port and says
  // nothing on any of them; ranks 1-3 join once they are open.
  struct Shared {
    std::atomic<int> opened{0};
    std::atomic<double> initSeconds[4];
  };
  Shared* shared = sharedPage<Shared>();
  const int port = freePort();
  auto outcomes = runRanks(5, 120, [&](int rank, int, const strata_unique_id_t&, Reporter& rep) {
    if (rank == 4) {
      std::vector<int> idle;
      for (int i = 0; i < 1000; ++i) {
        int fd = connectLocal(port, 10);
        if (fd < 0) return rep.fail("connection %d to rank 0 failed", i);
        idle.push_back(fd);
      }
      shared->opened = 1;
      std::this_thread::sleep_for(std::chrono::seconds(3));
      for (int fd : idle) close(fd);
      return;
    }
    joinEnv(rank, 4, port);
    if (rank > 0)
      while (!shared->opened) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const double start = now();
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_env(&comm), nullptr, "strata_comm_init_env")) return;
    shared->initSeconds[rank] = now() - start;
    float v = 1.0f + rank;
    if (rep.ok(strata_allreduce(&v, &v, 1, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce") && v != 10.0f)
      rep.fail("sum %g", v);
    strata_comm_destroy(comm);
  }, {{"STRATA_SECRET", kSecret}, {"STRATA_TIMEOUT", "30"}});
  expectAllPassed(outcomes);
  std::printf("init under a flood of 1,000 idle connections: rank 1 %.2f s, rank 3 %.2f s\n",
              shared->initSeconds[1].load(), shared->initSeconds[3].load());
}

}  // namespace
}  // namespace strata::test
