#include "socket_link.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace strata::sockets {

SocketLink::SocketLink(int fd, int peerRank, std::string peerHost)
    : fd_(fd), peerRank_(peerRank), peerHost_(std::move(peerHost)) {}

SocketLink::~SocketLink() { close(fd_); }

std::string SocketLink::peerName() const { return "rank " + std::to_string(peerRank_) + " on " + peerHost_; }

void SocketLink::abort() {
  shutdown(fd_, SHUT_RDWR);
  fail(makeErrorQuiet(STRATA_ERR_REMOTE, "connection to %s aborted by this rank", peerName().c_str()));
}

bool SocketLink::ioFailed(ssize_t n, const char* what) {
  if (n > 0) return false;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if (n == 0) {
    fail(makeErrorQuiet(STRATA_ERR_REMOTE, "%s closed the connection (it failed, aborted or exited)",
                        peerName().c_str()));
  } else {
    int err = errno;
    fail(makeErrorQuiet(STRATA_ERR_REMOTE, "%s to %s failed: %s%s", what, peerName().c_str(), errnoText(err).c_str(),
                        err == ETIMEDOUT ? " (no acknowledgement within STRATA_TIMEOUT: link down?)" : ""));
  }
  return true;
}

}  // namespace strata::sockets
