#include "control_plane.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "clock.h"
#include "handshake.h"
#include "log.h"
#include "params.h"
#include "socket.h"
#include "socket_interface.h"
#include "socket_mesh.h"

namespace strata::fault {
namespace {

constexpr uint64_t kControlPurpose = 0x314c525443525453ull;  // "STRCTRL1"
constexpr int kAskers = 16;  // threads asking for snapshots at once

std::string rankName(int rank) { return "rank " + std::to_string(rank) + "'s control plane"; }

}  // namespace

Status ControlPlane::create(OutOfBand& oob, const security::Secret& secret, uint64_t commTag,
                            std::function<void(int)> onRevoke, std::function<void(int, int)> onConnect,
                            const OpLog& log, std::unique_ptr<ControlPlane>* out) {
  std::unique_ptr<ControlPlane> cp(new ControlPlane());
  cp->log_ = &log;
  cp->rank_ = oob.rank();
  cp->commTag_ = commTag;
  cp->secret_ = secret;
  cp->onRevoke_ = std::move(onRevoke);
  cp->onConnect_ = std::move(onConnect);
  sockets::ListenRecord mine{};
  if (oob.size() > 1) {
    sockets::Interface iface;
    STRATA_CHECK(sockets::chooseInterface(params::socketIfname(), &iface));
    SockAddr addr = iface.addr;
    STRATA_CHECK(net::listenOn(&addr, &cp->listenFd_));
    std::memcpy(&mine.storage, &addr.storage, addr.len);
    mine.len = addr.len;
  }
  std::vector<sockets::ListenRecord> all(oob.size());
  STRATA_CHECK(oob.allgather(&mine, all.data(), sizeof(mine)));
  cp->addrs_.resize(oob.size());
  for (int r = 0; r < oob.size(); ++r)
    if (r != cp->rank_) STRATA_CHECK(sockets::decodeListenRecord(all[r], r, &cp->addrs_[r]));
  if (oob.size() == 1) {
    *out = std::move(cp);
    return Status::ok();
  }
  cp->wakeFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (cp->wakeFd_ < 0)
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "eventfd() for the control plane failed: %s", errnoText(errno).c_str());
  ControlPlane* self = cp.get();
  cp->thread_ = std::thread([self] { self->serve(); });
  *out = std::move(cp);
  return Status::ok();
}

ControlPlane::~ControlPlane() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(wakeFd_, &one, sizeof(one));
    thread_.join();
  }
  for (const Incoming& in : proposals_) close(in.fd);
  if (wakeFd_ >= 0) close(wakeFd_);
  if (listenFd_ >= 0) close(listenFd_);
}

void ControlPlane::serve() {
  log::setThreadRank(rank_);
  security::Gate gate(listenFd_, secret_, kControlPurpose, rank_, 0);
  for (;;) {
    security::Admitted in;
    Status st = gate.next(nowSeconds() + 3600, &in, wakeFd_);
    if (st.code() == STRATA_IN_PROGRESS) return;
    if (!st.isOk()) continue;
    const security::Claim& c = in.claim;
    // A holder of the secret with a claim for another communicator of the
    // job (a split shares its parent's secret) or a rank there is no such.
    if (c.commTag != commTag_ || c.rank < 0 || c.rank >= size() || c.rank == rank_ || c.count != size()) {
      STRATA_WARN(NET, "control plane: dropped a connection from %s claiming rank %d of %d for another "
                  "communicator", in.from.c_str(), c.rank, c.count);
      close(in.fd);
      continue;
    }
    switch (static_cast<Message>(c.index)) {
      case Message::Revoke:
        close(in.fd);
        onRevoke_(c.rank);
        break;
      case Message::Connect:
        // Served here, while this rank's caller does whatever it does: a
        // peer's isend must not wait for this rank to make a call.
        onConnect_(c.rank, in.fd);
        break;
      case Message::Snapshot: {
        // Whatever this rank's callers are doing: the log is read through atomics.
        const OpSnapshot snap = log_->snapshot(rank_);
        const security::Mac mac = sign(Message::Snapshot, rank_, &snap, sizeof(snap));
        const std::string peer = "rank " + std::to_string(c.rank);
        if (net::sendAll(in.fd, &snap, sizeof(snap), nowSeconds() + 1, peer.c_str()).isOk())
          (void)net::sendAll(in.fd, mac.data(), mac.size(), nowSeconds() + 1, peer.c_str());
        close(in.fd);
        break;
      }
      case Message::Propose: {
        std::lock_guard<std::mutex> lock(mutex_);
        proposals_.push_back({c.rank, in.fd});
        arrived_.notify_all();
        break;
      }
      default:
        close(in.fd);
        break;
    }
  }
}

Status ControlPlane::reach(int peer, Message message, double deadline, int* fd, bool patient) const {
  const security::Claim claim{kControlPurpose, commTag_, rank_, peer, static_cast<int32_t>(message), size(), 0, 0};
  uint32_t flags = 0;
  return security::connectAndProve(addrs_[peer], secret_, claim, deadline, rankName(peer).c_str(), fd, &flags,
                                   /*retry=*/false, /*retryDropped=*/patient);
}

bool ControlPlane::alive(int peer, double deadline) const {
  int fd = -1;
  if (!reach(peer, Message::Probe, deadline, &fd).isOk()) return false;
  close(fd);
  return true;
}

std::vector<int> ControlPlane::sendRevoke(double deadline) const {
  std::vector<int> missed;
  for (int peer = 0; peer < size(); ++peer) {
    if (peer == rank_) continue;
    int fd = -1;
    Status st = reach(peer, Message::Revoke, deadline, &fd);
    if (st.isOk()) {
      close(fd);
    } else {
      STRATA_INFO(NET, "revoke did not reach rank %d: %s", peer, st.message().c_str());
      missed.push_back(peer);
    }
  }
  return missed;
}

std::optional<OpSnapshot> ControlPlane::askSnapshot(int peer, double deadline) const {
  if (peer == rank_) return log_->snapshot(rank_);
  int fd = -1;
  if (!reach(peer, Message::Snapshot, deadline, &fd).isOk()) return std::nullopt;
  OpSnapshot snap;
  security::Mac mac;
  const std::string name = rankName(peer);
  const bool ok = net::recvAll(fd, &snap, sizeof(snap), deadline, name.c_str()).isOk() &&
                  net::recvAll(fd, mac.data(), mac.size(), deadline, name.c_str()).isOk() &&
                  verify(Message::Snapshot, peer, &snap, sizeof(snap), mac) && snap.rank == peer;
  close(fd);
  return ok ? std::optional<OpSnapshot>(snap) : std::nullopt;
}

std::vector<std::optional<OpSnapshot>> ControlPlane::gatherSnapshots(double deadline) const {
  // A few askers at once, so that a peer that never answers (its host or
  // link down) costs the deadline once, not once per peer after it.
  std::vector<std::optional<OpSnapshot>> out(size());
  const int askers = std::min(size(), kAskers);
  std::vector<std::thread> threads;
  for (int t = 1; t < askers; ++t)
    threads.emplace_back([&, t] {
      for (int peer = t; peer < size(); peer += askers) out[peer] = askSnapshot(peer, deadline);
    });
  for (int peer = 0; peer < size(); peer += askers) out[peer] = askSnapshot(peer, deadline);
  for (auto& thread : threads) thread.join();
  return out;
}

bool ControlPlane::nextProposal(double deadline, Incoming* out) {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, deadline - nowSeconds())));
  if (!arrived_.wait_until(lock, until, [&] { return !proposals_.empty(); })) return false;
  *out = proposals_.front();
  proposals_.pop_front();
  return true;
}

security::Mac ControlPlane::sign(Message message, int sender, const void* body, size_t bytes) const {
  const int32_t m = static_cast<int32_t>(message), s = sender;
  return security::mac(secret_, {{&commTag_, sizeof(commTag_)}, {&m, sizeof(m)}, {&s, sizeof(s)}, {body, bytes}});
}

bool ControlPlane::verify(Message message, int sender, const void* body, size_t bytes,
                          const security::Mac& mac) const {
  const security::Mac expected = sign(message, sender, body, bytes);
  return security::sameBytes(expected.data(), mac.data(), mac.size());
}

security::Secret ControlPlane::derive(const void* salt, size_t bytes) const {
  static const char kLabel[] = "strata derived communicator";
  const security::Mac m = security::mac(secret_, {{kLabel, sizeof(kLabel)}, {&commTag_, sizeof(commTag_)}, {salt, bytes}});
  security::Secret out;
  static_assert(sizeof(out.bytes) <= std::tuple_size<security::Mac>::value, "a MAC holds a secret");
  std::memcpy(out.bytes, m.data(), sizeof(out.bytes));
  return out;
}

}  // namespace strata::fault
