#include "layout.h"

namespace strata {

Layout Layout::of(topo::Hierarchy hierarchy) {
  Layout l;
  l.hierarchy = std::move(hierarchy);
  const int n = l.hierarchy.nranks();
  l.posOf.resize(n);
  auto place = [&l](int r) {
    l.posOf[r] = static_cast<int>(l.order.size());
    l.order.push_back(r);
  };
  for (const topo::Node& node : l.hierarchy.nodes) {
    if (node.sockets.empty()) {
      for (int r : node.ranks) place(r);
      continue;
    }
    for (const topo::Socket& socket : node.sockets)
      for (int r : socket.ranks) place(r);
  }
  return l;
}

Layout Layout::blocks(int n, int nodes) {
  topo::Hierarchy h;
  h.nodeOf.resize(n);
  h.localRank.resize(n);
  for (int r = 0; r < n; ++r) {
    const int k = static_cast<int>(static_cast<long long>(r) * nodes / n);
    if (static_cast<int>(h.nodes.size()) <= k) h.nodes.resize(k + 1);
    topo::Node& node = h.nodes[k];
    if (node.hostKey.empty()) node.hostKey = node.hostname = "node" + std::to_string(k);
    h.nodeOf[r] = k;
    h.localRank[r] = static_cast<int>(node.ranks.size());
    node.ranks.push_back(r);
  }
  return of(std::move(h));
}

}  // namespace strata
