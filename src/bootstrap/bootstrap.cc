#include "bootstrap.h"

#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "clock.h"
#include "listener_handoff.h"
#include "log.h"
#include "params.h"
#include "tls_session.h"

namespace strata::boot {
namespace {

constexpr uint64_t kHelloMagic = 0x31544f4f42525453ull;  // "STRBOOT1"

struct Hello {
  uint64_t magic;
  uint8_t secret[kSecretBytes];
  int32_t nranks;
  int32_t rank;
  topo::HostInfo host;
};

enum ReplyStatus : uint32_t { kOk = 0, kBadSecret = 1, kWrongSize = 2, kDuplicateRank = 3, kBadRank = 4 };

struct Reply {
  uint32_t status;
  int32_t nranks;  // rank 0's world size
  uint64_t commTag;
};

struct Pending {
  int fd;
  std::string from;
  Hello hello;
  size_t got;
};

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
  tls_.clear();
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
  static_assert(sizeof(config.id.secret) == sizeof(b->secret_.bytes));
  std::memcpy(b->secret_.bytes, config.id.secret, sizeof(b->secret_.bytes));
  b->hosts_.resize(config.nranks);
  b->hosts_[config.rank] = self;
  if (config.rank == 0) {
    int fd = -1;
    STRATA_CHECK(rootListener(config, &fd));
    Status s = config.nranks > 1 ? b->runRoot(config, fd) : Status::ok();
    if (fd >= 0) close(fd);
    STRATA_CHECK(s);
    if (config.nranks == 1 && getrandom(&b->commTag_, sizeof(b->commTag_), 0) != sizeof(b->commTag_))
      b->commTag_ = static_cast<uint64_t>(getpid()) * 0x9e3779b97f4a7c15ull ^ uint64_t(nowSeconds() * 1e9);
  } else {
    STRATA_CHECK(b->join(config));
  }
  *out = std::move(b);
  return Status::ok();
}

Status Bootstrap::runRoot(const BootstrapConfig& config, int listenFd) {
  const double deadline = nowSeconds() + params::timeout();
  fds_.assign(nranks_, -1);
  std::vector<Pending> pending;
  int joined = 0;

  auto reject = [&](Pending& p, ReplyStatus why, const char* what) {
    STRATA_WARN(BOOT, "dropped bootstrap connection from %s: %s", p.from.c_str(), what);
    if (why != kOk) {
      Reply r{why, nranks_, 0};
      (void)!send(p.fd, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    close(p.fd);
    p.fd = -1;
  };

  while (joined < nranks_ - 1) {
    if (nowSeconds() > deadline) {
      std::string missing;
      for (int r = 1; r < nranks_; ++r)
        if (fds_[r] < 0) missing += (missing.empty() ? "" : ",") + std::to_string(r);
      for (auto& p : pending) close(p.fd);
      return STRATA_ERROR(STRATA_ERR_TIMEOUT,
                          "only %d of %d ranks joined rank 0 before STRATA_TIMEOUT (%.0f s); "
                          "missing ranks: %s",
                          joined + 1, nranks_, params::timeout(), missing.c_str());
    }
    std::vector<pollfd> fds{{listenFd, POLLIN, 0}};
    for (auto& p : pending) fds.push_back({p.fd, POLLIN, 0});
    int n = poll(fds.data(), fds.size(), 100);
    if (n <= 0) continue;
    if (fds[0].revents & POLLIN) {
      SockAddr from;
      socklen_t len = sizeof(from.storage);
      int fd = accept4(listenFd, reinterpret_cast<sockaddr*>(&from.storage), &len, SOCK_CLOEXEC);
      if (fd >= 0) {
        from.len = len;
        pending.push_back({fd, toString(from), {}, 0});
      }
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      Pending& p = pending[i - 1];
      ssize_t got = recv(p.fd, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got,
                         MSG_DONTWAIT);
      if (got <= 0) {
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        reject(p, kOk, "closed before saying hello");
        continue;
      }
      p.got += static_cast<size_t>(got);
      if (p.got < sizeof(Hello)) continue;
      const Hello& h = p.hello;
      if (h.magic != kHelloMagic) {
        reject(p, kOk, "not a strata bootstrap hello");
      } else if (std::memcmp(h.secret, config.id.secret, kSecretBytes) != 0) {
        reject(p, kBadSecret, "wrong secret (a unique id of another job?)");
      } else if (h.nranks != nranks_) {
        reject(p, kWrongSize, ("rank " + std::to_string(h.rank) + " said the world has " +
                               std::to_string(h.nranks) + " ranks, rank 0 says " +
                               std::to_string(nranks_)).c_str());
      } else if (h.rank < 1 || h.rank >= nranks_) {
        reject(p, kBadRank, ("rank " + std::to_string(h.rank) + " out of range").c_str());
      } else if (fds_[h.rank] >= 0) {
        reject(p, kDuplicateRank, ("rank " + std::to_string(h.rank) + " joined twice").c_str());
      } else {
        fds_[h.rank] = p.fd;
        hosts_[h.rank] = h.host;
        topo::sanitizeWire(&hosts_[h.rank]);
        p.fd = -1;
        ++joined;
        STRATA_TRACE(BOOT, "rank %d joined from %s", h.rank, p.from.c_str());
      }
    }
    pending.erase(std::remove_if(pending.begin(), pending.end(), [](const Pending& p) { return p.fd < 0; }),
                  pending.end());
  }
  for (auto& p : pending) {
    STRATA_WARN(BOOT, "dropped bootstrap connection from %s: incomplete hello", p.from.c_str());
    close(p.fd);
  }

  if (getrandom(&commTag_, sizeof(commTag_), 0) != sizeof(commTag_))
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "getrandom failed: %s", errnoText(errno).c_str());
  Reply ok{kOk, nranks_, commTag_};
  std::vector<int> joiners;
  for (int r = 1; r < nranks_; ++r) {
    STRATA_CHECK(net::sendAll(fds_[r], &ok, sizeof(ok), deadline, peerName(r).c_str()));
    joiners.push_back(r);
  }
  STRATA_CHECK(startTlsAsRoot(joiners, deadline));
  for (int r = 1; r < nranks_; ++r)
    STRATA_CHECK(sendTo(r, hosts_.data(), sizeof(topo::HostInfo) * nranks_, deadline));
  STRATA_INFO(BOOT, "all %d ranks joined%s", nranks_, params::tls() ? " (TLS)" : "");
  return Status::ok();
}

Status Bootstrap::join(const BootstrapConfig& config) {
  const double deadline = nowSeconds() + params::timeout();
  SockAddr root = rootAddress(config.id);
  int fd = -1;
  STRATA_CHECK(net::connectTo(root, deadline, "rank 0 (MASTER_ADDR or the unique id's address)", &fd));
  fds_.assign(1, fd);
  std::string name = "rank 0 at " + toString(root);

  Hello hello;
  std::memset(&hello, 0, sizeof(hello));
  hello.magic = kHelloMagic;
  std::memcpy(hello.secret, config.id.secret, kSecretBytes);
  hello.nranks = nranks_;
  hello.rank = rank_;
  hello.host = hosts_[rank_];
  STRATA_CHECK(net::sendAll(fd, &hello, sizeof(hello), deadline, name.c_str()));
  Reply reply;
  STRATA_CHECK(net::recvAll(fd, &reply, sizeof(reply), deadline, name.c_str()));
  switch (reply.status) {
    case kOk:
      break;
    case kBadSecret:
      return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "%s rejected this rank: the unique id's secret does not match (an id "
                          "from another job or an older strata_get_unique_id call?)",
                          name.c_str());
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
  STRATA_CHECK(startTlsAsJoiner(deadline));
  STRATA_CHECK(recvFrom(0, hosts_.data(), sizeof(topo::HostInfo) * nranks_, deadline));
  for (topo::HostInfo& h : hosts_) topo::sanitizeWire(&h);
  return Status::ok();
}

Status Bootstrap::allgather(const void* in, void* out, size_t bytes) {
  const double deadline = nowSeconds() + params::timeout();
  char* all = static_cast<char*>(out);
  std::memmove(all + rank_ * bytes, in, bytes);
  if (nranks_ == 1) return Status::ok();
  if (rank_ != 0) {
    STRATA_CHECK(sendTo(0, in, bytes, deadline));
    return recvFrom(0, all, bytes * nranks_, deadline);
  }
  for (int r = 1; r < nranks_; ++r) STRATA_CHECK(recvFrom(r, all + r * bytes, bytes, deadline));
  for (int r = 1; r < nranks_; ++r) STRATA_CHECK(sendTo(r, all, bytes * nranks_, deadline));
  return Status::ok();
}

Status Bootstrap::startTlsAsRoot(const std::vector<int>& ranks, double deadline) {
  if (!params::tls()) return Status::ok();
  tls_.resize(fds_.size());
  std::vector<security::TlsSession*> sessions;
  for (int r : ranks) {
    STRATA_CHECK(security::TlsSession::create(fds_[r], security::TlsRole::kServer, secret_, peerName(r), &tls_[r]));
    sessions.push_back(tls_[r].get());
  }
  return security::TlsSession::handshakeAll(sessions, deadline);
}

Status Bootstrap::startTlsAsJoiner(double deadline) {
  if (!params::tls()) return Status::ok();
  tls_.resize(1);
  return security::TlsSession::start(fds_[0], security::TlsRole::kClient, secret_, peerName(0), deadline, &tls_[0]);
}

Status Bootstrap::sendTo(int rank, const void* data, size_t bytes, double deadline) {
  if (rank < static_cast<int>(tls_.size()) && tls_[rank]) return tls_[rank]->sendAll(data, bytes, deadline);
  return net::sendAll(fds_[rank], data, bytes, deadline, peerName(rank).c_str());
}

Status Bootstrap::recvFrom(int rank, void* data, size_t bytes, double deadline) {
  if (rank < static_cast<int>(tls_.size()) && tls_[rank]) return tls_[rank]->recvAll(data, bytes, deadline);
  return net::recvAll(fds_[rank], data, bytes, deadline, peerName(rank).c_str());
}

Status Bootstrap::barrier() {
  char token = 1;
  std::vector<char> all(nranks_);
  return allgather(&token, all.data(), 1);
}

}  // namespace strata::boot
