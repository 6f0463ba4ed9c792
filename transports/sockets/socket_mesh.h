// TCP connections between a rank and each of its peers, set up collectively:
// every rank with peers listens on the interface socket_interface.h picks, the
// listening addresses travel over the out-of-band network, and the lower rank
// of each pair connects to the higher one `perPeer` times, introducing itself
// with a hello (transport magic, communicator tag, rank, index). Connections
// from anyone else are dropped. The tcp transport carries its data on these
// sockets; the ib transport uses one per peer to exchange queue pair details
// and to learn at once when a peer dies.
#pragma once

#include <cstdint>
#include <vector>

#include "transport.h"

namespace strata::sockets {

// fds[peer][k] for k in 0..perPeer-1: blocking, connected sockets for every
// rank of req.peers, -1 elsewhere. The caller owns them. `magic` tells the
// transports' hellos apart.
Status connectMesh(const ConnectRequest& req, uint64_t magic, int perPeer, double deadline,
                   std::vector<std::vector<int>>* fds);

}  // namespace strata::sockets
