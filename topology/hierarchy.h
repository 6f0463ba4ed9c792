// The job's hierarchy as every rank sees it after the bootstrap: cluster >
// node (host) > socket (package) > GPU > rank. Built from every rank's HostInfo
// alone, so all ranks build the same one without talking further. Algorithms
// read it to keep traffic inside a node, or a socket, where they can.
#pragma once

#include <string>
#include <vector>

#include "host.h"

namespace strata::topo {

// A socket's ranks using one GPU (several ranks may share one). Grouped
// within the socket of the ranks' cpus: ranks bound to different packages
// that share a GPU show it under each socket.
struct GpuGroup {
  std::string busId;       // HostInfo::gpu
  std::vector<int> ranks;  // ascending
};

// A node's ranks bound within one package. Package -1 gathers the ranks
// whose cpus span several packages or whose package is unknown.
struct Socket {
  int package;
  std::vector<int> ranks;      // ascending
  std::vector<GpuGroup> gpus;  // by bus id; ranks without a GPU are in none
};

struct Node {
  std::string hostKey;
  std::string hostname;
  std::vector<int> ranks;          // ascending
  std::vector<Socket> sockets;     // ascending package, the -1 entry (if any) last
  std::vector<std::string> nics;   // its ranks' nearest NICs, each once, in rank order
};

struct Hierarchy {
  std::vector<Node> nodes;     // in order of their lowest rank
  std::vector<int> nodeOf;     // rank -> index into nodes
  std::vector<int> localRank;  // rank -> position in its node's ranks
  std::vector<int> socketOf;   // rank -> index into its node's sockets

  int nranks() const { return static_cast<int>(nodeOf.size()); }
  // Same number of ranks on every node.
  bool uniform() const;
};

Hierarchy buildHierarchy(const std::vector<HostInfo>& all);

}  // namespace strata::topo
