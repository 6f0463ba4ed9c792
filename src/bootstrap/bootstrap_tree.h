// The binomial tree the bootstrap runs on, rooted at rank 0. A rank's parent
// is the rank with its lowest set bit cleared, and its subtree is the
// contiguous range [r, r + lowbit(r)), so a gather up the tree is a copy of
// each child's range to its place, with no reordering. Depth and fan-out
// are at most ceil(log2 n).
#pragma once

#include <algorithm>
#include <vector>

namespace strata::boot {

inline int treeParent(int rank) { return rank & (rank - 1); }

// One past the last rank of `rank`'s subtree in a world of n.
inline int subtreeEnd(int rank, int n) { return rank == 0 ? n : std::min(n, rank + (rank & -rank)); }

inline std::vector<int> treeChildren(int rank, int n) {
  std::vector<int> children;
  for (int step = 1; rank + step < subtreeEnd(rank, n); step <<= 1) children.push_back(rank + step);
  return children;
}

}  // namespace strata::boot
