// Where the ranks are, as the algorithms need it: which share a node, and an
// order that keeps each node's ranks together (node-major) and, within a
// node, each socket's, so that a ring walked in it crosses between nodes
// once per node and between sockets once per socket, and recursive doubling
// pairs ranks of one socket, then of one node, before ranks of different
// nodes. With ranks numbered node by node and socket by socket (what
// launchers do) the order is rank order.
#pragma once

#include <vector>

#include "hierarchy.h"

namespace strata {

struct Layout {
  topo::Hierarchy hierarchy;
  std::vector<int> order;  // position -> rank
  std::vector<int> posOf;  // rank -> position

  static Layout of(topo::Hierarchy hierarchy);
  // n ranks on `nodes` nodes of consecutive ranks, sizes as even as possible
  // (tests and models).
  static Layout blocks(int n, int nodes);

  int nodes() const { return static_cast<int>(hierarchy.nodes.size()); }
  bool crossesNodes(int a, int b) const { return hierarchy.nodeOf[a] != hierarchy.nodeOf[b]; }
};

}  // namespace strata
