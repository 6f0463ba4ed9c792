// The tree the tree allreduce builds over the nodes (its node leaders), and
// how many times a chunk crosses between nodes on its way.
//
// Either a binary heap rooted at node 0 (node k's children are 2k+1 and
// 2k+2): a chunk goes up to the root and back down, 2 * depth crossings. Or
// two roots, nodes 0 and 1, each with a heap below it (node k's children are
// 2k+2 and 2k+3), that swap their partial results and both finish the value:
// 2 * depth + 1 crossings with a shallower depth. Two nodes cross once
// instead of twice; 4 to 6 nodes 3 times instead of 4. Each node's link still
// carries the buffer once each way. Every rank picks the same shape from the
// node count alone.
#pragma once

#include <array>

namespace strata {

class NodeTree {
 public:
  static NodeTree of(int nodes) {
    NodeTree t;
    t.nodes_ = nodes;
    const int heapCrossings = 2 * log2Floor(nodes);
    t.paired_ = nodes >= 2 && 2 * (log2Floor(nodes + 1) - 1) + 1 < heapCrossings;
    return t;
  }

  bool pairedRoots() const { return paired_; }
  // The node a node's leader sends its partial result to, -1 for a root.
  int parent(int node) const {
    if (paired_) return node < 2 ? -1 : (node - 2) / 2;
    return node == 0 ? -1 : (node - 1) / 2;
  }
  // The other root a root swaps partial results with, -1 if none.
  int partner(int node) const { return paired_ && node < 2 ? 1 - node : -1; }
  // Child nodes, in folding order; entries >= nodes do not exist.
  std::array<int, 2> children(int node) const {
    const int first = paired_ ? 2 * node + 2 : 2 * node + 1;
    return {first, first + 1};
  }
  // Times a chunk crosses between nodes before every node has its value.
  int crossings() const {
    if (nodes_ <= 1) return 0;
    return paired_ ? 2 * (log2Floor(nodes_ + 1) - 1) + 1 : 2 * log2Floor(nodes_);
  }

 private:
  // Depth of node k: floor(log2(k + 1)) in the heap, floor(log2(k + 2)) - 1
  // below a pair of roots; the last node is the deepest.
  static int log2Floor(int v) {
    int d = 0;
    while (v >>= 1) ++d;
    return d;
  }

  int nodes_ = 1;
  bool paired_ = false;
};

}  // namespace strata
