// A communicator's control plane: a listening socket per rank, apart from
// the bootstrap (whose root may be the rank that died) and from every
// transport (whose connections a failure breaks), through which ranks reach
// each other about the communicator itself: a revoke, a shrink's agreement,
// a pair of ranks connecting at the first call that needs them, and the
// plain question "is that rank's process still there?".
//
// Each rank listens on the interface the tcp transport would use
// (STRATA_SOCKET_IFNAME) from init until the communicator is destroyed, so a
// refused connection means that the process is gone. Every connection proves
// the communicator's secret (security/handshake.h) under a claim naming its
// message, so a stranger can neither revoke a communicator nor vote in its
// shrink. Messages carry no secret: a shrink's new secret is derived by each
// survivor from the parent's (shrink.h).
//
// One thread per communicator serves the listener, sleeping in poll while
// nobody calls: a revoke is acted on at once, whatever the rank is doing; a
// proposal for a shrink waits, its connection open, until this rank takes it.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "oob.h"
#include "op_log.h"
#include "secret.h"
#include "sockaddr.h"
#include "status.h"

namespace strata::fault {

// What a connection to a control plane is for (its claim's `index`).
enum class Message : int32_t {
  Probe = 1,    // nothing: the connection itself says the process lives
  Revoke = 2,   // the sender revoked the communicator
  Propose = 3,  // a shrink proposal follows, and the answer goes back
  Snapshot = 4, // the receiver answers with its operation log (op_log.h)
  Connect = 5,  // the sender needs the pair connected (core/lazy_links.h)
};

// A connection that reached this rank with a proposal, waiting for the
// shrink that takes it. The taker owns fd.
struct Incoming {
  int rank;
  int fd;
};

class ControlPlane {
 public:
  // Collective over `oob` (every rank of the communicator): listens, and
  // learns every rank's address. `onRevoke(rank)` runs on the control
  // plane's thread when `rank` revoked the communicator, and
  // `onConnect(rank, fd)` when `rank` asked to connect the pair (it owns
  // the proven socket `fd` from then on); `log` is what it answers a
  // snapshot request with, read from that thread.
  static Status create(OutOfBand& oob, const security::Secret& secret, uint64_t commTag,
                       std::function<void(int)> onRevoke, std::function<void(int, int)> onConnect, const OpLog& log,
                       std::unique_ptr<ControlPlane>* out);
  ~ControlPlane();
  ControlPlane(const ControlPlane&) = delete;
  ControlPlane& operator=(const ControlPlane&) = delete;

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(addrs_.size()); }

  // One attempt to reach `peer` for `message` before the deadline: a proven,
  // blocking socket in *fd, or STRATA_ERR_REMOTE when nothing listens there
  // any more (the process died or destroyed the communicator) and
  // STRATA_ERR_TIMEOUT when nothing answered (its host or link is down).
  // `patient`: a connection its gate drops unanswered (many ranks asking at
  // once) is tried again until the deadline.
  Status reach(int peer, Message message, double deadline, int* fd, bool patient = false) const;
  // Whether `peer`'s process still serves this communicator.
  bool alive(int peer, double deadline) const;
  // Tells every other rank that this one revoked the communicator, each
  // attempt bounded by `deadline`; returns the ranks that were not reached.
  std::vector<int> sendRevoke(double deadline) const;

  // Every rank's operation log, this rank's included, each asked for before
  // the deadline; nullopt for ranks that did not answer (gone).
  std::vector<std::optional<OpSnapshot>> gatherSnapshots(double deadline) const;

  // The next proposal that reached this rank, waiting until the deadline;
  // false if none came.
  bool nextProposal(double deadline, Incoming* out);

  // Message bodies are signed with the communicator's secret, over the
  // communicator, the message, the sender and the body, so none is worth
  // anything in another place.
  security::Mac sign(Message message, int sender, const void* body, size_t bytes) const;
  bool verify(Message message, int sender, const void* body, size_t bytes, const security::Mac& mac) const;
  // The secret of a communicator made from this one, from a salt that may
  // cross the wire: only holders of this communicator's secret can derive it.
  security::Secret derive(const void* salt, size_t bytes) const;

 private:
  ControlPlane() = default;
  void serve();
  std::optional<OpSnapshot> askSnapshot(int peer, double deadline) const;

  int rank_ = 0;
  uint64_t commTag_ = 0;
  security::Secret secret_{};
  std::vector<SockAddr> addrs_;
  std::function<void(int)> onRevoke_;
  std::function<void(int, int)> onConnect_;
  const OpLog* log_ = nullptr;
  int listenFd_ = -1;
  int wakeFd_ = -1;
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::deque<Incoming> proposals_;
};

}  // namespace strata::fault
