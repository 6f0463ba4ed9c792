#include "hwloc_probe.h"

#include <hwloc.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>

#include "gpus.h"
#include "hwloc_places.h"
#include "log.h"
#include "params.h"
#include "status.h"

namespace strata::topo {

int containing(hwloc_topology_t t, hwloc_obj_type_t type, hwloc_const_cpuset_t set) {
  if (hwloc_bitmap_iszero(set)) return -1;
  int found = -1;
  const int n = hwloc_get_nbobjs_by_type(t, type);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t o = hwloc_get_obj_by_type(t, type, i);
    if (!o->cpuset || !hwloc_bitmap_isincluded(set, o->cpuset)) continue;
    if (found >= 0) return -1;
    found = static_cast<int>(o->logical_index);
  }
  return found;
}

hwloc_const_cpuset_t locality(hwloc_topology_t t, hwloc_obj_t io) {
  return hwloc_get_non_io_ancestor_obj(t, io)->cpuset;
}

namespace {

constexpr long kMaxCpu = 1 << 20;  // far above any machine; bounds the bitmap
constexpr const char* kThisMachine = "this machine";  // Machine::source when nothing was injected

// A loaded topology with what strata asks of every machine (its I/O devices,
// and the whole host's cpus, not just the ones this process may use), or null
// with errno set when `select` (the source) or the load fails.
hwloc_topology_t loadWith(const std::function<int(hwloc_topology_t)>& select) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0) return nullptr;
  int rc = hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (rc == 0) rc = hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  // hwloc's own Linux backend finds PCI devices in sysfs; its libpciaccess
  // component finds the same ones and also parses pci.ids for their names,
  // which costs 0.1 s per process here, and seconds under AddressSanitizer.
  if (rc == 0) hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
  if (rc == 0) rc = select(t);
  if (rc == 0) rc = hwloc_topology_load(t);
  if (rc != 0) {
    const int err = errno;
    hwloc_topology_destroy(t);
    errno = err;
    return nullptr;
  }
  return t;
}

// The topology STRATA_TOPO_FILE / STRATA_TOPO_SYNTHETIC ask for, else (or
// when hwloc refuses them) the real machine. Null only if even that fails.
hwloc_topology_t loadTopology(const std::string& file, const std::string& synthetic, std::string* source) {
  hwloc_topology_t t = nullptr;
  if (!file.empty()) {
    t = loadWith([&](hwloc_topology_t x) { return hwloc_topology_set_xml(x, file.c_str()); });
    if (t) *source = "file '" + file + "'";
    else
      STRATA_WARN(TOPO, "STRATA_TOPO_FILE='%s' is not a readable hwloc XML topology (%s); "
                  "probing this machine instead", file.c_str(), errnoText(errno).c_str());
  } else if (!synthetic.empty()) {
    t = loadWith([&](hwloc_topology_t x) { return hwloc_topology_set_synthetic(x, synthetic.c_str()); });
    if (t) *source = "synthetic '" + synthetic + "'";
    else
      STRATA_WARN(TOPO, "STRATA_TOPO_SYNTHETIC='%s' is not a valid hwloc synthetic topology (e.g. "
                  "\"package:2 core:2 pu:1\"); probing this machine instead", synthetic.c_str());
  }
  if (t) return t;
  t = loadWith([](hwloc_topology_t) { return 0; });
  if (t) *source = kThisMachine;
  else
    STRATA_WARN(TOPO, "hwloc could not load this machine's topology (%s); packages, NUMA nodes and "
                "NICs are unknown", errnoText(errno).c_str());
  return t;
}

IoDevice describeDevice(hwloc_topology_t t, hwloc_obj_t dev) {
  IoDevice d;
  d.name = dev->name ? dev->name : "";
  d.subtype = dev->subtype ? dev->subtype : "";
  if (dev->parent && dev->parent->type == HWLOC_OBJ_PCI_DEVICE) {
    const auto& pci = dev->parent->attr->pcidev;
    char id[32];
    std::snprintf(id, sizeof(id), "%04x:%02x:%02x.%x", pci.domain, pci.bus, pci.dev, pci.func);
    d.pciBusId = id;
  }
  d.package = containing(t, HWLOC_OBJ_PACKAGE, locality(t, dev));
  d.numa = containing(t, HWLOC_OBJ_NUMANODE, locality(t, dev));
  return d;
}

Machine describeMachine(hwloc_topology_t t, const std::string& nvlinkSpec, bool thisMachine) {
  Machine m;
  m.packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  m.numaNodes = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  m.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  m.pus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);

  m.l3BytesPerPackage.assign(m.packages, 0);
  for (int i = 0; i < hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_L3CACHE); ++i) {
    hwloc_obj_t l3 = hwloc_get_obj_by_type(t, HWLOC_OBJ_L3CACHE, i);
    const int pkg = containing(t, HWLOC_OBJ_PACKAGE, l3->cpuset);
    if (pkg >= 0) m.l3BytesPerPackage[pkg] += l3->attr->cache.size;
  }
  if (hwloc_obj_t pu = hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, 0)) {
    for (hwloc_obj_t o = pu->parent; o; o = o->parent) {
      if (o->type == HWLOC_OBJ_L2CACHE && !m.l2Bytes) m.l2Bytes = o->attr->cache.size;
      if (o->type == HWLOC_OBJ_L1CACHE && o->attr->cache.type != HWLOC_OBJ_CACHE_INSTRUCTION && !m.l1dBytes)
        m.l1dBytes = o->attr->cache.size;
    }
  }

  for (hwloc_obj_t dev = nullptr; (dev = hwloc_get_next_osdev(t, dev));) {
    switch (dev->attr->osdev.type) {
      case HWLOC_OBJ_OSDEV_NETWORK: m.nics.push_back(describeDevice(t, dev)); break;
      case HWLOC_OBJ_OSDEV_OPENFABRICS: m.rdma.push_back(describeDevice(t, dev)); break;
      default: break;
    }
  }
  probeGpus(t, nvlinkSpec, thisMachine, &m);

  unsigned nr = 1;
  hwloc_distances_s* dist = nullptr;
  if (hwloc_distances_get_by_type(t, HWLOC_OBJ_NUMANODE, &nr, &dist, 0, 0) == 0 && nr >= 1) {
    const unsigned n = dist->nbobjs;
    if (n == static_cast<unsigned>(m.numaNodes)) {
      m.numaDistances.assign(size_t(n) * n, 0);
      for (unsigned i = 0; i < n; ++i)
        for (unsigned j = 0; j < n; ++j)
          m.numaDistances[dist->objs[i]->logical_index * n + dist->objs[j]->logical_index] =
              dist->values[i * n + j];
    }
    hwloc_distances_release(t, dist);
  }
  return m;
}

// "2-3,5" -> {2, 3, 5}; false (with the reason) on anything else.
bool parseCpuList(const std::string& text, hwloc_bitmap_t out, std::string* why) {
  hwloc_bitmap_zero(out);
  const char* p = text.c_str();
  while (true) {
    auto number = [&](long* v) {
      if (*p < '0' || *p > '9') return false;
      char* end = nullptr;
      *v = std::strtol(p, &end, 10);
      p = end;
      return *v <= kMaxCpu;
    };
    long lo = 0, hi = 0;
    if (!number(&lo)) {
      *why = "expected a cpu number at '" + std::string(p) + "'";
      return false;
    }
    hi = lo;
    if (*p == '-') {
      ++p;
      if (!number(&hi) || hi < lo) {
        *why = "bad range ending at '" + std::string(p) + "'";
        return false;
      }
    }
    hwloc_bitmap_set_range(out, static_cast<unsigned>(lo), static_cast<int>(hi));
    if (*p == '\0') return true;
    if (*p++ != ',') {
      *why = "expected ',' or '-' at '" + std::string(p - 1) + "'";
      return false;
    }
  }
}

std::string listOf(hwloc_const_bitmap_t set) {
  char* text = nullptr;
  if (hwloc_bitmap_list_asprintf(&text, set) < 0) return "";
  std::string s = text;
  std::free(text);
  return s;
}

// The cpus to place: STRATA_TOPO_CPUS when set and valid in this topology,
// else the affinity mask (as far as the topology has those cpus).
void cpusToPlace(hwloc_topology_t t, const std::string& topoCpus, const std::vector<int>& affinity,
                 hwloc_bitmap_t out, bool* fromTopoCpus) {
  hwloc_const_cpuset_t all = hwloc_topology_get_topology_cpuset(t);
  *fromTopoCpus = false;
  if (!topoCpus.empty()) {
    std::string why;
    if (!parseCpuList(topoCpus, out, &why)) {
      STRATA_WARN(TOPO, "STRATA_TOPO_CPUS='%s' is not a cpu list like 2-3,5 (%s); using the affinity mask",
                  topoCpus.c_str(), why.c_str());
    } else if (!hwloc_bitmap_isincluded(out, all)) {
      STRATA_WARN(TOPO, "STRATA_TOPO_CPUS='%s' names cpus outside the topology (its cpus: %s); using the "
                  "affinity mask", topoCpus.c_str(), listOf(all).c_str());
    } else {
      *fromTopoCpus = true;
      return;
    }
  }
  hwloc_bitmap_zero(out);
  for (int c : affinity) hwloc_bitmap_set(out, static_cast<unsigned>(c));
  hwloc_bitmap_and(out, out, all);
}

// The NIC closest to all of `cpus`: among those whose locality covers them,
// the one with the narrowest locality (on the rank's package before one
// attached to the whole machine); else the host's first NIC.
std::string nearestNic(hwloc_topology_t t, hwloc_const_cpuset_t cpus) {
  std::string first, best;
  int bestWidth = 0;
  for (hwloc_obj_t dev = nullptr; (dev = hwloc_get_next_osdev(t, dev));) {
    if (dev->attr->osdev.type != HWLOC_OBJ_OSDEV_NETWORK || !dev->name) continue;
    if (first.empty()) first = dev->name;
    hwloc_const_cpuset_t near = locality(t, dev);
    const int width = hwloc_bitmap_weight(near);
    if (!hwloc_bitmap_iszero(cpus) && hwloc_bitmap_isincluded(cpus, near) &&
        (best.empty() || width < bestWidth)) {
      best = dev->name;
      bestWidth = width;
    }
  }
  return best.empty() ? first : best;
}

Placement place(hwloc_topology_t t, const std::string& topoCpus, const std::vector<int>& affinity) {
  Placement p;
  hwloc_bitmap_t cpus = hwloc_bitmap_alloc();
  cpusToPlace(t, topoCpus, affinity, cpus, &p.fromTopoCpus);
  p.cpus = listOf(cpus);
  p.package = containing(t, HWLOC_OBJ_PACKAGE, cpus);
  p.numa = containing(t, HWLOC_OBJ_NUMANODE, cpus);
  p.nic = nearestNic(t, cpus);
  hwloc_bitmap_free(cpus);
  return p;
}

// The process's topology, reloaded when the variables choosing it change.
// Kept until exit on purpose: it is small, and a communicator may be
// initialized on another thread while this process exits.
struct Cache {
  std::mutex mutex;
  bool loaded = false;
  std::string file, synthetic, nvlink;  // what it was loaded for
  hwloc_topology_t topology = nullptr;
  Machine machine;
};

}  // namespace

TopologyProbe probeTopology(const std::vector<int>& affinity) {
  static Cache* cache = new Cache();
  std::lock_guard<std::mutex> lock(cache->mutex);
  const std::string& file = params::topoFile();
  const std::string& synthetic = params::topoSynthetic();
  const std::string& nvlink = params::topoNvlink();
  if (!cache->loaded || cache->file != file || cache->synthetic != synthetic || cache->nvlink != nvlink) {
    // The old topology goes after the new one is loaded: hwloc unloads its
    // plugins with the last topology, and loading them again is slow.
    hwloc_topology_t old = cache->topology;
    std::string source = "unavailable";
    cache->topology = loadTopology(file, synthetic, &source);
    if (old) hwloc_topology_destroy(old);
    const bool thisMachine = source == kThisMachine;
    cache->machine = cache->topology ? describeMachine(cache->topology, nvlink, thisMachine) : Machine();
    cache->machine.source = source;
    cache->machine.thisMachine = thisMachine;
    cache->file = file;
    cache->synthetic = synthetic;
    cache->nvlink = nvlink;
    cache->loaded = true;
  }
  TopologyProbe probe;
  probe.machine = cache->machine;
  if (cache->topology) probe.placement = place(cache->topology, params::topoCpus(), affinity);
  return probe;
}

}  // namespace strata::topo
