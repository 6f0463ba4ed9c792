// STRATA_TCP_CONGESTION: every tcp connection of a communicator runs the
// congestion control asked for (read back from each data socket, found by
// the send buffer only those sockets are given), the default leaves the
// kernel's, and a name the kernel refuses fails every rank's init, naming
// the variable and what the kernel allows.
#include <gtest/gtest.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "multiproc.h"
#include "strata/strata.h"

namespace strata::test {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

// A send buffer no other socket of the process asks for: the kernel
// reports twice what was set (socket(7)).
constexpr int kDataSocketBuffer = 1234560;
constexpr int kChannels = 2, kSocks = 2;
const Env kTcp = {{"STRATA_TRANSPORT", "tcp"},    {"STRATA_CONNECT", "eager"},
                  {"STRATA_NCHANNELS", "2"},      {"STRATA_NSOCKS", "2"},
                  {"STRATA_TIMEOUT", "30"},       {"STRATA_SOCKET_BUFFER_BYTES", std::to_string(kDataSocketBuffer)}};

Env with(Env env, const std::string& name, const std::string& value) {
  env.emplace_back(name, value);
  return env;
}

std::string kernelDefault() {
  std::ifstream in("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  std::getline(in, name);
  return name;
}

// The congestion control of each of this process's tcp data sockets.
std::vector<std::string> dataSocketCongestion() {
  std::vector<std::string> names;
  DIR* d = opendir("/proc/self/fd");
  while (dirent* e = d ? readdir(d) : nullptr) {
    const int fd = std::atoi(e->d_name);
    int sndbuf = 0;
    socklen_t len = sizeof(sndbuf);
    if (e->d_name[0] == '.' || getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &len) != 0 ||
        sndbuf != 2 * kDataSocketBuffer)
      continue;
    char name[64] = {};
    len = sizeof(name) - 1;
    names.push_back(getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) == 0 ? name : "(unreadable)");
  }
  if (d) closedir(d);
  return names;
}

// Two ranks over tcp: an allreduce against its sum in double precision, then
// every data socket's congestion control against `want`.
void expectCongestion(const Env& env, const std::string& want) {
  expectAllPassed(runRanks(2, 60, [want](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, n, id, rank), nullptr, "init")) return;
    constexpr size_t kCount = 1 << 18;  // 2 MiB: a burst of slots on each socket
    std::vector<double> data(kCount);
    for (size_t i = 0; i < kCount; ++i) data[i] = (rank + 1) * 0.25 + double(i % 101);
    if (rep.ok(strata_allreduce(data.data(), data.data(), kCount, STRATA_FLOAT64, STRATA_SUM, comm), comm,
               "allreduce")) {
      for (size_t i = 0; i < kCount; ++i) {
        double sum = 0;
        for (int r = 0; r < n; ++r) sum += (r + 1) * 0.25 + double(i % 101);
        if (data[i] != sum) {
          rep.fail("allreduce[%zu] = %g, want %g", i, data[i], sum);
          break;
        }
      }
    }
    const std::vector<std::string> names = dataSocketCongestion();
    if (names.size() != kChannels * kSocks)
      rep.fail("%zu data sockets to the one peer, want %d channels x %d sockets", names.size(), kChannels, kSocks);
    for (const std::string& name : names)
      if (name != want) rep.fail("a data socket runs '%s', want '%s'", name.c_str(), want.c_str());
    strata_comm_destroy(comm);
  }, env));
}

// reno: built into every kernel, and allowed without CAP_NET_ADMIN.
TEST(TcpCongestion, EveryConnectionRunsTheOneAskedFor) { expectCongestion(with(kTcp, "STRATA_TCP_CONGESTION", "reno"), "reno"); }

TEST(TcpCongestion, UnsetLeavesTheKernelsDefault) {
  const std::string name = kernelDefault();
  ASSERT_FALSE(name.empty()) << "/proc/sys/net/ipv4/tcp_congestion_control is unreadable";
  expectCongestion(kTcp, name);
}

TEST(TcpCongestion, ANameTheKernelRefusesFailsEveryRanksInit) {
  expectAllPassed(runRanks(2, 60, [](int rank, int n, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm = nullptr;
    const strata_result_t rc = strata_comm_init_rank(&comm, n, id, rank);
    const std::string error = strata_last_error();
    if (rc == STRATA_SUCCESS) {
      rep.fail("init succeeded with STRATA_TCP_CONGESTION=no-such-control");
      strata_comm_destroy(comm);
      return;
    }
    if (rc != STRATA_ERR_INVALID_ARGUMENT)
      rep.fail("init returned %s, not STRATA_ERR_INVALID_ARGUMENT: %s", strata_result_string(rc), error.c_str());
    for (const char* part : {"STRATA_TCP_CONGESTION='no-such-control'", "tcp_allowed_congestion_control", "reno"})
      if (error.find(part) == std::string::npos) rep.fail("the error lacks \"%s\": %s", part, error.c_str());
  }, with(kTcp, "STRATA_TCP_CONGESTION", "no-such-control")));
}

}  // namespace
}  // namespace strata::test
