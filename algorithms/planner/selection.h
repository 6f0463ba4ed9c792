// Which allreduce algorithm, and how many channels, for a size: a cost model
// of each algorithm on the communicator's layout (latency and bandwidth of
// the shared-memory and network levels, from STRATA_COST_SHM/STRATA_COST_NET),
// evaluated once per power-of-two size when the communicator is created, so
// a call only looks its size up. STRATA_ALGO forces one algorithm instead.
#pragma once

#include <array>
#include <string>

#include "allreduce.h"
#include "plan.h"
#include "status.h"

namespace strata {

struct LinkCost {
  double latencyUs;  // per hop
  double gbps;       // GB/s one way
  double us(double bytes) const { return latencyUs + bytes / (gbps * 1e3); }
};

struct CostModel {
  LinkCost shm;  // between ranks of a node
  LinkCost net;  // between nodes (per node: its ranks share it)
};

// Parses "latency_us,GB/s" (e.g. "30,1.2"); `var` names the variable in errors.
Status parseLinkCost(const std::string& text, const char* var, LinkCost* out);

// Parses STRATA_ALGO: "" (automatic), or ring, oneshot, rd, hd, tree, hier.
Status parseForcedAlgo(const std::string& text, bool* forced, AllreduceAlgo* algo);

// The model's estimate of one allreduce of `bytes` with `algo` (hops, bytes
// over each level, and bytes folded at shared-memory speed), in
// microseconds; infinity when the algorithm cannot carry it (one-shot beyond
// one slot or beyond oneshotBytes).
double estimateUs(const CostModel& model, AllreduceAlgo algo, const PlanShape& shape, uint64_t bytes,
                  size_t oneshotBytes);

struct AllreduceChoice {
  AllreduceAlgo algo;
  int nchannels;  // channels the plan uses (<= shape.nchannels)
};

// Everything the planner needs to pick algorithms, fixed at communicator init.
class Tuning {
 public:
  // shape: the communicator's (rank, size, channels, slot, layout).
  static Status create(const std::string& forcedAlgo, size_t oneshotBytes, const CostModel& model,
                       const PlanShape& shape, Tuning* out);

  Status chooseAllreduce(const PlanShape& shape, uint64_t count, AllreduceChoice* choice) const;
  // Other collectives: the direct (one-hop) algorithms for small sizes, else
  // rings and chains; STRATA_ALGO=oneshot or ring forces one side.
  bool useDirect(uint64_t bytes) const;
  // "8B-4KiB oneshot, 8KiB-64KiB hd, 128KiB+ ring" (or the forced algorithm).
  std::string describe() const;

 private:
  static constexpr int kBuckets = 48;  // up to 2^47 bytes
  bool forced_ = false;
  AllreduceAlgo forcedAlgo_ = AllreduceAlgo::Ring;
  size_t oneshotBytes_ = 0;
  std::array<AllreduceAlgo, kBuckets> byLog2_{};  // by ceil(log2(bytes))
};

}  // namespace strata
