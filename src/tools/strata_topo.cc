// strata-topo: the topology strata sees.
//   strata-topo          this process alone: its machine as hwloc describes it
//                        (packages, NUMA nodes, cores, caches, NICs, RDMA
//                        devices, GPUs, NUMA distances), where it is bound,
//                        and the one-rank hierarchy
//   strata-topo --json   the same as one JSON document
// Started by a launcher (torchrun's RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT, or mpirun / srun through PMIx), every rank joins one
// communicator through strata_comm_init_world, the ranks' HostInfos are
// allgathered over it, and rank 0 prints the whole job: rank 0's machine, the
// hierarchy (nodes > sockets > GPUs > ranks), for every pair of ranks the
// transport they connect over and, for pairs of GPU ranks on rank 0's
// machine, whether the cost model would copy GPU to GPU or stage through
// host memory, and why.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "cuda_seam.h"
#include "describe.h"
#include "gpu_path.h"
#include "gpus.h"
#include "params.h"
#include "pmix_job.h"
#include "strata/strata.h"
#include "transport.h"

namespace {

using strata::topo::HostInfo;

struct PairTransport {
  int a, b;
  std::string transport;  // "none" when no transport reaches across the pair
};

// What Comm::connectTransports picks for each pair: the first transport, in
// preference order, that can connect the two hosts (only STRATA_TRANSPORT's
// when that is set).
std::vector<PairTransport> pairTransports(const std::vector<HostInfo>& all,
                                          const std::vector<std::unique_ptr<strata::Transport>>& transports) {
  const std::string& forced = strata::params::transport();
  std::vector<PairTransport> pairs;
  for (int a = 0; a < static_cast<int>(all.size()); ++a) {
    for (int b = a + 1; b < static_cast<int>(all.size()); ++b) {
      const int t = strata::chooseTransport(transports, forced, all[a], all[b]);
      pairs.push_back({a, b, t < 0 ? "none" : transports[t]->name()});
    }
  }
  return pairs;
}

// The cost model's choice for every pair of GPU ranks sharing a host of
// rank 0's machine (the only machine rank 0 has probed).
struct PairGpuPath {
  int a, b;
  strata::topo::GpuPath path;
};

std::vector<PairGpuPath> pairGpuPaths(const std::vector<HostInfo>& all, const strata::topo::Machine& machine,
                                      const strata::topo::GpuCosts& costs) {
  using namespace strata::topo;
  std::vector<PairGpuPath> pairs;
  for (int a = 0; a < static_cast<int>(all.size()); ++a) {
    if (machineKey(all[a]) != machineKey(all[0])) continue;
    for (int b = a + 1; b < static_cast<int>(all.size()); ++b) {
      GpuPath path = chooseGpuPath(machine, all[a], all[b], costs);
      if (path.route != GpuRoute::None) pairs.push_back({a, b, path});
    }
  }
  return pairs;
}

std::string gpuPathsText(const std::vector<PairGpuPath>& pairs) {
  std::string out = "gpu paths (the cost model's choice per pair; a communicator moves GPU buffers GPU to GPU when "
                    "every pair of it is direct, else stages them):\n";
  for (const PairGpuPath& p : pairs)
    out += "  ranks " + std::to_string(p.a) + "," + std::to_string(p.b) + ": " + routeName(p.path.route) + " (" +
           strata::topo::linkText(p.path.link, p.path.nvlinks) + "): " + p.path.why + "\n";
  return out;
}

std::string gpuPathsJson(const std::vector<PairGpuPath>& pairs) {
  using strata::topo::jsonQuote;
  std::string out = "[";
  for (size_t i = 0; i < pairs.size(); ++i) {
    const PairGpuPath& p = pairs[i];
    out += std::string(i ? "," : "") + "{\"ranks\":[" + std::to_string(p.a) + "," + std::to_string(p.b) +
           "],\"route\":" + jsonQuote(routeName(p.path.route)) + ",\"link\":" +
           jsonQuote(strata::topo::linkText(p.path.link, p.path.nvlinks)) + ",\"directUs\":" +
           std::to_string(p.path.directUs) + ",\"stagingUs\":" + std::to_string(p.path.stagingUs) +
           ",\"why\":" + jsonQuote(p.path.why) + "}";
  }
  return out + "]";
}

std::string transportMatrix(int nranks, const std::vector<PairTransport>& pairs) {
  std::vector<std::string> cell(size_t(nranks) * nranks, "-");
  for (const PairTransport& p : pairs) cell[size_t(p.a) * nranks + p.b] = cell[size_t(p.b) * nranks + p.a] = p.transport;
  return "transports (rank x rank):\n" +
         strata::topo::matrixText(nranks, [&](int a, int b) { return cell[size_t(a) * nranks + b]; }) + "\n";
}

int print(const std::vector<HostInfo>& all, const std::vector<std::unique_ptr<strata::Transport>>& transports,
          bool json) {
  using namespace strata::topo;
  const TopologyProbe probe = probeTopology(maskCpus(all[0]));  // all[0] is this process
  const Hierarchy h = buildHierarchy(all);
  const std::vector<PairTransport> pairs = pairTransports(all, transports);
  GpuCosts costs;
  const strata::Status costsOk = gpuCostsFromParams(&costs);
  if (!costsOk.isOk()) {
    std::fprintf(stderr, "strata-topo: %s\n", costsOk.message().c_str());
    return 1;
  }
  const std::vector<PairGpuPath> gpuPaths = pairGpuPaths(all, probe.machine, costs);
  if (json) {
    std::string out = "{\"machine\":" + describeMachineJson(probe) + ",\"hierarchy\":" + describeJson(h, all) +
                      ",\"gpuPaths\":" + gpuPathsJson(gpuPaths) + ",\"transports\":[";
    for (size_t i = 0; i < pairs.size(); ++i)
      out += std::string(i ? "," : "") + "{\"ranks\":[" + std::to_string(pairs[i].a) + "," +
             std::to_string(pairs[i].b) + "],\"transport\":" + jsonQuote(pairs[i].transport) + "}";
    std::printf("%s]}\n", out.c_str());
    return 0;
  }
  std::printf("%s\n%s", describeMachine(probe).c_str(), describeTree(h, all).c_str());
  if (all.size() > 1) std::printf("\n%s", transportMatrix(static_cast<int>(all.size()), pairs).c_str());
  if (!gpuPaths.empty()) std::printf("\n%s", gpuPathsText(gpuPaths).c_str());
  return 0;
}

int fail(const char* what, strata_comm_t comm) {
  std::fprintf(stderr, "strata-topo: %s failed: %s\n", what, comm ? strata_comm_last_error(comm) : strata_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool json = argc == 2 && std::strcmp(argv[1], "--json") == 0;
  if (argc > 2 || (argc == 2 && !json)) {
    std::fprintf(stderr, "usage: %s [--json]\n  alone: this process's view; under torchrun, mpirun or srun: "
                 "rank 0 prints the whole job\n", argv[0]);
    return 2;
  }
  HostInfo self = strata::topo::probeHost(strata::gpu::currentDevice());
  const auto transports = strata::makeTransports(&self);
  // The launchers strata_comm_init_world recognizes.
  if (!strata::launch::launchedByPmix() && !std::getenv("RANK") && !std::getenv("WORLD_SIZE")) {
    return print({self}, transports, json);
  }
  strata_comm_t comm = nullptr;
  if (strata_comm_init_world(&comm) != STRATA_SUCCESS) return fail("strata_comm_init_world", nullptr);
  int rank = 0, nranks = 0;
  if (strata_comm_rank(comm, &rank) != STRATA_SUCCESS || strata_comm_size(comm, &nranks) != STRATA_SUCCESS)
    return fail("strata_comm_rank/size", comm);
  std::vector<HostInfo> all(nranks);
  if (strata_allgather(&self, all.data(), sizeof(HostInfo), STRATA_UINT8, comm) != STRATA_SUCCESS)
    return fail("strata_allgather of the ranks' HostInfo", comm);
  for (HostInfo& h : all) strata::topo::sanitizeWire(&h);
  const int rc = rank == 0 ? print(all, transports, json) : 0;
  strata_comm_destroy(comm);
  return rc;
}
