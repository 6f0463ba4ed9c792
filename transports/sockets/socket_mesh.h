// TCP connections between a rank and each of its peers, set up collectively:
// every rank with peers listens on the interface socket_interface.h picks, the
// listening addresses travel over the out-of-band network, and the lower rank
// of each pair connects to the higher one `perPeer` times. Every connection
// proves the job's secret both ways (security/handshake.h) under a claim of
// transport (`magic`), communicator, rank and index; the higher rank admits
// only the claims it expects, and drops everyone else. The tcp transport carries its data on these
// sockets; the ib transport uses one per peer to exchange queue pair details
// and to learn at once when a peer dies.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <vector>

#include "sockaddr.h"
#include "transport.h"

namespace strata::sockets {

// Where a rank listens, as exchanged over the out-of-band network.
struct ListenRecord {
  sockaddr_storage storage;
  socklen_t len;  // 0: this rank has no peers here and does not listen
};

// The address a peer's record names. The record comes from another process:
// a length that does not match an IPv4 or IPv6 address of its family is
// refused, since it would read past the storage or connect to garbage.
Status decodeListenRecord(const ListenRecord& record, int rank, SockAddr* out);

// fds[peer][k] for k in 0..perPeer-1: blocking, connected sockets for every
// rank of req.peers, -1 elsewhere. The caller owns them. `magic` tells the
// transports' hellos apart.
Status connectMesh(const ConnectRequest& req, uint64_t magic, int perPeer, double deadline,
                   std::vector<std::vector<int>>* fds);

}  // namespace strata::sockets
