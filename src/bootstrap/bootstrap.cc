#include "bootstrap.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "clock.h"
#include "handshake.h"
#include "listener_handoff.h"
#include "log.h"
#include "params.h"

namespace strata::boot {
namespace {

// The handshake's purpose for bootstrap connections (handshake_wire.h).
constexpr uint64_t kBootPurpose = 0x31544f4f42525453ull;  // "STRBOOT1"

// What rank 0 answers a joiner that proved the secret.
enum ReplyStatus : uint32_t { kOk = 0, kWrongSize = 2, kDuplicateRank = 3, kBadRank = 4 };

struct Reply {
  uint32_t status;
  int32_t nranks;  // rank 0's world size
  uint64_t commTag;
};

// Rank 0's listening socket; a single rank needs none.
Status rootListener(const BootstrapConfig& config, int* fd) {
  if (config.fromUniqueId) return takeIdListener(config.id, config.nranks > 1, fd);
  if (config.nranks == 1) return Status::ok();
  SockAddr addr = rootAddress(config.id);
  return net::listenOn(&addr, fd);
}

}  // namespace

Bootstrap::~Bootstrap() {
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
  const double deadline = nowSeconds() + params::timeout();
  fds_.assign(nranks_, -1);
  security::Gate gate(listenFd, secret_, kBootPurpose, 0, 0);
  int joined = 0;
  while (joined < nranks_ - 1) {
    security::Admitted a;
    if (!gate.next(deadline, &a).isOk()) {
      std::string missing;
      for (int r = 1; r < nranks_; ++r)
        if (fds_[r] < 0) missing += (missing.empty() ? "" : ",") + std::to_string(r);
      return STRATA_ERROR(STRATA_ERR_TIMEOUT,
                          "only %d of %d ranks joined rank 0 before STRATA_TIMEOUT (%.0f s); "
                          "missing ranks: %s",
                          joined + 1, nranks_, params::timeout(), missing.c_str());
    }
    // The joiner proved the secret: it is of this job, and may hear why it
    // is refused. Its host description follows its proof at once.
    const security::Claim& c = a.claim;
    topo::HostInfo host;
    Status got = net::recvAll(a.fd, &host, sizeof(host), std::min(deadline, nowSeconds() + security::Gate::kUnprovenSeconds),
                              a.from.c_str());
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
      if (got.isOk()) (void)!send(a.fd, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT);
      close(a.fd);
      continue;
    }
    fds_[c.rank] = a.fd;
    hosts_[c.rank] = host;
    topo::sanitizeWire(&hosts_[c.rank]);
    ++joined;
    STRATA_TRACE(BOOT, "rank %d joined from %s", c.rank, a.from.c_str());
  }

  STRATA_CHECK(security::randomBytes(&commTag_, sizeof(commTag_)));
  Reply ok{kOk, nranks_, commTag_};
  for (int r = 1; r < nranks_; ++r) {
    std::string peer = peerName(r);
    STRATA_CHECK(net::sendAll(fds_[r], &ok, sizeof(ok), deadline, peer.c_str()));
    STRATA_CHECK(net::sendAll(fds_[r], hosts_.data(), sizeof(topo::HostInfo) * nranks_, deadline,
                         peer.c_str()));
  }
  STRATA_INFO(BOOT, "all %d ranks joined", nranks_);
  return Status::ok();
}

Status Bootstrap::join(const BootstrapConfig& config) {
  const double deadline = nowSeconds() + params::timeout();
  SockAddr root = rootAddress(config.id);
  std::string name = "rank 0 at " + toString(root) + " (MASTER_ADDR or the unique id's address)";
  int fd = -1;
  uint32_t rootFlags = 0;
  const security::Claim claim{kBootPurpose, 0, rank_, 0, 0, nranks_, 0, 0};
  STRATA_CHECK(security::connectAndProve(root, secret_, claim, deadline, name.c_str(), &fd, &rootFlags));
  fds_.assign(1, fd);
  STRATA_CHECK(net::sendAll(fd, &hosts_[rank_], sizeof(topo::HostInfo), deadline, name.c_str()));
  Reply reply;
  STRATA_CHECK(net::recvAll(fd, &reply, sizeof(reply), deadline, name.c_str()));
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
  STRATA_CHECK(net::recvAll(fd, hosts_.data(), sizeof(topo::HostInfo) * nranks_, deadline, name.c_str()));
  for (topo::HostInfo& h : hosts_) topo::sanitizeWire(&h);
  return Status::ok();
}

Status Bootstrap::allgather(const void* in, void* out, size_t bytes) {
  const double deadline = nowSeconds() + params::timeout();
  char* all = static_cast<char*>(out);
  std::memmove(all + rank_ * bytes, in, bytes);
  if (nranks_ == 1) return Status::ok();
  if (rank_ != 0) {
    std::string name = peerName(0);
    STRATA_CHECK(net::sendAll(fds_[0], in, bytes, deadline, name.c_str()));
    return net::recvAll(fds_[0], all, bytes * nranks_, deadline, name.c_str());
  }
  for (int r = 1; r < nranks_; ++r)
    STRATA_CHECK(net::recvAll(fds_[r], all + r * bytes, bytes, deadline, peerName(r).c_str()));
  for (int r = 1; r < nranks_; ++r)
    STRATA_CHECK(net::sendAll(fds_[r], all, bytes * nranks_, deadline, peerName(r).c_str()));
  return Status::ok();
}

Status Bootstrap::barrier() {
  char token = 1;
  std::vector<char> all(nranks_);
  return allgather(&token, all.data(), 1);
}

}  // namespace strata::boot
