#include "hierarchy.h"

#include <unordered_map>

namespace strata::topo {

bool Hierarchy::uniform() const {
  for (const Node& n : nodes)
    if (n.ranks.size() != nodes.front().ranks.size()) return false;
  return true;
}

Hierarchy buildHierarchy(const std::vector<HostInfo>& all) {
  Hierarchy h;
  h.nodeOf.resize(all.size());
  h.localRank.resize(all.size());
  std::unordered_map<std::string, int> index;
  for (size_t r = 0; r < all.size(); ++r) {
    std::string key = hostKey(all[r]);
    auto [it, added] = index.emplace(key, static_cast<int>(h.nodes.size()));
    if (added) h.nodes.push_back({key, all[r].hostname, {}});
    Node& node = h.nodes[it->second];
    h.nodeOf[r] = it->second;
    h.localRank[r] = static_cast<int>(node.ranks.size());
    node.ranks.push_back(static_cast<int>(r));
  }
  return h;
}

}  // namespace strata::topo
