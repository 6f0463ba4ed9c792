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

// A loopback port nobody listens on right now.
inline int freePort() {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  close(s);
  return ntohs(a.sin_port);
}

// A whole file's text ("" if it cannot be read).
inline std::string readFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// strata never returns a null message.
inline bool mentions(const char* message, const char* word) { return std::strstr(message, word) != nullptr; }

}  // namespace strata::test
