// The job's hierarchy as every rank sees it after the bootstrap: cluster >
// node (host) > rank. Built from every rank's HostInfo alone, so all ranks
// build the same one without talking further. Algorithms read it to keep
// traffic inside a node where they can.
#pragma once

#include <string>
#include <vector>

#include "host.h"

namespace strata::topo {

struct Node {
  std::string hostKey;
  std::string hostname;
  std::vector<int> ranks;  // ascending
};

struct Hierarchy {
  std::vector<Node> nodes;     // in order of their lowest rank
  std::vector<int> nodeOf;     // rank -> index into nodes
  std::vector<int> localRank;  // rank -> position in its node's ranks

  int nranks() const { return static_cast<int>(nodeOf.size()); }
  // Same number of ranks on every node.
  bool uniform() const;
};

Hierarchy buildHierarchy(const std::vector<HostInfo>& all);

}  // namespace strata::topo
