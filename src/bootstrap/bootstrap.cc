#include "bootstrap.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "bootstrap_tree.h"
#include "clock.h"
#include "handshake.h"
#include "listener_handoff.h"
#include "log.h"
#include "params.h"
#include "socket_mesh.h"
#include "tls_session.h"

namespace strata::boot {
namespace {

// The handshake's purposes (handshake_wire.h): a join to rank 0, and a
// child's link to its parent in the tree.
constexpr uint64_t kBootPurpose = 0x31544f4f42525453ull;  // "STRBOOT1"
constexpr uint64_t kTreePurpose = 0x3145455254525453ull;  // "STRTREE1"

// What rank 0 answers a joiner that proved the secret.
enum ReplyStatus : uint32_t { kOk = 0, kWrongSize = 2, kDuplicateRank = 3, kBadRank = 4 };

struct Reply {
  uint32_t status;
  int32_t nranks;  // rank 0's world size
  uint64_t commTag;
};

// STRATA_TLS, as the handshake's flags carry it: both ends must agree.
uint32_t tlsFlag() { return params::tls() ? security::kFlagTls : 0; }

// How long the ranks may take to meet: STRATA_BOOTSTRAP_TIMEOUT, else STRATA_TIMEOUT.
double joinSeconds() { return params::bootstrapTimeout() > 0 ? params::bootstrapTimeout() : params::timeout(); }
const char* tlsText(uint32_t flags) { return flags & security::kFlagTls ? "STRATA_TLS=1" : "no TLS"; }

// Rank 0's listening socket; a single rank needs none.
Status rootListener(const BootstrapConfig& config, int* fd) {
  if (config.fromUniqueId) return takeIdListener(config.id, config.nranks > 1, fd);
  if (config.nranks == 1) return Status::ok();
  SockAddr addr = rootAddress(config.id);
  return net::listenOn(&addr, fd);
}

}  // namespace

Bootstrap::Bootstrap(int rank, int nranks) : rank_(rank), nranks_(nranks) {}

Bootstrap::~Bootstrap() {
  tls_.clear();  // their close_notify goes out before the sockets close
  for (int fd : fds_)
    if (fd >= 0) close(fd);
}

std::string Bootstrap::peerName(int rank) const {
  std::string name = "rank " + std::to_string(rank);
  if (rank < static_cast<int>(hosts_.size()) && hosts_[rank].hostname[0])
    name += std::string(" on ") + hosts_[rank].hostname;
  return name;
}

Status Bootstrap::create(const BootstrapConfig& config, const topo::HostInfo& self,
                         std::unique_ptr<Bootstrap>* out) {
  if (config.nranks < 1 || config.nranks > kMaxRanks)
    return STRATA_INVALID_ARG("nranks=%d is outside 1..%d, the world sizes strata supports", config.nranks,
                              kMaxRanks);
  std::unique_ptr<Bootstrap> b(new Bootstrap(config.rank, config.nranks));
  b->hosts_.resize(config.nranks);
  b->hosts_[config.rank] = self;
  b->secret_ = config.id.secret;
  if (config.rank == 0) {
    int fd = -1;
    STRATA_CHECK(rootListener(config, &fd));
    Status s = config.nranks > 1 ? b->runRoot(fd) : Status::ok();
    if (fd >= 0) close(fd);
    STRATA_CHECK(s);
    if (config.nranks == 1) STRATA_CHECK(security::randomBytes(&b->commTag_, sizeof(b->commTag_)));
  } else {
    STRATA_CHECK(b->join(config));
  }
  *out = std::move(b);
  return Status::ok();
}

Status Bootstrap::runRoot(int listenFd) {
  const double deadline = nowSeconds() + joinSeconds();
  fds_.assign(nranks_, -1);
  tls_.resize(nranks_);
  std::vector<sockets::ListenRecord> treeAddrs(nranks_);
  security::Gate gate(listenFd, secret_, kBootPurpose, 0, tlsFlag());
  int joined = 0;
  while (joined < nranks_ - 1) {
    security::Admitted a;
    if (!gate.next(deadline, &a).isOk()) {
      std::string missing;
      for (int r = 1; r < nranks_; ++r)
        if (fds_[r] < 0) missing += (missing.empty() ? "" : ",") + std::to_string(r);
      return STRATA_ERROR(STRATA_ERR_TIMEOUT,
                          "only %d of %d ranks joined rank 0 within %.0f s (STRATA_BOOTSTRAP_TIMEOUT, else "
                          "STRATA_TIMEOUT); missing ranks: %s",
                          joined + 1, nranks_, joinSeconds(), missing.c_str());
    }
    // The joiner proved the secret: it is of this job, and may hear why it
    // is refused. Its host description follows its proof at once (after
    // TLS's handshake, with STRATA_TLS).
    const security::Claim& c = a.claim;
    if ((c.flags & security::kFlagTls) != tlsFlag()) {
      // It saw this rank's flags in the answer and fails on its own, saying why.
      STRATA_WARN(BOOT, "refused rank %d from %s: it runs with %s, rank 0 with %s (set STRATA_TLS alike on every rank)",
                  c.rank, a.from.c_str(), tlsText(c.flags), tlsText(tlsFlag()));
      close(a.fd);
      continue;
    }
    const double hostDeadline = std::min(deadline, nowSeconds() + security::Gate::kUnprovenSeconds);
    std::unique_ptr<security::TlsSession> tls;
    Status got = startTls(a.fd, false, "rank " + std::to_string(c.rank) + " at " + a.from, hostDeadline, &tls);
    // Its host, then where its children reach it: two records, as it sent them.
    topo::HostInfo host;
    sockets::ListenRecord tree;
    for (auto [data, bytes] : {std::pair<void*, size_t>{&host, sizeof(host)}, {&tree, sizeof(tree)}})
      if (got.isOk())
        got = tls ? tls->recvAll(data, bytes, hostDeadline) : net::recvAll(a.fd, data, bytes, hostDeadline, a.from.c_str());
    ReplyStatus why = c.count != nranks_                ? kWrongSize
                      : c.rank < 1 || c.rank >= nranks_ ? kBadRank
                      : fds_[c.rank] >= 0               ? kDuplicateRank
                                                        : kOk;
    if (!got.isOk() || why != kOk) {
      STRATA_WARN(BOOT, "refused rank %d from %s: %s", c.rank, a.from.c_str(),
                  !got.isOk()          ? "closed before describing its host"
                  : why == kWrongSize  ? ("it says the world has " + std::to_string(c.count) + " ranks, rank 0 says " +
                                         std::to_string(nranks_)).c_str()
                  : why == kBadRank    ? "rank out of range"
                                       : "that rank joined already");
      Reply r{why, nranks_, 0};
      if (got.isOk() && tls)
        (void)tls->write(&r, sizeof(r));
      else if (got.isOk())
        (void)!send(a.fd, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT);
      tls.reset();
      close(a.fd);
      continue;
    }
    fds_[c.rank] = a.fd;
    tls_[c.rank] = std::move(tls);
    hosts_[c.rank] = host;
    topo::sanitizeWire(&hosts_[c.rank]);
    treeAddrs[c.rank] = tree;
    ++joined;
    STRATA_TRACE(BOOT, "rank %d joined from %s", c.rank, a.from.c_str());
  }

  // Each rank learns its parent's address, the only one it needs; rank 0
  // keeps its own children and lets the others go.
  STRATA_CHECK(security::randomBytes(&commTag_, sizeof(commTag_)));
  Reply ok{kOk, nranks_, commTag_};
  for (int r = 1; r < nranks_; ++r) {
    STRATA_CHECK(sendTo(r, &ok, sizeof(ok), deadline));
    STRATA_CHECK(sendTo(r, &treeAddrs[treeParent(r)], sizeof(sockets::ListenRecord), deadline));
    if (treeParent(r) == 0) continue;
    tls_[r].reset();
    close(fds_[r]);
    fds_[r] = -1;
  }
  STRATA_INFO(BOOT, "all %d ranks joined%s", nranks_, tlsFlag() ? " (TLS)" : "");
  return spreadHosts(deadline);
}

Status Bootstrap::join(const BootstrapConfig& config) {
  const double deadline = nowSeconds() + joinSeconds();
  SockAddr root = rootAddress(config.id);
  std::string name = "rank 0 at " + toString(root) + " (MASTER_ADDR or the unique id's address)";
  int fd = -1;
  uint32_t rootFlags = 0;
  const security::Claim claim{kBootPurpose, 0, rank_, 0, 0, nranks_, tlsFlag(), 0};
  STRATA_CHECK(security::connectAndProve(root, secret_, claim, deadline, name.c_str(), &fd, &rootFlags));
  fds_.assign(nranks_, -1);
  fds_[0] = fd;
  if ((rootFlags & security::kFlagTls) != tlsFlag())
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "%s runs with %s, this rank with %s: set STRATA_TLS alike on every rank",
                        name.c_str(), tlsText(rootFlags), tlsText(tlsFlag()));
  tls_.resize(nranks_);
  STRATA_CHECK(startTls(fd, true, name, deadline, &tls_[0]));
  // Children reach this rank where rank 0 reaches it: the address of this
  // end of the connection to rank 0.
  int listenFd = -1;
  std::unique_ptr<int, void (*)(int*)> listenGuard(&listenFd, [](int* l) {
    if (*l >= 0) close(*l);
  });
  sockets::ListenRecord mine{};
  if (!treeChildren(rank_, nranks_).empty()) {
    SockAddr local;
    socklen_t len = sizeof(local.storage);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local.storage), &len) != 0)
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "getsockname on the connection to %s: %s", name.c_str(),
                          errnoText(errno).c_str());
    local.len = len;
    if (local.get()->sa_family == AF_INET) reinterpret_cast<sockaddr_in*>(&local.storage)->sin_port = 0;
    else reinterpret_cast<sockaddr_in6*>(&local.storage)->sin6_port = 0;
    STRATA_CHECK(net::listenOn(&local, &listenFd));
    std::memcpy(&mine.storage, &local.storage, local.len);
    mine.len = local.len;
  }
  STRATA_CHECK(sendTo(0, &hosts_[rank_], sizeof(topo::HostInfo), deadline));
  STRATA_CHECK(sendTo(0, &mine, sizeof(mine), deadline));
  Reply reply;
  STRATA_CHECK(recvFrom(0, &reply, sizeof(reply), deadline));
  switch (reply.status) {
    case kOk:
      break;
    case kWrongSize:
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "%s rejected this rank: nranks=%d here but %d at rank 0", name.c_str(),
                          nranks_, reply.nranks);
    case kDuplicateRank:
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "%s rejected this rank: another process already joined as rank %d",
                          name.c_str(), rank_);
    default:
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "%s rejected rank %d (status %u)", name.c_str(),
                          rank_, reply.status);
  }
  commTag_ = reply.commTag;
  sockets::ListenRecord parentRecord;
  STRATA_CHECK(recvFrom(0, &parentRecord, sizeof(parentRecord), deadline));
  if (treeParent(rank_) != 0) {
    SockAddr parentAddr;
    STRATA_CHECK(sockets::decodeListenRecord(parentRecord, treeParent(rank_), &parentAddr));
    STRATA_CHECK(linkParent(parentAddr, deadline));
  }
  STRATA_CHECK(admitChildren(listenFd, deadline));
  return spreadHosts(deadline);
}

Status Bootstrap::linkParent(const SockAddr& parentAddr, double deadline) {
  tls_[0].reset();
  close(fds_[0]);
  fds_[0] = -1;
  const int parent = treeParent(rank_);
  const std::string name = "rank " + std::to_string(parent) + " at " + toString(parentAddr) +
                           " (this rank's parent in the bootstrap tree)";
  const security::Claim claim{kTreePurpose, commTag_, rank_, parent, 0, nranks_, tlsFlag(), 0};
  uint32_t flags = 0;
  STRATA_CHECK(security::connectAndProve(parentAddr, secret_, claim, deadline, name.c_str(), &fds_[parent], &flags));
  return startTls(fds_[parent], true, name, deadline, &tls_[parent]);
}

Status Bootstrap::admitChildren(int listenFd, double deadline) {
  const std::vector<int> children = treeChildren(rank_, nranks_);
  if (children.empty()) return Status::ok();
  security::Gate gate(listenFd, secret_, kTreePurpose, rank_, tlsFlag());
  for (size_t linked = 0; linked < children.size();) {
    security::Admitted a;
    if (!gate.next(deadline, &a).isOk()) {
      std::string missing;
      for (int c : children)
        if (fds_[c] < 0) missing += (missing.empty() ? "" : ",") + std::to_string(c);
      return STRATA_ERROR(STRATA_ERR_TIMEOUT,
                          "ranks %s, this rank's children in the bootstrap tree, did not connect within %.0f s "
                          "(STRATA_BOOTSTRAP_TIMEOUT, else STRATA_TIMEOUT)",
                          missing.c_str(), joinSeconds());
    }
    const int c = a.claim.rank;
    if (a.claim.commTag != commTag_ || std::find(children.begin(), children.end(), c) == children.end() ||
        fds_[c] >= 0) {
      // A holder of the secret, but not a child of this communicator's tree
      // that is still missing: another communicator's, or a replay.
      STRATA_WARN(BOOT, "refused a bootstrap link from %s claiming rank %d: not an expected child", a.from.c_str(), c);
      close(a.fd);
      continue;
    }
    fds_[c] = a.fd;
    STRATA_CHECK(startTls(a.fd, false, "rank " + std::to_string(c) + " at " + a.from, deadline, &tls_[c]));
    ++linked;
  }
  return Status::ok();
}

Status Bootstrap::spreadHosts(double deadline) {
  const size_t bytes = sizeof(topo::HostInfo) * nranks_;
  if (rank_ != 0) {
    STRATA_CHECK(recvFrom(treeParent(rank_), hosts_.data(), bytes, deadline));
    for (topo::HostInfo& h : hosts_) topo::sanitizeWire(&h);
  }
  for (int c : treeChildren(rank_, nranks_)) STRATA_CHECK(sendTo(c, hosts_.data(), bytes, deadline));
  return Status::ok();
}

Status Bootstrap::allgather(const void* in, void* out, size_t bytes) {
  const double deadline = nowSeconds() + params::timeout();
  char* all = static_cast<char*>(out);
  std::memmove(all + rank_ * bytes, in, bytes);
  // Up: each child's subtree lands at its place; this rank's goes to its
  // parent whole. Down: the parent's full table, passed on to the children.
  const std::vector<int> children = treeChildren(rank_, nranks_);
  for (int c : children)
    STRATA_CHECK(recvFrom(c, all + c * bytes, (subtreeEnd(c, nranks_) - c) * bytes, deadline));
  if (rank_ != 0) {
    const int parent = treeParent(rank_);
    STRATA_CHECK(sendTo(parent, all + rank_ * bytes, (subtreeEnd(rank_, nranks_) - rank_) * bytes, deadline));
    STRATA_CHECK(recvFrom(parent, all, bytes * nranks_, deadline));
  }
  for (int c : children) STRATA_CHECK(sendTo(c, all, bytes * nranks_, deadline));
  return Status::ok();
}

Status Bootstrap::startTls(int fd, bool joiner, const std::string& peer, double deadline,
                           std::unique_ptr<security::TlsSession>* out) const {
  out->reset();
  if (!tlsFlag()) return Status::ok();
  return security::TlsSession::start(fd, joiner ? security::TlsRole::kClient : security::TlsRole::kServer, secret_,
                                     peer, deadline, out);
}

Status Bootstrap::sendTo(int rank, const void* data, size_t bytes, double deadline) {
  bytesSent_ += bytes;
  if (rank < static_cast<int>(tls_.size()) && tls_[rank]) return tls_[rank]->sendAll(data, bytes, deadline);
  return net::sendAll(fds_[rank], data, bytes, deadline, peerName(rank).c_str());
}

Status Bootstrap::recvFrom(int rank, void* data, size_t bytes, double deadline) {
  bytesReceived_ += bytes;
  if (rank < static_cast<int>(tls_.size()) && tls_[rank]) return tls_[rank]->recvAll(data, bytes, deadline);
  return net::recvAll(fds_[rank], data, bytes, deadline, peerName(rank).c_str());
}

Status Bootstrap::barrier() {
  // A token up the tree and back down: 2 log2(n) hops of one byte.
  const double deadline = nowSeconds() + params::timeout();
  const std::vector<int> children = treeChildren(rank_, nranks_);
  char token = 1;
  for (int c : children) STRATA_CHECK(recvFrom(c, &token, 1, deadline));
  if (rank_ != 0) {
    STRATA_CHECK(sendTo(treeParent(rank_), &token, 1, deadline));
    STRATA_CHECK(recvFrom(treeParent(rank_), &token, 1, deadline));
  }
  for (int c : children) STRATA_CHECK(sendTo(c, &token, 1, deadline));
  return Status::ok();
}

}  // namespace strata::boot
