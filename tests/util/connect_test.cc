// net::connectTo against real sockets: it keeps its deadline where the kernel
// would hold a blocking connect() for minutes, and hands back a blocking socket.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "clock.h"
#include "socket.h"

namespace strata::net {
namespace {

// A 1 s deadline must fail within this (generous: the machine is shared).
constexpr double kDeadlineSeconds = 1.0;
constexpr double kBoundSeconds = 10.0;

SockAddr loopback(int port) {
  SockAddr addr;
  EXPECT_TRUE(resolve("127.0.0.1", port, &addr).isOk());
  return addr;
}

// A listener that never accepts, with its accept queue filled by clients
// that did connect: Linux drops further SYNs, so a new connect() sees no
// answer at all, as towards a blackholed address. (A non-routable address
// would do only where nothing on the way answers for it: some sandboxes'
// proxies accept every outgoing connection.)
struct FullListener {
  int fd = -1;
  SockAddr addr;
  std::vector<int> clients;

  FullListener() {
    addr = loopback(0);
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = addr.len;
    if (bind(fd, addr.get(), addr.len) != 0 || listen(fd, 0) != 0) return;
    getsockname(fd, reinterpret_cast<sockaddr*>(&addr.storage), &len);
    addr.len = len;
    // Backlog 0 holds one established connection; a few more make sure.
    for (int i = 0; i < 4; ++i) {
      int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      connect(c, addr.get(), addr.len);
      clients.push_back(c);
    }
    usleep(100000);  // let the handshakes that can complete do so
  }
  ~FullListener() {
    for (int c : clients) close(c);
    if (fd >= 0) close(fd);
  }
};

void expectTimesOut(const SockAddr& addr) {
  const double start = nowSeconds();
  int fd = -1;
  Status st = connectTo(addr, start + kDeadlineSeconds, "the test's peer", &fd);
  const double took = nowSeconds() - start;
  EXPECT_EQ(st.code(), STRATA_ERR_TIMEOUT) << st.message();
  EXPECT_NE(st.message().find("the test's peer"), std::string::npos) << st.message();
  EXPECT_GE(took, kDeadlineSeconds * 0.9);
  EXPECT_LT(took, kBoundSeconds) << "connectTo ignored its deadline";
  if (fd >= 0) close(fd);
}

TEST(ConnectTo, KeepsItsDeadlineWhenTheListenersBacklogIsFull) {
  FullListener full;
  ASSERT_GE(full.fd, 0);
  expectTimesOut(full.addr);
}

TEST(ConnectTo, RetriesUntilTheListenerIsUpAndReturnsABlockingSocket) {
  SockAddr addr = loopback(0);
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len = addr.len;
  ASSERT_EQ(bind(listener, addr.get(), addr.len), 0);
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr.storage), &len);
  addr.len = len;
  // Bound but not listening yet: connections are refused until listen().
  std::thread late([listener] {
    usleep(200000);
    listen(listener, 16);
  });
  int fd = -1;
  Status st = connectTo(addr, nowSeconds() + 5, "the test's peer", &fd);
  late.join();
  ASSERT_TRUE(st.isOk()) << st.message();
  EXPECT_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0) << "callers expect a blocking socket";
  close(fd);
  close(listener);
}

}  // namespace
}  // namespace strata::net
