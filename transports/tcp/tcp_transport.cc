#include "tcp_transport.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include "clock.h"
#include "log.h"
#include "params.h"
#include "socket.h"
#include "tcp_connector.h"
#include "tcp_interface.h"

namespace strata::tcp {
namespace {

constexpr uint64_t kHelloMagic = 0x4f4c4c4548504354ull;  // "TCPHELLO"

struct Hello {
  uint64_t magic;
  uint64_t commTag;
  int32_t rank;
  int32_t channel;
  int32_t socket;  // which of the STRATA_NSOCKS stripes
  int32_t nsocks;  // must agree on both ends
};

// Where a rank listens, as exchanged over the out-of-band network.
struct ListenRecord {
  sockaddr_storage storage;
  socklen_t len;  // 0: this rank has no tcp peers and does not listen
};

// Non-blocking, no Nagle delay, buffers sized for a full FIFO of slots, and a
// kernel-level bound on unacknowledged data so a dead link errors out.
Status configure(int fd, double timeout) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  int64_t buffer = params::socketBufferBytes();
  if (buffer > 0) {
    int b = static_cast<int>(std::min<int64_t>(buffer, 1 << 30));
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof(b));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof(b));
  }
  unsigned int userTimeoutMs = static_cast<unsigned int>(timeout * 1000);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeoutMs, sizeof(userTimeoutMs));
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    int err = errno;
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "fcntl(O_NONBLOCK) failed: %s", errnoText(err).c_str());
  }
  return Status::ok();
}

}  // namespace

Status TcpTransport::connect(const ConnectRequest& req, Connections& out) {
  const int me = req.oob->rank();
  const auto& hosts = *req.hosts;
  const double deadline = nowSeconds() + params::timeout();
  const int nsocks = static_cast<int>(params::nsocks());
  if (nsocks < 1 || nsocks > 64)
    return STRATA_INVALID_ARG("STRATA_NSOCKS=%d must be in 1..64", nsocks);

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

  // fds[channel][peer][socket]
  std::vector<std::vector<std::vector<int>>> fds(
      req.nchannels, std::vector<std::vector<int>>(req.oob->size(), std::vector<int>(nsocks, -1)));
  auto closeAll = [&] {
    for (auto& row : fds)
      for (auto& socks : row)
        for (int& fd : socks)
          if (fd >= 0) close(fd);
  };
  int toAccept = 0;
  for (int peer : req.peers) {
    if (peer < me) {
      toAccept += req.nchannels * nsocks;
      continue;
    }
    SockAddr addr;
    std::memcpy(&addr.storage, &all[peer].storage, all[peer].len);
    addr.len = all[peer].len;
    std::string name = "rank " + std::to_string(peer) + " on " + hosts[peer].hostname;
    for (int ch = 0; ch < req.nchannels; ++ch) {
      for (int sock = 0; sock < nsocks; ++sock) {
        int fd = -1;
        Hello hello{kHelloMagic, req.commTag, me, ch, sock, nsocks};
        Status s = net::connectTo(addr, deadline, name.c_str(), &fd);
        if (s.isOk()) s = net::sendAll(fd, &hello, sizeof(hello), deadline, name.c_str());
        if (!s.isOk()) {
          if (fd >= 0) close(fd);
          closeAll();
          return s;
        }
        fds[ch][peer][sock] = fd;
      }
    }
  }
  // Lower ranks connect to us; their hellos say who they are.
  while (toAccept > 0) {
    pollfd p{listenFd, POLLIN, 0};
    int left = static_cast<int>((deadline - nowSeconds()) * 1000);
    if (left <= 0 || poll(&p, 1, left) <= 0) {
      closeAll();
      return STRATA_ERROR(STRATA_ERR_TIMEOUT, "%d tcp connections from lower ranks never arrived", toAccept);
    }
    int fd = accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Hello hello;
    Status s = net::recvAll(fd, &hello, sizeof(hello), std::min(deadline, nowSeconds() + 2), "a connecting rank");
    bool valid = s.isOk() && hello.magic == kHelloMagic && hello.commTag == req.commTag && hello.rank >= 0 &&
                 hello.rank < me && hello.channel >= 0 && hello.channel < req.nchannels && hello.socket >= 0 &&
                 hello.socket < nsocks && fds[hello.channel][hello.rank][hello.socket] < 0;
    if (s.isOk() && hello.magic == kHelloMagic && hello.commTag == req.commTag && hello.nsocks != nsocks) {
      close(fd);
      closeAll();
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "rank %d uses STRATA_NSOCKS=%d, this rank %d: set it alike everywhere",
                          hello.rank, hello.nsocks, nsocks);
    }
    if (!valid) {
      STRATA_WARN(NET, "dropped a tcp connection that is not a rank of this communicator");
      close(fd);
      continue;
    }
    fds[hello.channel][hello.rank][hello.socket] = fd;
    --toAccept;
  }

  for (int peer : req.peers) {
    for (int ch = 0; ch < req.nchannels; ++ch) {
      std::vector<std::shared_ptr<TcpLink>> links;
      for (int& fd : fds[ch][peer]) {
        Status s = configure(fd, params::timeout());
        if (!s.isOk()) {
          closeAll();
          return s;
        }
        links.push_back(std::make_shared<TcpLink>(fd, peer, hosts[peer].hostname));
        fd = -1;  // owned by the link from here on
      }
      out.send[ch][peer] = std::make_unique<TcpSendConnector>(links, req.slotBytes, req.nslots);
      out.recv[ch][peer] = std::make_unique<TcpRecvConnector>(links, req.slotBytes, req.nslots);
    }
    STRATA_INFO(NET, "rank %d <-> rank %d over tcp: %d channel(s) x %d socket(s)", me, peer, req.nchannels, nsocks);
  }
  return Status::ok();
}

}  // namespace strata::tcp
