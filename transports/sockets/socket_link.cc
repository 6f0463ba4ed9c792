#include "socket_link.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "tls_session.h"

namespace strata::sockets {

SocketLink::SocketLink(int fd, int peerRank, std::string peerHost)
    : fd_(fd), peerRank_(peerRank), peerHost_(std::move(peerHost)) {}

SocketLink::~SocketLink() {
  tls_.reset();  // its close_notify goes out on fd_ first
  close(fd_);
}

void SocketLink::setTls(std::unique_ptr<security::TlsSession> session) { tls_ = std::move(session); }

ssize_t SocketLink::send(const iovec* iov, int iovcnt) {
  if (tls_) return tls_->writev(iov, iovcnt);
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(iov);
  msg.msg_iovlen = static_cast<size_t>(iovcnt);
  return sendmsg(fd_, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
}

ssize_t SocketLink::recv(void* data, size_t bytes) {
  if (tls_) return tls_->read(data, bytes);
  return ::recv(fd_, data, bytes, MSG_DONTWAIT);
}

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
    // A TLS failure's errno (EPROTO) says little; OpenSSL's reason says what.
    const std::string why = tls_ && !tls_->lastError().empty() ? "TLS: " + tls_->lastError() : errnoText(err);
    fail(makeErrorQuiet(STRATA_ERR_REMOTE, "%s to %s failed: %s%s", what, peerName().c_str(), why.c_str(),
                        err == ETIMEDOUT ? " (no acknowledgement within STRATA_TIMEOUT: link down?)" : ""));
  }
  return true;
}

}  // namespace strata::sockets
