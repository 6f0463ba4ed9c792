// Which network interface (and address) socket_mesh.h listens on, for the
// tcp transport's connections and ib's side channel alike, chosen like
// NCCL_SOCKET_IFNAME: STRATA_SOCKET_IFNAME lists name prefixes ("eth,ens"),
// exact names ("=eth0") or excluded prefixes ("^docker,lo"). Without it, any
// interface that is up except loopback and docker*, falling back to loopback
// when there is nothing else. IPv4 addresses are preferred to IPv6 (link-local
// IPv6 addresses are never used: they need a scope to be reachable).
#pragma once

#include <string>

#include "sockaddr.h"
#include "status.h"

namespace strata::sockets {

struct Interface {
  std::string name;
  SockAddr addr;  // port 0
};

Status chooseInterface(const std::string& spec, Interface* out);

// True if interface `name` passes the STRATA_SOCKET_IFNAME-style `spec`.
bool interfaceMatches(const std::string& spec, const std::string& name);

}  // namespace strata::sockets
