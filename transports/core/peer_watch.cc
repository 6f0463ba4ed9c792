#include "peer_watch.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace strata {

PeerWatch::PeerWatch(int rank, int pid, bool samePidNamespace) : rank_(rank), pid_(pid) {
  // A pidfd turns readable when the process exits, even before its parent
  // reaps it (kill(pid, 0) would still succeed on the zombie).
  if (samePidNamespace) pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
}

PeerWatch::~PeerWatch() {
  if (pidfd_ >= 0) close(pidfd_);
}

Status PeerWatch::check() {
  if (pidfd_ < 0) return Status::ok();
  pollfd p{pidfd_, POLLIN, 0};
  if (poll(&p, 1, 0) > 0)
    return makeErrorQuiet(STRATA_ERR_REMOTE, "rank %d (pid %d on this host) exited", rank_, pid_);
  return Status::ok();
}

}  // namespace strata
