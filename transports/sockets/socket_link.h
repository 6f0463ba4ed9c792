// A connected socket to one peer and its sticky error, shared by whoever
// uses it: the tcp transport's two connectors on one connection, or the ib
// links of one peer, for which it is the side channel whose end-of-stream
// says the peer died. Any thread may fail or abort it (an abort comes from
// whichever thread handles the communicator's failure) while another drives it.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <memory>
#include <string>

#include "link_error.h"

namespace strata::security {
class TlsSession;
}

namespace strata::sockets {

class SocketLink : public LinkError {
 public:
  // Takes ownership of `fd`.
  SocketLink(int fd, int peerRank, std::string peerHost);
  ~SocketLink();
  SocketLink(const SocketLink&) = delete;
  SocketLink& operator=(const SocketLink&) = delete;

  int fd() const { return fd_; }
  // STRATA_TLS: from here on every byte goes through `session`, which must
  // be over fd() and have shaken hands. The link owns it.
  void setTls(std::unique_ptr<security::TlsSession> session);
  security::TlsSession* tls() const { return tls_.get(); }
  // Non-blocking I/O with send/recv's results, through TLS when the link has
  // it: bytes moved, 0 when the peer closed (recv), -1 with errno (EAGAIN:
  // try again later; after a send's EAGAIN, offer the same bytes again).
  ssize_t send(const iovec* iov, int iovcnt);
  ssize_t recv(void* data, size_t bytes);
  // Shuts the socket down both ways: the peer reads end-of-stream at once.
  void abort();
  // Classifies the result of a send or recv on the socket: false if it
  // moved bytes or would block, else records why the link failed (the peer
  // closed it, or the error) and returns true.
  bool ioFailed(ssize_t n, const char* what);
  std::string peerName() const;

 private:
  int fd_;
  int peerRank_;
  std::string peerHost_;
  std::unique_ptr<security::TlsSession> tls_;
};

}  // namespace strata::sockets
