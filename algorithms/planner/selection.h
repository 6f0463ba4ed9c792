// Which allreduce algorithm, and how many channels, for a size: every
// registered algorithm's cost (cost_model.h) on the communicator's layout,
// evaluated once per power-of-two size when the communicator is created, so
// a call only looks its size up. STRATA_ALGO forces one algorithm instead.
// Allgather's choice between one hop and Bruck's rounds is a table alike,
// and so is reduce-scatter's between Bruck's rounds and the other two.
#pragma once

#include <array>
#include <string>

#include "allreduce.h"
#include "cost_model.h"
#include "plan.h"
#include "status.h"

namespace strata {

// Parses STRATA_ALGO (or the setting forcedBy names): "" (automatic: null)
// or a registered algorithm's name.
Status parseForcedAlgo(const std::string& text, const char* forcedBy, const AllreduceAlgorithm** algo);

// The model's estimate of one allreduce of `bytes` with `algo`, in
// microseconds; infinity when the algorithm cannot carry it (kOneSlot beyond
// one slot, kUpToOneshotBytes beyond oneshotBytes).
double estimateUs(const CostModel& model, const AllreduceAlgorithm& algo, const PlanShape& shape, uint64_t bytes,
                  size_t oneshotBytes);

struct AllreduceChoice {
  const AllreduceAlgorithm* algo;
  int nchannels;  // channels the plan uses (<= shape.nchannels)
};

// Everything the planner needs to pick algorithms, fixed at communicator init.
class Tuning {
 public:
  // shape: the communicator's (rank, size, channels, slot, layout).
  // reproducible: only algorithms with kRankOrder, and the direct forms of
  // reduce and reduce_scatter (which fold in rank order too); forcing
  // another algorithm fails. forcedBy names the setting forcedAlgo came
  // from, in errors and explanations.
  static Status create(const std::string& forcedAlgo, size_t oneshotBytes, const CostModel& model,
                       const PlanShape& shape, bool reproducible, Tuning* out,
                       const char* forcedBy = "STRATA_ALGO");

  Status chooseAllreduce(const PlanShape& shape, uint64_t count, AllreduceChoice* choice) const;
  // Other collectives: the direct (one-hop) algorithms for small sizes, else
  // rings and chains; a forced algorithm with kForcesDirect or
  // kForcesPipelined forces one side, as reproducible mode forces direct.
  bool useDirect(uint64_t bytes) const;
  // Allgather of `blockBytes` per rank: Bruck's ceil(log2 n) rounds
  // (bruck.cc) rather than one hop to every peer, where the cost model
  // rates them cheaper (many ranks across nodes, small blocks), or as
  // STRATA_ALLGATHER_ALGO forces.
  bool useBruckAllgather(uint64_t blockBytes) const;
  // Reduce-scatter of `blockBytes` per rank on host memory: Bruck's rounds
  // backwards (reduce_scatter/bruck.cc) where the cost model rates them
  // below both the ring and the direct form (many ranks across nodes, small
  // blocks), or as STRATA_REDUCE_SCATTER_ALGO forces; never in
  // reproducible mode, nor where a forced allreduce algorithm forces the
  // direct or the pipelined form.
  bool useBruckReduceScatter(uint64_t blockBytes) const;
  // Otherwise its direct form rather than the ring: useDirect's rule where
  // the cost model does not rate the ring cheaper (many ranks across nodes:
  // each rank's n-1 sends, and as many connections, against the ring's
  // n-1 hops), unless STRATA_REDUCE_SCATTER_ALGO forces one of them.
  bool useDirectReduceScatter(uint64_t blockBytes) const;
  // Broadcast of `bytes`: a binomial tree (rooted.h) rather than the direct
  // form, on more than one node, where the size rule would take the direct
  // form and the cost model rates the tree below it (the root's n-1 sends,
  // and as many connections), unless a forced allreduce algorithm or
  // reproducible mode forces the direct or the pipelined form.
  bool useTreeBroadcast(uint64_t bytes) const;
  bool reproducible() const { return reproducible_; }
  const AllreduceAlgorithm* forced() const { return forced_; }  // STRATA_ALGO's, or null
  const char* forcedBy() const { return forcedBy_; }
  size_t oneshotBytes() const { return oneshotBytes_; }
  // "8B-4KiB oneshot, 8KiB-64KiB hd, 128KiB+ ring" (or the forced algorithm).
  std::string describe() const;

 private:
  static constexpr int kBuckets = 48;  // up to 2^47 bytes
  // The bucket of a size: ceil(log2(bytes)), the last one holding the rest.
  static int bucket(uint64_t bytes);
  // Whether the cost model rates a reduce-scatter's direct form of
  // `blockBytes` per rank at most the ring's.
  bool directRatedBelowRing(uint64_t blockBytes) const;
  const AllreduceAlgorithm* forced_ = nullptr;
  const char* forcedBy_ = "STRATA_ALGO";
  bool reproducible_ = false;
  size_t oneshotBytes_ = 0;
  std::array<const AllreduceAlgorithm*, kBuckets> byLog2_{};  // by ceil(log2(bytes))
  std::array<bool, kBuckets> bruckAllgatherByLog2_{};          // by ceil(log2(block bytes))
  std::array<bool, kBuckets> bruckReduceScatterByLog2_{};      // by ceil(log2(block bytes))
  std::array<bool, kBuckets> directReduceScatterRated_{};      // direct <= ring, by ceil(log2(block bytes))
  std::array<bool, kBuckets> treeBroadcastByLog2_{};           // by ceil(log2(bytes))
  int reduceScatterDirect_ = -1;  // STRATA_REDUCE_SCATTER_ALGO=direct: 1, ring: 0
};

}  // namespace strata
