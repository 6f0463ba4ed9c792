// strata-info: what this build of strata is and how it can be configured.
//   strata-info             version, reduction instruction set, transports,
//                           CUDA (versions, GPUs, or why none is usable)
//   strata-info --params    every STRATA_* variable as a Markdown table (the
//                           README's table is this output, checked by a test)
//   strata-info --algorithms  the allreduce algorithms STRATA_ALGO can force,
//                           from the registry, with what each supports
//   strata-info --explain [COLLECTIVE [BYTES [DATATYPE]]]
//                           run as every rank of a job (mpirun, srun, or
//                           torchrun's variables): rank 0 prints
//                           strata_comm_explain's record for that call
//                           (default: allreduce of 1 MiB of float32)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "allreduce.h"
#include "op_desc.h"
#include "cuda_seam.h"
#include "params.h"
#include "kernels.h"
#include "strata/strata.h"
#include "transport.h"

namespace {

std::string escapeCell(const std::string& text) {
  std::string out;
  for (char c : text) out += (c == '|') ? std::string("\\|") : std::string(1, c);
  return out;
}

void printParams() {
  std::printf("| Variable | Type | Default | Meaning |\n| --- | --- | --- | --- |\n");
  for (const auto& p : strata::params::all()) {
    std::string type = p.type;
    if (type == "int64_t") type = "integer";
    std::printf("| `%s` | %s | `%s` | %s |\n", p.name, type.c_str(),
                p.defaultValue.empty() ? "(empty)" : p.defaultValue.c_str(), escapeCell(p.help).c_str());
  }
}

void printAlgorithms() {
  using namespace strata;
  std::printf("| `STRATA_ALGO` | allreduce algorithm | sends from the caller's memory | same bits at any slot size "
              "and channel count | limits | forcing it also forces |\n| --- | --- | --- | --- | --- | --- |\n");
  for (const AllreduceAlgorithm* a : allreduceAlgorithms()) {
    const char* stable = a->has(kInputStable | kInputStableInPlace) ? "yes"
                         : a->has(kInputStable)                     ? "out of place"
                                                                    : "no";
    std::string limits;
    if (a->has(kOneSlot)) limits = "one slot (`STRATA_SLOT_BYTES`)";
    if (a->has(kUpToOneshotBytes))
      limits += std::string(limits.empty() ? "" : "; ") + "chosen up to `STRATA_ONESHOT_BYTES`";
    if (a->has(kReproducibleOnly))
      limits += std::string(limits.empty() ? "" : "; ") + "chosen only with `STRATA_REPRODUCIBLE=1`";
    const char* forces = a->has(kForcesDirect)      ? "direct broadcast, reduce, reduce_scatter"
                         : a->has(kForcesPipelined) ? "chains for broadcast and reduce, ring reduce_scatter"
                                                    : "nothing: their size decides";
    std::printf("| `%s` | %s | %s | %s | %s | %s |\n", a->name, escapeCell(a->summary).c_str(), stable,
                a->has(kRankOrder)             ? "yes, rank order (reproducible mode runs it)"
                : a->has(kSameBitsAnyChunking) ? "yes"
                                               : "no",
                limits.empty() ? "none" : limits.c_str(), forces);
  }
}

std::string cudaVersion(int version) {
  if (version == 0) return "none";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

void printCuda() {
  const strata::gpu::RuntimeInfo& rt = strata::gpu::runtime();
  if (!rt.built) {
    std::printf("cuda: not built in (%s)\n", rt.why.c_str());
    return;
  }
  std::printf("cuda: built in, runtime %s, driver %s", cudaVersion(rt.runtimeVersion).c_str(),
              cudaVersion(rt.driverVersion).c_str());
  if (!rt.usable) {
    std::printf("; no usable GPU: %s\n", rt.why.c_str());
    return;
  }
  std::printf(", stream waits by %s\n", rt.streamMemOps ? "stream memory operations" : "a polling kernel");
  for (const auto& d : rt.devices)
    std::printf("  GPU %d: %s, sm_%d%d, PCI %s, %.1f GiB\n", d.index, d.name.c_str(), d.major, d.minor,
                d.pciBusId.c_str(), d.memoryBytes / double(1 << 30));
}

int explainForJob(int argc, char** argv) {
  const char* collective = argc > 0 ? argv[0] : "allreduce";
  const unsigned long long bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1ull << 20;
  strata_datatype_t datatype = STRATA_FLOAT32;
  if (argc > 2 && !strata::namedDatatype(argv[2], &datatype)) {
    std::fprintf(stderr, "strata-info: %s is not a datatype (float32, bfloat16, int64, ...)\n", argv[2]);
    return 2;
  }
  strata_comm_t comm = nullptr;
  if (strata_comm_init_world(&comm) != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata-info --explain runs as every rank of a job (mpirun, srun, or torchrun's "
                         "variables): %s\n", strata_last_error());
    return 1;
  }
  size_t needed = 0;
  std::string record;
  strata_result_t rc =
      strata_comm_explain(comm, collective, bytes / strata_datatype_size(datatype), datatype, nullptr, 0, &needed);
  if (needed > 0) {
    record.resize(needed);
    rc = strata_comm_explain(comm, collective, bytes / strata_datatype_size(datatype), datatype, record.data(),
                             record.size(), nullptr);
  }
  int rank = 0;
  strata_comm_rank(comm, &rank);
  if (rc != STRATA_SUCCESS) std::fprintf(stderr, "strata-info: %s\n", strata_comm_last_error(comm));
  else if (rank == 0) std::printf("%s\n", record.c_str());
  strata_comm_destroy(comm);
  return rc == STRATA_SUCCESS ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--params") == 0) {
    printParams();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--algorithms") == 0) {
    printAlgorithms();
    return 0;
  }
  if (argc > 1 && std::strcmp(argv[1], "--explain") == 0) return explainForJob(argc - 2, argv + 2);
  if (argc > 1) {
    std::fprintf(stderr, "usage: %s [--params | --algorithms | --explain [COLLECTIVE [BYTES [DATATYPE]]]]\n",
                 argv[0]);
    return 2;
  }
  std::printf("strata %d.%d.%d\n", STRATA_VERSION_MAJOR, STRATA_VERSION_MINOR, STRATA_VERSION_PATCH);
  std::printf("reduction kernels: %s\n", strata::kernels::isaName(strata::kernels::selectedIsa()));
  std::printf("transports:");
  strata::topo::HostInfo self = strata::topo::probeHost(strata::gpu::currentDevice());
  for (const auto& t : strata::makeTransports(&self)) std::printf(" %s", t->name());
  if (self.rdma[0]) std::printf(" (ib on %s)", self.rdma);
  std::printf("\n");
  printCuda();
  return 0;
}
