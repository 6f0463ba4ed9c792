// Socket addresses (IPv4 or IPv6) as plain values: what the bootstrap and
// the network transports exchange and print.
#pragma once

#include <sys/socket.h>

#include <string>

namespace strata {

struct SockAddr {
  sockaddr_storage storage;
  socklen_t len = 0;
  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
};

// "10.0.0.1:29500" or "[fe80::1]:29500"
std::string toString(const SockAddr& addr);
int portOf(const SockAddr& addr);

}  // namespace strata
