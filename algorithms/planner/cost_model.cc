#include "cost_model.h"

#include <algorithm>

namespace strata {

int CostView::mostPerNode() const {
  if (!shape.layout) return shape.nranks;
  int most = 1;
  for (const auto& node : shape.layout->hierarchy.nodes) most = std::max(most, static_cast<int>(node.ranks.size()));
  return most;
}

}  // namespace strata
