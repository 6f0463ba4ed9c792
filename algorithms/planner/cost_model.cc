#include "cost_model.h"

#include <algorithm>
#include <vector>

namespace strata {

int CostView::mostCrossing(int offset) const {
  if (!shape.layout) return 0;
  const int n = shape.nranks;
  std::vector<int> perNode(nodes(), 0);
  int most = 0;
  for (int pos = 0; pos < n; ++pos)
    if (cross(pos, ((pos + offset) % n + n) % n))
      most = std::max(most, ++perNode[shape.layout->hierarchy.nodeOf[shape.rankAt(pos)]]);
  return most;
}

int CostView::mostPerNode() const {
  if (!shape.layout) return shape.nranks;
  int most = 1;
  for (const auto& node : shape.layout->hierarchy.nodes) most = std::max(most, static_cast<int>(node.ranks.size()));
  return most;
}

}  // namespace strata
