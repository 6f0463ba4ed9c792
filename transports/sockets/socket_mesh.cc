#include "socket_mesh.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "clock.h"
#include "log.h"
#include "params.h"
#include "socket.h"
#include "socket_interface.h"

namespace strata::sockets {
namespace {

struct Hello {
  uint64_t magic;
  uint64_t commTag;
  int32_t rank;
  int32_t index;    // which of the perPeer connections
  int32_t perPeer;  // must agree on both ends
  int32_t pad;
};

}  // namespace

Status decodeListenRecord(const ListenRecord& record, int rank, SockAddr* out) {
  const int family = record.storage.ss_family;
  const socklen_t expected = family == AF_INET ? sizeof(sockaddr_in) : family == AF_INET6 ? sizeof(sockaddr_in6) : 0;
  if (expected == 0 || record.len != expected)
    return STRATA_ERROR(STRATA_ERR_REMOTE,
                        "rank %d sent a listening address of %u bytes with address family %d, not an IPv4 "
                        "or IPv6 address: a rank of another strata build, or corrupted out-of-band data",
                        rank, static_cast<unsigned>(record.len), family);
  SockAddr addr;
  std::memcpy(&addr.storage, &record.storage, record.len);
  addr.len = record.len;
  *out = addr;
  return Status::ok();
}

Status connectMesh(const ConnectRequest& req, uint64_t magic, int perPeer, double deadline,
                   std::vector<std::vector<int>>* fds) {
  const int me = req.oob->rank();
  const auto& hosts = *req.hosts;
  int listenFd = -1;
  ListenRecord mine{};
  if (!req.peers.empty()) {
    Interface iface;
    STRATA_CHECK(chooseInterface(params::socketIfname(), &iface));
    SockAddr addr = iface.addr;
    STRATA_CHECK(net::listenOn(&addr, &listenFd));
    std::memcpy(&mine.storage, &addr.storage, addr.len);
    mine.len = addr.len;
  }
  // Closes the listener on every path out.
  std::unique_ptr<int, void (*)(int*)> listenGuard(&listenFd, [](int* fd) {
    if (*fd >= 0) close(*fd);
  });
  std::vector<ListenRecord> all(req.oob->size());
  STRATA_CHECK(req.oob->allgather(&mine, all.data(), sizeof(ListenRecord)));

  std::vector<std::vector<int>> got(req.oob->size(), std::vector<int>(perPeer, -1));
  auto closeAll = [&] {
    for (auto& socks : got)
      for (int& fd : socks)
        if (fd >= 0) close(fd);
  };
  int toAccept = 0;
  for (int peer : req.peers) {
    if (peer < me) {
      toAccept += perPeer;
      continue;
    }
    SockAddr addr;
    Status decoded = decodeListenRecord(all[peer], peer, &addr);
    if (!decoded.isOk()) {
      closeAll();
      return decoded;
    }
    std::string name = "rank " + std::to_string(peer) + " on " + hosts[peer].hostname;
    for (int k = 0; k < perPeer; ++k) {
      int fd = -1;
      Hello hello{magic, req.commTag, me, k, perPeer, 0};
      Status s = net::connectTo(addr, deadline, name.c_str(), &fd);
      if (s.isOk()) s = net::sendAll(fd, &hello, sizeof(hello), deadline, name.c_str());
      if (!s.isOk()) {
        if (fd >= 0) close(fd);
        closeAll();
        return s;
      }
      got[peer][k] = fd;
    }
  }
  // Lower ranks connect to us; their hellos say who they are.
  while (toAccept > 0) {
    pollfd p{listenFd, POLLIN, 0};
    int left = static_cast<int>((deadline - nowSeconds()) * 1000);
    if (left <= 0 || poll(&p, 1, left) <= 0) {
      closeAll();
      return STRATA_ERROR(STRATA_ERR_TIMEOUT, "%d connections from lower ranks never arrived", toAccept);
    }
    int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Hello hello;
    Status s = net::recvAll(fd, &hello, sizeof(hello), std::min(deadline, nowSeconds() + 2), "a connecting rank");
    const bool ours = s.isOk() && hello.magic == magic && hello.commTag == req.commTag;
    if (ours && hello.perPeer != perPeer) {
      close(fd);
      closeAll();
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "rank %d opens %d connections per peer, this rank %d: set STRATA_NCHANNELS and "
                          "STRATA_NSOCKS alike everywhere", hello.rank, hello.perPeer, perPeer);
    }
    if (!ours || hello.rank < 0 || hello.rank >= me || hello.index < 0 || hello.index >= perPeer ||
        got[hello.rank][hello.index] >= 0) {
      STRATA_WARN(NET, "dropped a connection that is not a rank of this communicator");
      close(fd);
      continue;
    }
    got[hello.rank][hello.index] = fd;
    --toAccept;
  }
  *fds = std::move(got);
  return Status::ok();
}

}  // namespace strata::sockets
