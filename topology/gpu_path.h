// How two ranks of one host whose buffers live on GPUs should move bytes
// between them: GPU to GPU (device copies over NVLink or PCIe, or within one
// GPU when they share it) or staged through pinned host memory and a host
// transport (streams/staging.h). Priced per pair with the cost model, so a
// rank and its peer, reading the same facts, choose alike; GpuPath::why says
// why in words a user can check against nvidia-smi topo -m. The cuda
// transport connects a pair only where this says Direct.
#pragma once

#include <string>

#include "host.h"
#include "hwloc_probe.h"
#include "link_cost.h"
#include "status.h"

namespace strata::topo {

enum class GpuRoute : uint8_t {
  None,     // not two GPU ranks of one host: nothing to choose
  Direct,   // GPU to GPU
  Staging,  // through host memory
};

struct GpuCosts {
  LinkCost deviceCopy;  // STRATA_COST_DEVICE_COPY: within one GPU
  LinkCost nvlink;      // STRATA_COST_NVLINK: per lane
  LinkCost pcie;        // STRATA_COST_PCIE: a GPU's PCIe link
  LinkCost hostHop;     // STRATA_COST_SHM: the host transport between the staging buffers
  GpuLink farthest;     // STRATA_P2P_LEVEL
};
// From the variables above; an error naming the variable for a bad one.
Status gpuCostsFromParams(GpuCosts* out);

// The bytes each choice is priced at: a gradient bucket's order of size,
// where bandwidth, not latency, decides.
constexpr double kGpuPathBytes = 16.0 * (1 << 20);

// Direct copies that leave the PCIe switches get this share of a PCIe
// link's bandwidth: through a CPU's root complex (PHB, NODE) about half is
// typical, over the SMP interconnect (SYS) a quarter or less.
constexpr double kHostBridgeShare = 0.5;
constexpr double kSmpShare = 0.25;

struct GpuPath {
  GpuRoute route = GpuRoute::None;
  GpuLink link = GpuLink::Unknown;
  int nvlinks = 0;
  double directUs = 0;   // estimates for kGpuPathBytes; 0 when not offered
  double stagingUs = 0;
  std::string why;       // one sentence
};

// `m` is the machine both ranks run on (the caller's own: only ranks of one
// host have a route to choose).
GpuPath chooseGpuPath(const Machine& m, const HostInfo& a, const HostInfo& b, const GpuCosts& costs);

const char* routeName(GpuRoute route);  // "none", "direct", "staging"

}  // namespace strata::topo
