// What a rank knows about the machine it runs on, before talking to anyone:
// a host fingerprint (ranks with equal fingerprints can share memory), the
// cores it may run on, and where it sits in the host (package, NUMA node,
// nearest NIC: hwloc_probe.h). The bootstrap gathers every rank's HostInfo as
// raw bytes so each rank can tell which peers share its host and socket: it
// stays a fixed-size struct of plain fields.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace strata::topo {

constexpr size_t kHostIdBytes = 64;
constexpr int kCpuMaskWords = 16;  // cores 0..1023; more are not counted
constexpr size_t kNicNameBytes = 16;  // IFNAMSIZ
constexpr size_t kBusIdBytes = 24;    // "dddddddd:bb:dd.f" and its NUL

struct HostInfo {
  // hostname, kernel boot id and network namespace inode, or STRATA_HOSTID.
  // Two network namespaces on one machine get different ids: they cannot
  // reach each other's abstract sockets, and issue-3 tests treat them as hosts.
  char hostId[kHostIdBytes];
  // hostname and kernel boot id, whatever the namespace or STRATA_HOSTID:
  // ranks with equal machine ids share cores even when they cannot share
  // memory (containers, network namespaces, simulated nodes).
  char machineId[kHostIdBytes];
  char hostname[64];
  int32_t pid;
  uint64_t pidNamespace;  // pids of peers mean something only in the same one
  int32_t cpusAllowed;  // cores in this process's affinity mask
  uint64_t cpuMask[kCpuMaskWords];  // which ones
  // The rank's placement, in hwloc's logical indexes: the package and NUMA
  // node holding all the cpus it is bound to (STRATA_TOPO_CPUS or the mask),
  // -1 when they span several or the topology is unknown.
  int32_t package;
  int32_t numaNode;
  // The host (or the topology STRATA_TOPO_FILE / _SYNTHETIC describes).
  int32_t packages;
  int32_t numaNodes;
  int32_t cores;
  int32_t pus;
  char nic[kNicNameBytes];  // nearest network interface; empty if none is known
  // The RDMA device and port ("mlx5_0:1") this rank's ib transport uses;
  // empty if it has none (Transport::describeSelf fills it).
  char rdma[32];
  // The PCI bus id ("0000:3b:00.0") of the rank's GPU: STRATA_TOPO_GPU, else
  // its CUDA device's; empty without one.
  char gpu[kBusIdBytes];
  // The transports built into the rank's library, space-separated ("shm ib
  // tcp"; makeTransports fills it): ranks built alike or not (with and
  // without ucx, for two CPUs) use only those every rank has.
  char transports[32];
};

// `device`: the rank's CUDA device (the communicator's; -1 none).
HostInfo probeHost(int device);

// Gives each string of a HostInfo that came from another process a
// terminating NUL, so that code reading them as C strings (log lines, peer
// names, hierarchy node names) stays inside their arrays whatever the peer
// sent. Call it wherever HostInfos are taken off the wire.
void sanitizeWire(HostInfo* h);

// The cpus of the affinity mask, as OS cpu numbers.
std::vector<int> maskCpus(const HostInfo& h);

bool sameHost(const HostInfo& a, const HostInfo& b);
// The host id as a string: equal for two HostInfos exactly when sameHost.
std::string hostKey(const HostInfo& h);

// The GPU's bus id as a string ("" without one).
std::string gpuKey(const HostInfo& h);

// The machine id as a string.
std::string machineKey(const HostInfo& h);

// What the ranks on one machine share: how many they are, and the cores they
// may run on together (the union of their affinity masks: ranks a launcher
// binds to a core each see one core in their own mask, yet do not share it).
struct HostShare {
  int ranks = 0;
  int cores = 0;
};
// Keyed by machineKey, from every rank's HostInfo in one pass.
std::unordered_map<std::string, HostShare> hostShares(const std::vector<HostInfo>& all);

}  // namespace strata::topo
