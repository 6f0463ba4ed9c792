// Small blocking-with-deadline socket helpers for the bootstrap network. Data
// transports do not use these; they run non-blocking in the progress engine.
#pragma once

#include <sys/socket.h>

#include <string>

#include "status.h"

namespace strata::boot {

struct SockAddr {
  sockaddr_storage storage;
  socklen_t len = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// "host" or "host:port" (IPv6 as [addr]:port). `port` is used when none is given.
Status resolve(const std::string& host, int port, SockAddr* out);
std::string toString(const SockAddr& addr);
int portOf(const SockAddr& addr);

// The address strata_get_unique_id advertises: STRATA_BOOTSTRAP_ADDR, else
// the first non-loopback IPv4 address that is up, else 127.0.0.1.
Status defaultAdvertisedAddress(SockAddr* out);

// Listens on addr (port 0: any free port; the bound address is written back).
Status listenOn(SockAddr* addr, int* fd);
// Connects, retrying while the listener is not up yet, until the deadline.
Status connectTo(const SockAddr& addr, double deadline, int* fd);

Status sendAll(int fd, const void* data, size_t bytes, double deadline, const char* peer);
Status recvAll(int fd, void* data, size_t bytes, double deadline, const char* peer);

}  // namespace strata::boot
