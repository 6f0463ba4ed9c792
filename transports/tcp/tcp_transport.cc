#include "tcp_transport.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>


#include "clock.h"
#include "log.h"
#include "params.h"
#include "socket_mesh.h"
#include "tcp_connector.h"
#include "tls_session.h"
#include "transport_factories.h"

namespace strata::tcp {
namespace {

constexpr uint64_t kHelloMagic = 0x4f4c4c4548504354ull;  // "TCPHELLO"

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

// STRATA_TLS: a TLS session on every connection, the end that connected
// (the lower rank: socket_mesh.h) as the client. All handshakes run at once,
// so the order in which either end takes its peers does not matter.
Status startTls(const ConnectRequest& req, const std::vector<std::vector<int>>& fds, double deadline,
                std::vector<std::vector<std::unique_ptr<security::TlsSession>>>* sessions) {
  const int me = req.oob->rank();
  sessions->clear();
  sessions->resize(fds.size());
  std::vector<security::TlsSession*> all;
  for (int peer : req.peers) {
    const std::string name = "rank " + std::to_string(peer) + " on " + (*req.hosts)[peer].hostname;
    for (int fd : fds[peer]) {
      std::unique_ptr<security::TlsSession> s;
      STRATA_CHECK(security::TlsSession::create(
          fd, me < peer ? security::TlsRole::kClient : security::TlsRole::kServer, req.secret, name, &s));
      all.push_back(s.get());
      (*sessions)[peer].push_back(std::move(s));
    }
  }
  return security::TlsSession::handshakeAll(all, deadline);
}

}  // namespace

Status TcpTransport::connect(const ConnectRequest& req, Connections& out) {
  const int me = req.oob->rank();
  const auto& hosts = *req.hosts;
  const double deadline = nowSeconds() + params::timeout();
  const int nsocks = static_cast<int>(params::nsocks());
  if (nsocks < 1 || nsocks > 64)
    return STRATA_INVALID_ARG("STRATA_NSOCKS=%d must be in 1..64", nsocks);

  // fds[peer][channel * nsocks + socket]
  std::vector<std::vector<int>> fds;
  STRATA_CHECK(sockets::connectMesh(req, kHelloMagic, req.nchannels * nsocks, deadline, &fds));
  // Sessions go before their sockets close.
  std::vector<std::vector<std::unique_ptr<security::TlsSession>>> tls;
  auto closeAll = [&] {
    tls.clear();
    for (auto& socks : fds)
      for (int& fd : socks)
        if (fd >= 0) close(fd);
  };
  if (params::tls()) {
    Status s = startTls(req, fds, deadline, &tls);
    if (!s.isOk()) {
      closeAll();
      return s;
    }
  }

  for (int peer : req.peers) {
    for (int ch = 0; ch < req.nchannels; ++ch) {
      std::vector<std::shared_ptr<sockets::SocketLink>> links;
      for (int sock = 0; sock < nsocks; ++sock) {
        int& fd = fds[peer][ch * nsocks + sock];
        Status s = configure(fd, params::timeout());
        if (!s.isOk()) {
          closeAll();
          return s;
        }
        links.push_back(std::make_shared<sockets::SocketLink>(fd, peer, hosts[peer].hostname));
        fd = -1;  // owned by the link from here on
        if (!tls.empty()) links.back()->setTls(std::move(tls[peer][ch * nsocks + sock]));
      }
      out.send[ch][peer] = std::make_unique<TcpSendConnector>(links, req.slotBytes, req.nslots);
      out.recv[ch][peer] = std::make_unique<TcpRecvConnector>(links, req.slotBytes, req.nslots);
    }
    STRATA_INFO(NET, "rank %d <-> rank %d over tcp%s: %d channel(s) x %d socket(s)", me, peer,
                tls.empty() ? "" : " with TLS", req.nchannels, nsocks);
  }
  return Status::ok();
}

}  // namespace strata::tcp

namespace strata {

std::unique_ptr<Transport> makeTcpTransport() { return std::make_unique<tcp::TcpTransport>(); }

}  // namespace strata
