// Tells whether a process on this host still runs, for transports whose own
// channel does not report a dead peer (shared memory; UCX over shared
// memory). Shared by all connectors to the same peer.
#pragma once

#include "status.h"

namespace strata {

class PeerWatch {
 public:
  // Watches nothing (check() is always OK) when the pid means nothing here.
  PeerWatch(int rank, int pid, bool samePidNamespace);
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;
  bool watching() const { return pidfd_ >= 0; }
  Status check();
  int rank() const { return rank_; }

 private:
  int rank_;
  int pid_;
  int pidfd_ = -1;
};

}  // namespace strata
