// The machine as hwloc sees it, and where this rank sits in it.
//
// The topology comes from STRATA_TOPO_FILE (hwloc XML), else
// STRATA_TOPO_SYNTHETIC, else the real machine with its I/O devices; a value
// hwloc refuses is logged (naming the variable) and the real machine used
// instead, so a typo never fails a communicator's init. Loading the real
// machine with I/O discovery takes milliseconds, so the loaded topology is kept for
// the process and reloaded only when those variables change; placing the
// rank in it (package, NUMA node, nearest NIC) is redone at every call, since
// the affinity mask may have changed.
//
// Indexes of packages and NUMA nodes are hwloc's logical ones (0..n-1 in
// topology order), cpu numbers are the OS's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::topo {

// An I/O device that matters to a collective library.
struct IoDevice {
  std::string name;     // eth0, mlx5_0, cuda0, card0
  std::string subtype;  // hwloc's, e.g. CUDA, NVML (may be empty)
  std::string pciBusId; // 0000:3b:00.0, empty when not on PCI
  int package = -1;     // the package it is attached to; -1 when wider or unknown
  int numa = -1;        // likewise for NUMA nodes
};

// How two GPUs of one machine reach each other, nearest first: the classes
// of nvidia-smi topo -m's legend (NCCL's path types follow them too).
enum class GpuLink : uint8_t {
  Same,     // one GPU (ranks sharing it)
  NVLink,   // NVLink lanes, directly or through NVSwitches
  Pix,      // within one PCIe switch
  Pxb,      // across several PCIe switches, not through a CPU
  Phb,      // through one CPU's PCIe host bridge
  Node,     // between host bridges of one NUMA node
  Sys,      // between NUMA nodes, over the SMP interconnect
  Unknown,  // one of them is not in the topology
};

struct Machine {
  std::string source;  // "this machine", "synthetic '...'", "file '...'"
  bool thisMachine = false;  // probed, not injected (STRATA_TOPO_FILE, STRATA_TOPO_SYNTHETIC)
  int packages = 0;
  int numaNodes = 0;
  int cores = 0;
  int pus = 0;
  std::vector<uint64_t> l3BytesPerPackage;  // sum of the L3 caches in each package
  uint64_t l2Bytes = 0;                     // of the first core; 0 when unknown
  uint64_t l1dBytes = 0;
  std::vector<IoDevice> nics;  // network interfaces (hwloc network os devices)
  std::vector<IoDevice> rdma;  // InfiniBand / RoCE devices (OpenFabrics os devices)
  // GPUs, one per PCI device (gpus.h says what counts): name lists hwloc's os
  // devices on it ("cuda0,nvml0") or is "[vendor:device]" without them.
  std::vector<IoDevice> gpus;
  std::vector<GpuLink> gpuLinks;  // gpus x gpus, row-major
  std::vector<int> nvlinks;       // gpus x gpus: NVLink lanes between the two (0: none)
  std::string nvlinkSource;       // "NVML", "STRATA_TOPO_NVLINK", or why neither gave any
  // numaNodes x numaNodes, row-major, relative latencies as the OS reports
  // them (10 = local); empty when hwloc has no matrix.
  std::vector<uint64_t> numaDistances;
};

struct Placement {
  std::string cpus;           // the cpus placed, as a list ("2-3,5")
  bool fromTopoCpus = false;  // STRATA_TOPO_CPUS, not the affinity mask
  int package = -1;           // -1: the cpus span several, or none is known
  int numa = -1;
  std::string nic;            // nearest network interface, empty if none
};

struct TopologyProbe {
  Machine machine;
  Placement placement;
};

// Never fails: every refused value falls back (with a warning) to the real
// machine or the affinity mask. `affinity` is this rank's affinity mask as
// OS cpu numbers. Thread-safe.
TopologyProbe probeTopology(const std::vector<int>& affinity);

}  // namespace strata::topo
