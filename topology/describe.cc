#include "describe.h"

#include <cstdio>
#include <cstring>
#include <set>
#include <type_traits>

#include "gpus.h"

namespace strata::topo {
namespace {

std::string count(long n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string bytesText(uint64_t b) {
  char text[32];
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) std::snprintf(text, sizeof(text), "%llu GiB", (unsigned long long)(b >> 30));
  else if (b >= (1ull << 20) && b % (1ull << 20) == 0) std::snprintf(text, sizeof(text), "%llu MiB", (unsigned long long)(b >> 20));
  else if (b >= (1ull << 10) && b % (1ull << 10) == 0) std::snprintf(text, sizeof(text), "%llu KiB", (unsigned long long)(b >> 10));
  else std::snprintf(text, sizeof(text), "%llu B", (unsigned long long)b);
  return text;
}

std::string field(const char* text, size_t bytes) { return std::string(text, strnlen(text, bytes)); }

template <typename T>
std::string jsonArray(const std::vector<T>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ",";
    if constexpr (std::is_same_v<T, std::string>) out += jsonQuote(items[i]);
    else out += std::to_string(items[i]);
  }
  return out + "]";
}

// The length of the well-formed UTF-8 sequence at s[i..n), or 0 if there is
// none. Well-formed as RFC 3629 has it, which JSON parsers hold a document
// to: no overlong forms (C0, C1, E0 80..9F, F0 80..8F), no UTF-16
// surrogates (ED A0..BF) and nothing past U+10FFFF (F4 90.., F5..FF).
size_t utf8Length(const unsigned char* s, size_t i, size_t n) {
  const unsigned char c = s[i];
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    len = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    len = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    len = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  }
  if (len == 0 || i + len > n || s[i + 1] < lo || s[i + 1] > hi) return 0;
  for (size_t k = 2; k < len; ++k)
    if ((s[i + k] & 0xc0) != 0x80) return 0;
  return len;
}

std::string deviceText(const IoDevice& d) {
  std::string s = d.name;
  if (!d.subtype.empty()) s += " [" + d.subtype + "]";
  s += " (";
  if (!d.pciBusId.empty()) s += "pci " + d.pciBusId + ", ";
  s += d.package >= 0 ? "package " + std::to_string(d.package) : std::string("no single package");
  if (d.numa >= 0) s += ", NUMA " + std::to_string(d.numa);
  return s + ")";
}

std::string devicesText(const std::vector<IoDevice>& devices) {
  if (devices.empty()) return "none";
  std::string s;
  for (const IoDevice& d : devices) s += (s.empty() ? "" : "; ") + deviceText(d);
  return s;
}

std::string devicesJson(const std::vector<IoDevice>& devices) {
  std::string out = "[";
  for (size_t i = 0; i < devices.size(); ++i) {
    const IoDevice& d = devices[i];
    out += std::string(i ? "," : "") + "{\"name\":" + jsonQuote(d.name) + ",\"subtype\":" + jsonQuote(d.subtype) +
           ",\"pciBusId\":" + jsonQuote(d.pciBusId) + ",\"package\":" + std::to_string(d.package) +
           ",\"numa\":" + std::to_string(d.numa) + "}";
  }
  return out + "]";
}

// nvidia-smi topo -m's matrix: X on the diagonal, the link class elsewhere.
std::string gpuLinkText(const Machine& m, int a, int b) {
  return a == b ? "X" : linkText(gpuLink(m, a, b), nvlinkLanes(m, a, b));
}

std::string gpuLinkMatrix(const Machine& m) {
  return "  gpu links (nvlink: " + m.nvlinkSource + "):\n" +
         matrixText(static_cast<int>(m.gpus.size()), [&](int a, int b) { return gpuLinkText(m, a, b); }) + "\n";
}

std::string gpuLinksJson(const Machine& m) {
  const int n = static_cast<int>(m.gpus.size());
  std::string out = "[";
  for (int a = 0; a < n; ++a) {
    std::vector<std::string> row;
    for (int b = 0; b < n; ++b) row.push_back(gpuLinkText(m, a, b));
    out += (a ? "," : "") + jsonArray(row);
  }
  return out + "]";
}

}  // namespace

std::string matrixText(int n, const std::function<std::string(int row, int col)>& cell) {
  std::string out = "      ";
  char text[32];
  for (int b = 0; b < n; ++b) {
    std::snprintf(text, sizeof(text), "%6d", b);
    out += text;
  }
  for (int a = 0; a < n; ++a) {
    std::snprintf(text, sizeof(text), "\n%6d", a);
    out += text;
    for (int b = 0; b < n; ++b) {
      std::snprintf(text, sizeof(text), "%6s", cell(a, b).c_str());
      out += text;
    }
  }
  return out;
}

std::string jsonQuote(const std::string& text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  std::string out = "\"";
  for (size_t i = 0; i < n;) {
    const unsigned char c = s[i];
    const size_t len = utf8Length(s, i, n);
    if (len == 0) {
      out += "\\ufffd";
      ++i;
      continue;
    }
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", c);
      out += esc;
    } else {
      out.append(text, i, len);
    }
    i += len;
  }
  return out + "\"";
}

std::string describeTree(const Hierarchy& h, const std::vector<HostInfo>& all) {
  // Hosts told apart only by STRATA_HOSTID share a hostname: show their ids.
  std::set<std::string> names, shared;
  for (const Node& node : h.nodes)
    if (!names.insert(node.hostname).second) shared.insert(node.hostname);

  std::string out = "cluster: " + count(static_cast<long>(h.nodes.size()), "node", "nodes") + ", " +
                    count(h.nranks(), "rank", "ranks") + "\n";
  for (size_t n = 0; n < h.nodes.size(); ++n) {
    const Node& node = h.nodes[n];
    const HostInfo& host = all[node.ranks.front()];
    out += "  node " + std::to_string(n) + " " + node.hostname;
    if (shared.count(node.hostname)) out += " [host id " + node.hostKey + "]";
    out += " (" + count(host.packages, "package", "packages") + ", " + std::to_string(host.numaNodes) +
           " NUMA, " + count(host.cores, "core", "cores") + ", " + count(host.pus, "PU", "PUs") + ", ";
    if (node.nics.empty()) out += "no nic";
    else out += node.nics.size() == 1 ? "nic" : "nics";
    for (const std::string& nic : node.nics) out += " " + nic;
    const std::string rdma = field(host.rdma, sizeof(host.rdma));
    if (!rdma.empty()) out += ", rdma " + rdma;
    out += ")\n";
    for (const Socket& socket : node.sockets) {
      out += socket.package >= 0 ? "    socket " + std::to_string(socket.package) + ":" : std::string("    socket ?:");
      out += socket.ranks.size() == 1 ? " rank" : " ranks";
      for (int r : socket.ranks) out += " " + std::to_string(r);
      if (socket.package < 0) out += " (cpus span packages, or the package is unknown)";
      out += "\n";
      for (const GpuGroup& gpu : socket.gpus) {
        out += "      gpu " + gpu.busId + ":" + (gpu.ranks.size() == 1 ? " rank" : " ranks");
        for (int r : gpu.ranks) out += " " + std::to_string(r);
        out += "\n";
      }
    }
  }
  return out;
}

std::string describeJson(const Hierarchy& h, const std::vector<HostInfo>& all) {
  std::string out = "{\"nranks\":" + std::to_string(h.nranks()) + ",\"nodes\":[";
  for (size_t n = 0; n < h.nodes.size(); ++n) {
    const Node& node = h.nodes[n];
    const HostInfo& host = all[node.ranks.front()];
    out += std::string(n ? "," : "") + "{\"node\":" + std::to_string(n) + ",\"hostname\":" +
           jsonQuote(node.hostname) + ",\"hostId\":" + jsonQuote(node.hostKey) +
           ",\"packages\":" + std::to_string(host.packages) + ",\"numaNodes\":" + std::to_string(host.numaNodes) +
           ",\"cores\":" + std::to_string(host.cores) + ",\"pus\":" + std::to_string(host.pus) +
           ",\"nics\":" + jsonArray(node.nics) + ",\"ranks\":" + jsonArray(node.ranks) + ",\"sockets\":[";
    for (size_t s = 0; s < node.sockets.size(); ++s) {
      out += std::string(s ? "," : "") + "{\"package\":" + std::to_string(node.sockets[s].package) +
             ",\"ranks\":" + jsonArray(node.sockets[s].ranks) + ",\"gpus\":[";
      for (size_t g = 0; g < node.sockets[s].gpus.size(); ++g)
        out += std::string(g ? "," : "") + "{\"busId\":" + jsonQuote(node.sockets[s].gpus[g].busId) +
               ",\"ranks\":" + jsonArray(node.sockets[s].gpus[g].ranks) + "}";
      out += "]}";
    }
    out += "]}";
  }
  out += "],\"ranks\":[";
  for (int r = 0; r < h.nranks(); ++r) {
    const HostInfo& host = all[r];
    out += std::string(r ? "," : "") + "{\"rank\":" + std::to_string(r) + ",\"node\":" +
           std::to_string(h.nodeOf[r]) + ",\"localRank\":" + std::to_string(h.localRank[r]) +
           ",\"socket\":" + std::to_string(h.socketOf[r]) + ",\"package\":" + std::to_string(host.package) +
           ",\"numaNode\":" + std::to_string(host.numaNode) + ",\"cpusAllowed\":" +
           std::to_string(host.cpusAllowed) + ",\"nic\":" + jsonQuote(field(host.nic, kNicNameBytes)) +
           ",\"rdma\":" + jsonQuote(field(host.rdma, sizeof(host.rdma))) + ",\"gpu\":" + jsonQuote(gpuKey(host)) +
           ",\"pid\":" + std::to_string(host.pid) + "}";
  }
  return out + "]}";
}

std::string describeMachine(const TopologyProbe& probe) {
  const Machine& m = probe.machine;
  const Placement& p = probe.placement;
  std::string out = "machine: " + m.source + "\n";
  out += "  " + count(m.packages, "package", "packages") + ", " +
         count(m.numaNodes, "NUMA node", "NUMA nodes") + ", " + count(m.cores, "core", "cores") + ", " +
         count(m.pus, "PU", "PUs") + "\n";
  std::string caches;
  if (m.l1dBytes) caches += "L1d " + bytesText(m.l1dBytes);
  if (m.l2Bytes) caches += (caches.empty() ? "" : ", ") + std::string("L2 ") + bytesText(m.l2Bytes);
  if (!caches.empty()) caches += " (first core)";
  for (size_t pkg = 0; pkg < m.l3BytesPerPackage.size(); ++pkg)
    if (m.l3BytesPerPackage[pkg])
      caches += (caches.empty() ? "" : "; ") + std::string("L3 ") + bytesText(m.l3BytesPerPackage[pkg]) +
                " in package " + std::to_string(pkg);
  out += "  caches: " + (caches.empty() ? std::string("unknown") : caches) + "\n";
  out += "  nics: " + devicesText(m.nics) + "\n";
  out += "  rdma: " + devicesText(m.rdma) + "\n";
  out += "  gpus: " + devicesText(m.gpus) + "\n";
  if (m.gpus.size() > 1) out += gpuLinkMatrix(m);
  if (m.numaDistances.empty()) {
    out += "  NUMA distances: none reported\n";
  } else {
    out += "  NUMA distances:\n      ";
    char cell[16];
    for (int j = 0; j < m.numaNodes; ++j) {
      std::snprintf(cell, sizeof(cell), "%5d", j);
      out += cell;
    }
    for (int i = 0; i < m.numaNodes; ++i) {
      std::snprintf(cell, sizeof(cell), "\n  %4d", i);
      out += cell;
      for (int j = 0; j < m.numaNodes; ++j) {
        std::snprintf(cell, sizeof(cell), "%5llu", (unsigned long long)m.numaDistances[size_t(i) * m.numaNodes + j]);
        out += cell;
      }
    }
    out += "\n";
  }
  out += "this rank: cpus " + (p.cpus.empty() ? std::string("(none in the topology)") : p.cpus) +
         (p.fromTopoCpus ? " (STRATA_TOPO_CPUS)" : " (affinity mask)") + ", package " +
         (p.package >= 0 ? std::to_string(p.package) : std::string("?")) + ", NUMA node " +
         (p.numa >= 0 ? std::to_string(p.numa) : std::string("?")) + ", nearest nic " +
         (p.nic.empty() ? std::string("none") : p.nic) + "\n";
  return out;
}

std::string describeMachineJson(const TopologyProbe& probe) {
  const Machine& m = probe.machine;
  const Placement& p = probe.placement;
  return "{\"source\":" + jsonQuote(m.source) + ",\"packages\":" + std::to_string(m.packages) +
         ",\"numaNodes\":" + std::to_string(m.numaNodes) + ",\"cores\":" + std::to_string(m.cores) +
         ",\"pus\":" + std::to_string(m.pus) + ",\"l1dBytes\":" + std::to_string(m.l1dBytes) +
         ",\"l2Bytes\":" + std::to_string(m.l2Bytes) + ",\"l3BytesPerPackage\":" + jsonArray(m.l3BytesPerPackage) +
         ",\"nics\":" + devicesJson(m.nics) + ",\"rdma\":" + devicesJson(m.rdma) + ",\"gpus\":" +
         devicesJson(m.gpus) + ",\"gpuLinks\":" + gpuLinksJson(m) + ",\"nvlinkSource\":" + jsonQuote(m.nvlinkSource) +
         ",\"numaDistances\":" + jsonArray(m.numaDistances) + ",\"placement\":{\"cpus\":" +
         jsonQuote(p.cpus) + ",\"fromTopoCpus\":" + (p.fromTopoCpus ? "true" : "false") + ",\"package\":" +
         std::to_string(p.package) + ",\"numa\":" + std::to_string(p.numa) + ",\"nic\":" + jsonQuote(p.nic) + "}}";
}

}  // namespace strata::topo
