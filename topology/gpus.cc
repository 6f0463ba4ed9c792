#include "gpus.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "hwloc_places.h"
#include "log.h"

namespace strata::topo {
namespace {

constexpr unsigned kVendorNvidia = 0x10de;
constexpr unsigned kVendorAmd = 0x1002;

// hwloc's os devices that mean a compute GPU: a CUDA, OpenCL or LevelZero
// co-processor, or an NVML or RSMI GPU. A DRM card alone (a VM's VGA, an
// integrated display) is not one.
bool computeOsdev(hwloc_obj_t o) {
  if (o->type != HWLOC_OBJ_OS_DEVICE) return false;
  if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC) return true;
  if (o->attr->osdev.type != HWLOC_OBJ_OSDEV_GPU || !o->subtype) return false;
  const std::string subtype = o->subtype;
  return subtype == "NVML" || subtype == "RSMI";
}

bool isGpu(hwloc_obj_t pci) {
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling)
    if (computeOsdev(c)) return true;
  // Without plugins: NVIDIA's and AMD's display / 3D controllers, and their
  // processing accelerators (class 0x12: AMD's Instinct parts). An AMD APU's
  // integrated graphics counts too; its pairs then price as what they are.
  const auto& a = pci->attr->pcidev;
  const unsigned base = a.class_id >> 8;
  return (base == 0x03 || base == 0x12) && (a.vendor_id == kVendorNvidia || a.vendor_id == kVendorAmd);
}

std::string busIdOf(hwloc_obj_t pci) {
  const auto& a = pci->attr->pcidev;
  char id[32];
  std::snprintf(id, sizeof(id), "%04x:%02x:%02x.%x", a.domain, a.bus, a.dev, a.func);
  return id;
}

IoDevice describeGpu(hwloc_topology_t t, hwloc_obj_t pci) {
  IoDevice d;
  for (hwloc_obj_t c = pci->io_first_child; c; c = c->next_sibling) {
    if (c->type != HWLOC_OBJ_OS_DEVICE || !c->name) continue;
    d.name += (d.name.empty() ? "" : ",") + std::string(c->name);
    if (d.subtype.empty() && computeOsdev(c) && c->subtype) d.subtype = c->subtype;
  }
  if (d.name.empty()) {
    char id[16];
    std::snprintf(id, sizeof(id), "[%04x:%04x]", pci->attr->pcidev.vendor_id, pci->attr->pcidev.device_id);
    d.name = id;
  }
  d.pciBusId = busIdOf(pci);
  d.package = containing(t, HWLOC_OBJ_PACKAGE, locality(t, pci));
  d.numa = containing(t, HWLOC_OBJ_NUMANODE, locality(t, pci));
  return d;
}

// hwloc_get_common_ancestor_obj compares depths, which I/O objects do not
// have (theirs are special negative values): walk the parents instead.
hwloc_obj_t commonAncestor(hwloc_obj_t a, hwloc_obj_t b) {
  std::vector<hwloc_obj_t> above;
  for (hwloc_obj_t o = a; o; o = o->parent) above.push_back(o);
  for (hwloc_obj_t o = b; o; o = o->parent)
    if (std::find(above.begin(), above.end(), o) != above.end()) return o;
  return nullptr;
}

// PCI bridges strictly between `dev` and its ancestor `top`.
int bridgesBelow(hwloc_obj_t dev, hwloc_obj_t top) {
  int n = 0;
  for (hwloc_obj_t o = dev->parent; o && o != top; o = o->parent)
    if (o->type == HWLOC_OBJ_BRIDGE) ++n;
  return n;
}

// The PCIe class of two GPUs from their nearest common ancestor: a PCI
// bridge is a switch (PIX when each GPU hangs off one of its downstream
// ports, PXB when further switches lie between), a host bridge is the CPU's
// root complex (PHB), and anything above I/O means crossing between host
// bridges: within a NUMA node (NODE) or between NUMA nodes (SYS), where
// nvidia-smi draws the line (the package, where the NUMA node is unknown).
GpuLink pciLink(hwloc_obj_t a, hwloc_obj_t b, const IoDevice& da, const IoDevice& db) {
  if (a == b) return GpuLink::Same;
  hwloc_obj_t top = commonAncestor(a, b);
  if (top && top->type == HWLOC_OBJ_BRIDGE) {
    if (top->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) return GpuLink::Phb;
    return bridgesBelow(a, top) <= 1 && bridgesBelow(b, top) <= 1 ? GpuLink::Pix : GpuLink::Pxb;
  }
  if (da.numa >= 0 || db.numa >= 0) return da.numa == db.numa ? GpuLink::Node : GpuLink::Sys;
  return da.package >= 0 && da.package == db.package ? GpuLink::Node : GpuLink::Sys;
}

bool parseCount(const char*& p, long max, long* out) {
  if (*p < '0' || *p > '9') return false;
  char* end = nullptr;
  *out = std::strtol(p, &end, 10);
  p = end;
  return *out <= max;
}

// STRATA_TOPO_NVLINK's "a-b:lanes,..." or "all:lanes" over n GPUs.
bool parseNvlinkSpec(const std::string& spec, int n, std::vector<int>* lanes, std::string* why) {
  lanes->assign(size_t(n) * n, 0);
  if (spec.rfind("all:", 0) == 0) {
    const char* p = spec.c_str() + 4;
    long k = 0;
    if (!parseCount(p, 1024, &k) || *p != '\0' || k <= 0) {
      *why = "expected all:<lanes> with lanes 1..1024";
      return false;
    }
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) (*lanes)[size_t(a) * n + b] = static_cast<int>(k);
    return true;
  }
  const char* p = spec.c_str();
  while (true) {
    long a = 0, b = 0, k = 0;
    if (!parseCount(p, n - 1, &a) || *p++ != '-' || !parseCount(p, n - 1, &b) || *p++ != ':' ||
        !parseCount(p, 1024, &k) || a == b || k <= 0) {
      *why = "expected a-b:lanes with a and b two GPU indexes below " + std::to_string(n) + " and lanes 1..1024";
      return false;
    }
    (*lanes)[size_t(a) * n + b] = (*lanes)[size_t(b) * n + a] = static_cast<int>(k);
    if (*p == '\0') return true;
    if (*p++ != ',') {
      *why = "expected ',' between pairs";
      return false;
    }
  }
}

}  // namespace

std::string linkText(GpuLink link, int nvlinks) {
  switch (link) {
    case GpuLink::Same: return "SAME";
    case GpuLink::NVLink: return "NV" + std::to_string(nvlinks);
    case GpuLink::Pix: return "PIX";
    case GpuLink::Pxb: return "PXB";
    case GpuLink::Phb: return "PHB";
    case GpuLink::Node: return "NODE";
    case GpuLink::Sys: return "SYS";
    case GpuLink::Unknown: break;
  }
  return "?";
}

bool parseLinkLevel(const std::string& text, GpuLink* out) {
  static const struct {
    const char* name;
    GpuLink link;
  } kLevels[] = {{"LOC", GpuLink::Same}, {"NVL", GpuLink::NVLink}, {"PIX", GpuLink::Pix}, {"PXB", GpuLink::Pxb},
                 {"PHB", GpuLink::Phb},  {"NODE", GpuLink::Node},  {"SYS", GpuLink::Sys}};
  for (const auto& l : kLevels)
    if (text == l.name) {
      *out = l.link;
      return true;
    }
  return false;
}

std::string normalizeBusId(const std::string& text) {
  // [domain:]bus:device.function, each field hex digits only (scanf's %x
  // would also take signs, spaces and 0x prefixes).
  unsigned long field[4] = {0, 0, 0, 0};
  const size_t widths[4] = {8, 2, 2, 1};
  const char seps[4] = {':', ':', '.', '\0'};
  const size_t colons = static_cast<size_t>(std::count(text.begin(), text.end(), ':'));
  if (colons < 1 || colons > 2) return "";
  size_t at = 0;
  for (size_t f = colons == 2 ? 0 : 1; f < 4; ++f) {
    const size_t end = seps[f] ? text.find(seps[f], at) : text.size();
    if (end == std::string::npos || end == at || end - at > widths[f]) return "";
    for (size_t i = at; i < end; ++i)
      if (!std::isxdigit(static_cast<unsigned char>(text[i]))) return "";
    field[f] = std::strtoul(text.c_str() + at, nullptr, 16);
    at = end + 1;
  }
  if (field[2] > 0x1f || field[3] > 7) return "";
  char id[32];
  std::snprintf(id, sizeof(id), "%04lx:%02lx:%02lx.%lx", field[0], field[1], field[2], field[3]);
  return id;
}

int gpuIndex(const Machine& m, const std::string& busId) {
  const std::string id = normalizeBusId(busId);
  if (id.empty()) return -1;
  for (size_t i = 0; i < m.gpus.size(); ++i)
    if (m.gpus[i].pciBusId == id) return static_cast<int>(i);
  return -1;
}

GpuLink gpuLink(const Machine& m, int a, int b) {
  const size_t n = m.gpus.size();
  if (a < 0 || b < 0 || size_t(a) >= n || size_t(b) >= n || m.gpuLinks.size() != n * n) return GpuLink::Unknown;
  return m.gpuLinks[size_t(a) * n + b];
}

int nvlinkLanes(const Machine& m, int a, int b) {
  const size_t n = m.gpus.size();
  if (a < 0 || b < 0 || size_t(a) >= n || size_t(b) >= n || m.nvlinks.size() != n * n) return 0;
  return m.nvlinks[size_t(a) * n + b];
}

void probeGpus(hwloc_topology_t t, const std::string& nvlinkSpec, bool thisMachine, Machine* m) {
  // In bus id order, as nvidia-smi numbers them (and CUDA, with
  // CUDA_DEVICE_ORDER=PCI_BUS_ID).
  std::vector<hwloc_obj_t> objs;
  for (hwloc_obj_t pci = nullptr; (pci = hwloc_get_next_pcidev(t, pci));)
    if (isGpu(pci)) objs.push_back(pci);
  std::sort(objs.begin(), objs.end(), [](hwloc_obj_t x, hwloc_obj_t y) { return busIdOf(x) < busIdOf(y); });
  for (hwloc_obj_t pci : objs) m->gpus.push_back(describeGpu(t, pci));
  const int n = static_cast<int>(objs.size());
  m->gpuLinks.assign(size_t(n) * n, GpuLink::Unknown);
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) m->gpuLinks[size_t(a) * n + b] = pciLink(objs[a], objs[b], m->gpus[a], m->gpus[b]);

  std::string why;
  if (!nvlinkSpec.empty()) {
    if (parseNvlinkSpec(nvlinkSpec, n, &m->nvlinks, &why)) {
      m->nvlinkSource = "STRATA_TOPO_NVLINK";
    } else {
      STRATA_WARN(TOPO, "STRATA_TOPO_NVLINK='%s' is not a list of GPU pairs and lanes (%s; this topology has %d GPUs); "
                  "ignored", nvlinkSpec.c_str(), why.c_str(), n);
      m->nvlinks.assign(size_t(n) * n, 0);
      m->nvlinkSource = "none (STRATA_TOPO_NVLINK refused)";
    }
  } else if (n < 2) {
    m->nvlinks.assign(size_t(n) * n, 0);
    m->nvlinkSource = "none (fewer than 2 GPUs)";
  } else if (!thisMachine) {
    // NVML describes this machine's GPUs, not an injected topology's.
    m->nvlinks.assign(size_t(n) * n, 0);
    m->nvlinkSource = "none (an injected topology: STRATA_TOPO_NVLINK gives its lanes)";
  } else {
    std::vector<std::string> ids;
    for (const IoDevice& d : m->gpus) ids.push_back(d.pciBusId);
    if (nvmlLanes(ids, &m->nvlinks, &why)) {
      m->nvlinkSource = "NVML";
    } else {
      m->nvlinks.assign(size_t(n) * n, 0);
      m->nvlinkSource = "none (" + why + ")";
    }
  }
  for (size_t i = 0; i < m->nvlinks.size(); ++i)
    if (m->nvlinks[i] > 0 && m->gpuLinks[i] != GpuLink::Same) m->gpuLinks[i] = GpuLink::NVLink;
}

}  // namespace strata::topo
