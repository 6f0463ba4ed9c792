// Blocking-with-deadline socket helpers for connection setup (the bootstrap
// network, and transports while they connect). Data paths never block: they
// use non-blocking sockets in the progress engine.
#pragma once

#include <sys/socket.h>

#include <string>

#include "sockaddr.h"
#include "status.h"

namespace strata::net {

// "host" or "host:port" (IPv6 as [addr]:port). `port` is used when none is given.
Status resolve(const std::string& host, int port, SockAddr* out);

// The address strata_get_unique_id advertises: STRATA_BOOTSTRAP_ADDR, else
// the first non-loopback IPv4 address that is up, else 127.0.0.1.
Status defaultAdvertisedAddress(SockAddr* out);

// Listens on addr (port 0: any free port; the bound address is written back).
// inUseHint replaces the MASTER_PORT advice when the address is taken.
Status listenOn(SockAddr* addr, int* fd, const char* inUseHint = nullptr);
// Connects, retrying while the listener is not up yet, until the deadline.
// `peer` names who listens there, for the error message. Without `retry`,
// one attempt: a refusal fails at once (STRATA_ERR_REMOTE), for callers that
// know the listener was up and ask whether its process still is.
Status connectTo(const SockAddr& addr, double deadline, const char* peer, int* fd, bool retry = true);

// A retry's pause, spread over [pause/2, 3 pause/2): thousands of ranks
// refused by a root that is not listening yet (or whose gate dropped them)
// would otherwise come back in lockstep, as one herd, every time.
double jittered(double pause);

Status sendAll(int fd, const void* data, size_t bytes, double deadline, const char* peer);
Status recvAll(int fd, void* data, size_t bytes, double deadline, const char* peer);

}  // namespace strata::net
