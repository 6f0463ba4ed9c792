// A made-up rank's HostInfo for the hierarchy and description tests: host
// id, hostname, package and nearest NIC as given, on a 2-package, 4-core host.
#pragma once

#include <cstring>

#include "host.h"

namespace strata::topo {

inline HostInfo rankOn(const char* id, const char* hostname, int package, const char* nic = "") {
  HostInfo h;
  std::memset(&h, 0, sizeof(h));
  std::strncpy(h.hostId, id, sizeof(h.hostId) - 1);
  std::strncpy(h.hostname, hostname, sizeof(h.hostname) - 1);
  std::strncpy(h.nic, nic, sizeof(h.nic) - 1);
  h.package = package;
  h.numaNode = package < 0 ? -1 : 0;
  h.packages = 2;
  h.numaNodes = 2;
  h.cores = 4;
  h.pus = 4;
  h.cpusAllowed = 1;
  return h;
}

}  // namespace strata::topo
