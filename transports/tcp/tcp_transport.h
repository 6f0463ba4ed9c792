// TCP between ranks that share no memory (other hosts, or any pair with
// STRATA_TRANSPORT=tcp). The sockets service (socket_mesh.h) connects every
// pair: for each channel, the lower rank of each pair connects to the higher
// and introduces itself; one connection per (pair, channel) then carries
// both directions. See README.md.
#pragma once

#include "transport.h"

namespace strata::tcp {

class TcpTransport final : public Transport {
 public:
  const char* name() const override { return "tcp"; }
  bool canConnect(const topo::HostInfo&, const topo::HostInfo&) const override { return true; }
  // A socket per peer, channel and STRATA_NSOCKS, against the descriptors
  // this process may still open (ulimit -n).
  std::string shortOf(const ConnectRequest& req, size_t npeers) const override;
  // Per peer and channel: a ring of slots each way, a read-ahead buffer per socket.
  uint64_t mostHeld(const ConnectRequest& req, size_t npeers) const override;
  Status connect(const ConnectRequest& req, Connections& out) override;
  // Each call listens on its own port and keeps no state between calls.
  bool connectsPairs() const override { return true; }
};

}  // namespace strata::tcp
