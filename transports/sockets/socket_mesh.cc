#include "socket_mesh.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "clock.h"
#include "handshake.h"
#include "log.h"
#include "params.h"
#include "socket.h"
#include "socket_interface.h"

namespace strata::sockets {
namespace {

// Admits the lower ranks' connections to this one until all have arrived:
// each must prove the secret (security/handshake.h) and claim this
// communicator, an expected rank and an index not taken yet. Stops early,
// with any status, once `stop` is set.
Status admitLower(const ConnectRequest& req, int listenFd, uint64_t magic, int perPeer, double deadline,
                  const std::atomic<bool>& stop, std::vector<std::vector<int>>* got) {
  const int me = req.oob->rank();
  std::vector<bool> expected(req.oob->size(), false);
  int toAccept = 0;
  for (int peer : req.peers)
    if (peer < me) {
      expected[peer] = true;
      toAccept += perPeer;
    }
  security::Gate gate(listenFd, req.secret, magic, me, 0);
  while (toAccept > 0) {
    if (stop.load()) return makeErrorQuiet(STRATA_ERR_INTERNAL, "stopped: connecting to higher ranks failed");
    if (req.oob->abandoned())
      return STRATA_ERROR(STRATA_ERR_REMOTE, "a lower rank gave up connecting to this one (rank %d; its own error says "
                          "why)", req.peers.front());
    security::Admitted a;
    if (!gate.next(std::min(deadline, nowSeconds() + 0.1), &a).isOk()) {
      if (gate.outOfDescriptors())
        return STRATA_ERROR(STRATA_ERR_SYSTEM, "this rank ran out of file descriptors accepting its peers' "
                            "connections: raise ulimit -n, or lower STRATA_NSOCKS or STRATA_NCHANNELS");
      if (nowSeconds() < deadline) continue;
      std::string missing;
      for (int peer = 0; peer < me; ++peer)
        for (int k = 0; k < perPeer; ++k)
          if (expected[peer] && (*got)[peer][k] < 0) {
            missing += (missing.empty() ? "" : ",") + std::to_string(peer);
            break;
          }
      return STRATA_ERROR(STRATA_ERR_TIMEOUT, "%d connection(s) from lower ranks never arrived (ranks %s)", toAccept,
                          missing.c_str());
    }
    const security::Claim& c = a.claim;
    if (c.commTag == req.commTag && c.count != perPeer) {
      close(a.fd);
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "rank %d opens %d connections per peer, this rank %d: set STRATA_NCHANNELS and "
                          "STRATA_NSOCKS alike everywhere", c.rank, c.count, perPeer);
    }
    if (c.commTag != req.commTag || c.rank < 0 || c.rank >= me || !expected[c.rank] || c.index < 0 ||
        c.index >= perPeer || (*got)[c.rank][c.index] >= 0) {
      STRATA_WARN(NET, "dropped a connection from %s that proved the secret but claims rank %d, connection %d of "
                  "another communicator or one this rank does not expect", a.from.c_str(), c.rank, c.index);
      close(a.fd);
      continue;
    }
    (*got)[c.rank][c.index] = a.fd;
    --toAccept;
  }
  return Status::ok();
}

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
  // Lower ranks connect to us while we connect to higher ones: waiting for
  // each other's answers in turn would chain the ranks one after another.
  std::atomic<bool> stop{false};
  Status admitted;
  std::thread acceptor;
  if (std::any_of(req.peers.begin(), req.peers.end(), [me](int peer) { return peer < me; }))
    acceptor = std::thread([&] {
      log::setThreadRank(me);
      admitted = admitLower(req, listenFd, magic, perPeer, deadline, stop, &got);
    });
  Status connected;
  for (int peer : req.peers) {
    if (peer < me || !connected.isOk()) continue;
    SockAddr addr;
    connected = decodeListenRecord(all[peer], peer, &addr);
    std::string name = "rank " + std::to_string(peer) + " on " + hosts[peer].hostname;
    for (int k = 0; k < perPeer && connected.isOk(); ++k) {
      const security::Claim claim{magic, req.commTag, me, peer, k, perPeer, 0, 0};
      uint32_t peerFlags = 0;
      // The peer listened before its address was shared: a refusal means
      // it gave up (and its error says why), not that it is not there yet.
      connected = security::connectAndProve(addr, req.secret, claim, deadline, name.c_str(), &got[peer][k], &peerFlags,
                                            /*retry=*/false, /*retryDropped=*/true);
    }
  }
  if (!connected.isOk()) stop.store(true);
  if (acceptor.joinable()) acceptor.join();
  if (!connected.isOk() || !admitted.isOk()) {
    closeAll();
    return connected.isOk() ? admitted : connected;
  }
  *fds = std::move(got);
  return Status::ok();
}

}  // namespace strata::sockets
