#include "tcp_transport.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "clock.h"
#include "log.h"
#include "params.h"
#include "socket_mesh.h"
#include "tcp_congestion.h"
#include "tcp_connector.h"
#include "tls_session.h"
#include "transport_factories.h"

namespace strata::tcp {
namespace {

constexpr uint64_t kHelloMagic = 0x4f4c4c4548504354ull;  // "TCPHELLO"

// Non-blocking, no Nagle delay, buffers sized for a full FIFO of slots, the
// congestion control asked for, and a kernel-level bound on unacknowledged
// data so a dead link errors out.
Status configure(int fd, double timeout) {
  if (!params::tcpCongestion().empty()) STRATA_CHECK(net::setCongestion(fd, params::tcpCongestion()));
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

// Descriptors a job's connections are not the only user of: progress
// threads, the control plane, the bootstrap, the caller's own files.
constexpr uint64_t kSpareDescriptors = 32;

uint64_t openDescriptors() {
  uint64_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n;
}

// STRATA_NSOCKS: sockets per (pair, channel).
uint64_t socketsPerLink() { return static_cast<uint64_t>(std::max<int64_t>(1, params::nsocks())); }

}  // namespace

uint64_t TcpTransport::mostHeld(const ConnectRequest& req, size_t npeers) const {
  return npeers * req.nchannels *
         (2 * uint64_t(req.nslots) * req.slotBytes + socketsPerLink() * TcpRecvConnector::kStagingBytes);
}

std::string TcpTransport::shortOf(const ConnectRequest& req, size_t npeers) const {
  rlimit limit;
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return "";
  const uint64_t nsocks = socketsPerLink();
  const uint64_t need = npeers * req.nchannels * nsocks + kSpareDescriptors;
  const uint64_t open = openDescriptors();
  const uint64_t left = limit.rlim_cur > open ? limit.rlim_cur - open : 0;
  if (left >= need) return "";
  char text[384];
  std::snprintf(text, sizeof(text),
                "this process may open %llu more file descriptors (ulimit -n %llu, %llu open), and a socket to each "
                "of its %zu tcp peers per channel and STRATA_NSOCKS (%d x %llu) with some to spare needs %llu: raise "
                "ulimit -n, or lower STRATA_NSOCKS or STRATA_NCHANNELS",
                static_cast<unsigned long long>(left), static_cast<unsigned long long>(limit.rlim_cur),
                static_cast<unsigned long long>(open), npeers, req.nchannels, static_cast<unsigned long long>(nsocks),
                static_cast<unsigned long long>(need));
  return text;
}

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

  std::string congestion;  // the first connection's, for the log
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
        if (congestion.empty()) congestion = net::congestionOf(fd);
        links.push_back(std::make_shared<sockets::SocketLink>(fd, peer, hosts[peer].hostname));
        fd = -1;  // owned by the link from here on
        if (!tls.empty()) links.back()->setTls(std::move(tls[peer][ch * nsocks + sock]));
      }
      out.send[ch][peer] = std::make_unique<TcpSendConnector>(links, req.slotBytes, req.nslots);
      out.recv[ch][peer] = std::make_unique<TcpRecvConnector>(links, req.slotBytes, req.nslots);
    }
    STRATA_INFO(NET, "rank %d <-> rank %d over tcp%s: %d channel(s) x %d socket(s), congestion control %s", me,
                peer, tls.empty() ? "" : " with TLS", req.nchannels, nsocks,
                congestion.c_str());
  }
  return Status::ok();
}

}  // namespace strata::tcp

namespace strata {

std::unique_ptr<Transport> makeTcpTransport() { return std::make_unique<tcp::TcpTransport>(); }

}  // namespace strata
