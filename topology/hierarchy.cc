#include "hierarchy.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace strata::topo {
namespace {

// Groups a socket's ranks by GPU, in ascending bus id.
void buildGpuGroups(const std::vector<HostInfo>& all, Socket& socket) {
  for (int r : socket.ranks) {
    const std::string busId = gpuKey(all[r]);
    if (busId.empty()) continue;
    auto at = std::lower_bound(socket.gpus.begin(), socket.gpus.end(), busId,
                               [](const GpuGroup& g, const std::string& id) { return g.busId < id; });
    if (at == socket.gpus.end() || at->busId != busId) at = socket.gpus.insert(at, {busId, {}});
    at->ranks.push_back(r);
  }
}

// Splits a node's ranks by package, in ascending package with -1 last.
void buildSockets(const std::vector<HostInfo>& all, Node& node, std::vector<int>& socketOf) {
  std::vector<int> packages;
  for (int r : node.ranks) packages.push_back(all[r].package < 0 ? -1 : all[r].package);
  std::sort(packages.begin(), packages.end(), [](int a, int b) {
    return static_cast<unsigned>(a) < static_cast<unsigned>(b);  // -1 sorts last
  });
  packages.erase(std::unique(packages.begin(), packages.end()), packages.end());
  for (int p : packages) node.sockets.push_back({p, {}, {}});
  for (int r : node.ranks) {
    const int p = all[r].package < 0 ? -1 : all[r].package;
    const auto at = std::find(packages.begin(), packages.end(), p) - packages.begin();
    socketOf[r] = static_cast<int>(at);
    node.sockets[at].ranks.push_back(r);
  }
  for (Socket& socket : node.sockets) buildGpuGroups(all, socket);
}

}  // namespace

bool Hierarchy::uniform() const {
  for (const Node& n : nodes)
    if (n.ranks.size() != nodes.front().ranks.size()) return false;
  return true;
}

Hierarchy buildHierarchy(const std::vector<HostInfo>& all) {
  Hierarchy h;
  h.nodeOf.resize(all.size());
  h.localRank.resize(all.size());
  h.socketOf.resize(all.size());
  std::unordered_map<std::string, int> index;
  for (size_t r = 0; r < all.size(); ++r) {
    std::string key = hostKey(all[r]);
    auto [it, added] = index.emplace(key, static_cast<int>(h.nodes.size()));
    if (added) h.nodes.push_back({key, all[r].hostname, {}, {}, {}});
    Node& node = h.nodes[it->second];
    h.nodeOf[r] = it->second;
    h.localRank[r] = static_cast<int>(node.ranks.size());
    node.ranks.push_back(static_cast<int>(r));
    std::string nic(all[r].nic, strnlen(all[r].nic, kNicNameBytes));
    if (!nic.empty() && std::find(node.nics.begin(), node.nics.end(), nic) == node.nics.end())
      node.nics.push_back(nic);
  }
  for (Node& node : h.nodes) buildSockets(all, node, h.socketOf);
  return h;
}

}  // namespace strata::topo
