#include "gpu_path.h"

#include <algorithm>
#include <cstdio>

#include "gpus.h"
#include "params.h"

namespace strata::topo {
namespace {

// The direct copy's price over `link` (an unknown one priced as PHB).
LinkCost directCost(GpuLink link, int nvlinks, const GpuCosts& c) {
  switch (link) {
    case GpuLink::Same: return c.deviceCopy;
    case GpuLink::NVLink: return {c.nvlink.latencyUs, c.nvlink.gbps * std::max(nvlinks, 1)};
    case GpuLink::Pix:
    case GpuLink::Pxb: return c.pcie;
    case GpuLink::Sys: return {c.pcie.latencyUs, c.pcie.gbps * kSmpShare};
    case GpuLink::Phb:
    case GpuLink::Node:
    case GpuLink::Unknown: break;
  }
  return {c.pcie.latencyUs, c.pcie.gbps * kHostBridgeShare};
}

std::string ms(double us) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2f ms", us / 1e3);
  return text;
}

std::string gbps(double g) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g GB/s", g);
  return text;
}

}  // namespace

const char* routeName(GpuRoute route) {
  switch (route) {
    case GpuRoute::None: return "none";
    case GpuRoute::Direct: return "direct";
    case GpuRoute::Staging: return "staging";
  }
  return "?";
}

Status gpuCostsFromParams(GpuCosts* out) {
  STRATA_CHECK(parseLinkCost(params::costDeviceCopy(), "STRATA_COST_DEVICE_COPY", &out->deviceCopy));
  STRATA_CHECK(parseLinkCost(params::costNvlink(), "STRATA_COST_NVLINK", &out->nvlink));
  STRATA_CHECK(parseLinkCost(params::costPcie(), "STRATA_COST_PCIE", &out->pcie));
  STRATA_CHECK(parseLinkCost(params::costShm(), "STRATA_COST_SHM", &out->hostHop));
  if (!parseLinkLevel(params::p2pLevel(), &out->farthest))
    return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                          "STRATA_P2P_LEVEL='%s' is not one of LOC, NVL, PIX, PXB, PHB, NODE, SYS",
                          params::p2pLevel().c_str());
  return Status::ok();
}

GpuPath chooseGpuPath(const Machine& m, const HostInfo& a, const HostInfo& b, const GpuCosts& c) {
  GpuPath p;
  const std::string ga = gpuKey(a), gb = gpuKey(b);
  if (ga.empty() || gb.empty() || !sameHost(a, b)) {
    p.why = ga.empty() || gb.empty() ? "not both ranks have a GPU" : "different hosts: the network carries it";
    return p;
  }
  const int ia = gpuIndex(m, ga), ib = gpuIndex(m, gb);
  if (ga == gb) p.link = GpuLink::Same;
  else if (ia >= 0 && ib >= 0) p.link = gpuLink(m, ia, ib);
  p.nvlinks = p.link == GpuLink::NVLink ? nvlinkLanes(m, ia, ib) : 0;
  const std::string link = linkText(p.link, p.nvlinks);

  // Staging pipelines chunks: out over one GPU's PCIe link, across the host
  // transport, in over the other's; the slowest stage sets the pace.
  const LinkCost staging{2 * c.pcie.latencyUs + c.hostHop.latencyUs, std::min(c.pcie.gbps, c.hostHop.gbps)};
  p.stagingUs = staging.us(kGpuPathBytes);
  if ((p.link == GpuLink::Unknown ? GpuLink::Phb : p.link) > c.farthest) {
    p.route = GpuRoute::Staging;
    const std::string apart = p.link == GpuLink::Unknown ? "an unknown PCI path apart (a GPU hwloc does not show; judged as PHB)"
                                                         : link + " apart";
    p.why = "the GPUs are " + apart + ", beyond STRATA_P2P_LEVEL=" + params::p2pLevel() + ": staged through host memory";
    return p;
  }
  const LinkCost direct = directCost(p.link, p.nvlinks, c);
  p.directUs = direct.us(kGpuPathBytes);
  p.route = p.directUs <= p.stagingUs ? GpuRoute::Direct : GpuRoute::Staging;
  const std::string where = p.link == GpuLink::Same      ? std::string("within one GPU")
                            : p.link == GpuLink::Unknown ? "over an unknown PCI path (a GPU hwloc does not show), priced as PHB"
                                                         : "over " + link;
  const std::string directText = "direct copies " + where + " at " + gbps(direct.gbps) + " (" + ms(p.directUs) +
                                 " per 16 MiB)";
  const std::string stagingText = "staging through host memory at " + gbps(staging.gbps) + " (" + ms(p.stagingUs) + ")";
  p.why = p.route == GpuRoute::Direct ? directText + " beat " + stagingText : stagingText + " beats " + directText;
  return p;
}

}  // namespace strata::topo
