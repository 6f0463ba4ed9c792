// Small tools the multi-process suites share: a clock, memory the test
// process shares with the ranks it forks, a free port, reading a file, and
// message matching.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <new>
#include <random>
#include <string>

namespace strata::test {

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A page shared by the test process and every rank it forks.
template <typename T>
T* sharedPage() {
  static_assert(sizeof(T) <= 4096, "one page");
  void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return new (p) T();
}

// A port nobody has bound right now, from below the kernel's ephemeral
// range (ip_local_port_range). A port the kernel picks (bind to port 0)
// comes from that range, and any process alongside may be handed the same
// one for an outgoing connection before rank 0 listens on it: intruders'
// rank 0 met "Address already in use" so in a CI run (2026-11-29). Below the
// range only an explicit bind takes a port, and the pick is random. The
// Python tests take theirs from its twin, tests/common/ports.py.
inline int freePort() {
  int ephemeral = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral;
  const int first = ephemeral > 11024 ? 10000 : 1024;
  static std::mt19937 pick(std::random_device{}());
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = first + static_cast<int>(pick() % static_cast<unsigned>(ephemeral - first));
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    const bool taken = bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0;
    close(s);
    if (!taken) return port;
  }
  return -1;  // every pick taken: the init that uses it fails, naming MASTER_PORT
}

// A whole file's text ("" if it cannot be read).
inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// strata never returns a null message.
inline bool mentions(const char* message, const char* word) { return std::strstr(message, word) != nullptr; }

}  // namespace strata::test
