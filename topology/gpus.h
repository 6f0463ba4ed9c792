// GPUs in the machine's PCI tree, and how each pair of them reaches the
// other: the facts gpu_path.h prices to choose between copying GPU to GPU
// and staging through host memory.
//
// A GPU is a PCI device on which hwloc reports a GPU or co-processor os
// device (CUDA, NVML, RSMI, LevelZero, OpenCL: whichever of its plugins are
// installed), or, where no plugin is, an NVIDIA or AMD display or 3D
// controller. The PCIe class of a pair comes from their nearest common
// ancestor in hwloc's tree; NVLink lanes from NVML (libnvidia-ml, loaded at
// run time when present) or, for tests and what-ifs, STRATA_TOPO_NVLINK.
#pragma once

#include <hwloc.h>

#include <string>
#include <vector>

#include "hwloc_probe.h"

namespace strata::topo {

// "SAME", "NV4" (with the lane count), "PIX", "PXB", "PHB", "NODE", "SYS", "?".
std::string linkText(GpuLink link, int nvlinks);

// A level as STRATA_P2P_LEVEL names it, NCCL_P2P_LEVEL's words: LOC (only
// ranks sharing a GPU), NVL, PIX, PXB, PHB, NODE, SYS. False if none.
bool parseLinkLevel(const std::string& text, GpuLink* out);

// "0000:3B:00.0" (CUDA), "00000000:3b:00.0" (NVML), "3b:00.0" -> "0000:3b:00.0";
// "" when the text is not a PCI bus id.
std::string normalizeBusId(const std::string& text);

// Index into m.gpus of the GPU at `busId` (any spelling); -1 if none.
int gpuIndex(const Machine& m, const std::string& busId);

// The link between m.gpus[a] and m.gpus[b], and its NVLink lanes.
GpuLink gpuLink(const Machine& m, int a, int b);
int nvlinkLanes(const Machine& m, int a, int b);

// Fills m->gpus (in bus id order, as nvidia-smi numbers them), gpuLinks,
// nvlinks and nvlinkSource from a loaded topology and `nvlinkSpec`
// (STRATA_TOPO_NVLINK: "0-1:4,2-3:4" gives GPUs 0 and 1, and 2 and 3, four
// lanes each; "all:18" gives every pair 18, as NVSwitches do), else, for
// this machine's own topology (not an injected one), NVML.
void probeGpus(hwloc_topology_t t, const std::string& nvlinkSpec, bool thisMachine, Machine* m);

// Lanes between the GPUs at `busIds` as NVML reports them (n x n, row-major,
// symmetric: the more lanes either end reports), GPUs wired to NVSwitches
// counting as connected to every other such GPU with the fewer switch lanes
// of the two. False, with the reason, when NVML is missing, fails, or knows
// none of these GPUs.
bool nvmlLanes(const std::vector<std::string>& busIds, std::vector<int>* lanes, std::string* why);

}  // namespace strata::topo
