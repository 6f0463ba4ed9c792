// The ranks that share a rank's host, for transports whose resources are
// laid out per local peer (shm's FIFOs, cuda's slots): a sender's FIFO in a
// receiver's segment is found by the sender's position in the receiver's group.
#pragma once

#include <algorithm>
#include <vector>

#include "host.h"

namespace strata {

// Ranks sharing `rank`'s host, ascending (`rank` among them).
inline std::vector<int> hostGroup(const std::vector<topo::HostInfo>& hosts, int rank) {
  std::vector<int> group;
  for (int r = 0; r < static_cast<int>(hosts.size()); ++r)
    if (topo::sameHost(hosts[r], hosts[rank])) group.push_back(r);
  return group;
}

// Position of `rank` in an ascending group.
inline int indexIn(const std::vector<int>& group, int rank) {
  return static_cast<int>(std::lower_bound(group.begin(), group.end(), rank) - group.begin());
}

}  // namespace strata
