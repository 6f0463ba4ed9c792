#include "host.h"

#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "cuda_seam.h"
#include "gpus.h"
#include "hwloc_probe.h"
#include "log.h"
#include "params.h"

namespace strata::topo {
namespace {

std::string bootId() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(f, id);
  return id;
}

unsigned long long namespaceInode(const char* path) {
  struct stat st;
  return stat(path, &st) == 0 ? static_cast<unsigned long long>(st.st_ino) : 0ull;
}

// Fills the mask and returns the number of cores in it.
int cpusAllowed(uint64_t* mask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    const int n = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    for (int c = 0; c < n && c < kCpuMaskWords * 64; ++c) mask[c / 64] |= 1ull << (c % 64);
    return n;
  }
  for (int c = 0; c < kCpuMaskWords * 64 && c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) mask[c / 64] |= 1ull << (c % 64);
  return CPU_COUNT(&set);
}

// The rank's GPU as a bus id: STRATA_TOPO_GPU (an index into the
// topology's GPUs, or a bus id), else CUDA's current device on this machine
// (none in an injected topology), else none.
std::string rankGpu(const Machine& m, int device) {
  const std::string& forced = params::topoGpu();
  if (!forced.empty()) {
    char* end = nullptr;
    const long index = std::strtol(forced.c_str(), &end, 10);
    const std::string busId = normalizeBusId(forced);
    if (end != forced.c_str() && *end == '\0' && index >= 0 && index < static_cast<long>(m.gpus.size()))
      return m.gpus[index].pciBusId;
    if (!busId.empty()) return busId;  // a GPU hwloc does not show is the rank's all the same
    STRATA_WARN(TOPO, "STRATA_TOPO_GPU='%s' is neither a PCI bus id nor the index of one of the %zu GPUs of %s; "
                "using the rank's CUDA device", forced.c_str(), m.gpus.size(), m.source.c_str());
  }
  // CUDA's devices are this machine's, not an injected topology's.
  if (!m.thisMachine) return "";
  for (const gpu::DeviceInfo& d : gpu::runtime().devices)
    if (d.index == device) return normalizeBusId(d.pciBusId);
  return "";
}

}  // namespace

HostInfo probeHost(int device) {
  HostInfo info;
  std::memset(&info, 0, sizeof(info));
  gethostname(info.hostname, sizeof(info.hostname) - 1);
  const std::string boot = bootId();
  std::snprintf(info.machineId, sizeof(info.machineId), "%.40s|%.20s", info.hostname, boot.c_str());
  const std::string& forced = params::hostId();
  if (!forced.empty()) {
    std::snprintf(info.hostId, sizeof(info.hostId), "%s", forced.c_str());
  } else {
    // Truncated fields keep the id inside its fixed size; 20 hex digits of the
    // boot id are plenty to tell machines apart.
    std::snprintf(info.hostId, sizeof(info.hostId), "%.24s|%.20s|%llu", info.hostname,
                  boot.c_str(), namespaceInode("/proc/self/ns/net"));
  }
  info.pid = static_cast<int32_t>(getpid());
  info.pidNamespace = namespaceInode("/proc/self/ns/pid");
  info.cpusAllowed = cpusAllowed(info.cpuMask);

  const TopologyProbe probe = probeTopology(maskCpus(info));
  const Machine& m = probe.machine;
  const Placement& p = probe.placement;
  info.package = p.package;
  info.numaNode = p.numa;
  info.packages = m.packages;
  info.numaNodes = m.numaNodes;
  info.cores = m.cores;
  info.pus = m.pus;
  std::snprintf(info.nic, sizeof(info.nic), "%s", p.nic.c_str());
  std::snprintf(info.gpu, sizeof(info.gpu), "%s", rankGpu(m, device).c_str());
  STRATA_INFO(TOPO, "host id '%s', %d cores in the affinity mask; %s: %d packages, %d NUMA nodes, "
              "%d cores, %d PUs; cpus %s%s in package %d, NUMA node %d, nearest nic '%s', gpu '%s'",
              info.hostId, info.cpusAllowed, m.source.c_str(), m.packages, m.numaNodes, m.cores, m.pus,
              p.cpus.c_str(), p.fromTopoCpus ? " (STRATA_TOPO_CPUS)" : "", p.package, p.numa, info.nic, info.gpu);
  return info;
}

std::vector<int> maskCpus(const HostInfo& h) {
  std::vector<int> cpus;
  for (int c = 0; c < kCpuMaskWords * 64; ++c)
    if (h.cpuMask[c / 64] >> (c % 64) & 1) cpus.push_back(c);
  return cpus;
}

std::string machineKey(const HostInfo& h) {
  return std::string(h.machineId, strnlen(h.machineId, kHostIdBytes));
}

bool sameHost(const HostInfo& a, const HostInfo& b) {
  return std::strncmp(a.hostId, b.hostId, kHostIdBytes) == 0;
}

void sanitizeWire(HostInfo* h) {
  // probeHost writes every string with room for its NUL, so an honest peer
  // loses nothing here.
  h->hostId[sizeof(h->hostId) - 1] = '\0';
  h->machineId[sizeof(h->machineId) - 1] = '\0';
  h->hostname[sizeof(h->hostname) - 1] = '\0';
  h->nic[sizeof(h->nic) - 1] = '\0';
  h->rdma[sizeof(h->rdma) - 1] = '\0';
  h->gpu[sizeof(h->gpu) - 1] = '\0';
  h->transports[sizeof(h->transports) - 1] = '\0';
}

std::string gpuKey(const HostInfo& h) { return std::string(h.gpu, strnlen(h.gpu, kBusIdBytes)); }

std::string hostKey(const HostInfo& h) { return std::string(h.hostId, strnlen(h.hostId, kHostIdBytes)); }

std::unordered_map<std::string, HostShare> hostShares(const std::vector<HostInfo>& all) {
  struct Union {
    uint64_t mask[kCpuMaskWords] = {};
    int largest = 0;  // a mask reaching past core 1023 still counts its cores
    int ranks = 0;
  };
  std::unordered_map<std::string, Union> unions;
  for (const HostInfo& h : all) {
    Union& u = unions[machineKey(h)];
    for (int w = 0; w < kCpuMaskWords; ++w) u.mask[w] |= h.cpuMask[w];
    u.largest = std::max(u.largest, static_cast<int>(h.cpusAllowed));
    ++u.ranks;
  }
  std::unordered_map<std::string, HostShare> shares;
  for (const auto& [key, u] : unions) {
    int cores = 0;
    for (uint64_t w : u.mask) cores += __builtin_popcountll(w);
    shares[key] = HostShare{u.ranks, std::max(cores, u.largest)};
  }
  return shares;
}

}  // namespace strata::topo
