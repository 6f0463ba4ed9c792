// A connected socket to one peer and its sticky error, shared by whoever
// uses it: the tcp transport's two connectors on one connection, or the ib
// links of one peer, for which it is the side channel whose end-of-stream
// says the peer died. Any thread may fail or abort it (an abort comes from
// whichever thread handles the communicator's failure) while another drives it.
#pragma once

#include <sys/types.h>

#include <string>

#include "link_error.h"

namespace strata::sockets {

class SocketLink : public LinkError {
 public:
  // Takes ownership of `fd`.
  SocketLink(int fd, int peerRank, std::string peerHost);
  ~SocketLink();
  SocketLink(const SocketLink&) = delete;
  SocketLink& operator=(const SocketLink&) = delete;

  int fd() const { return fd_; }
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
};

}  // namespace strata::sockets
