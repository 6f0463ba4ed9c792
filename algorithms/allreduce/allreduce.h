// Allreduce algorithms: each builds, for one rank, the per-channel plans of an
// allreduce of `count` elements. Plans depend only on (shape, count), so every
// rank builds matching plans without talking to the others.
#pragma once

#include <string>
#include <vector>

#include "plan.h"
#include "status.h"

namespace strata {

enum class AllreduceAlgo { Ring, OneShot };

struct AllreduceChoice {
  AllreduceAlgo algo;
  int nchannels;  // channels the plan uses (<= shape.nchannels)
};

enum class ForcedAlgo { None, Ring, OneShot };

struct AllreduceTuning {
  ForcedAlgo forced;    // STRATA_ALGO
  size_t oneshotBytes;  // STRATA_ONESHOT_BYTES
};

const char* algoName(AllreduceAlgo algo);

// Parses STRATA_ALGO ("", "ring", "oneshot"); INVALID_ARGUMENT otherwise.
Status parseForcedAlgo(const std::string& text, ForcedAlgo* out);

// Picks the algorithm for `count` elements. One-shot when the whole buffer
// fits one slot and is at most tuning.oneshotBytes: one hop, no pipeline.
Status chooseAllreduce(const PlanShape& shape, uint64_t count, const AllreduceTuning& tuning,
                       AllreduceChoice* choice);

// Ring (ring.cc): reduce-scatter then allgather around ranks 0..n-1.
void buildRingAllreduce(const PlanShape& shape, uint64_t count, int nchannels,
                        std::vector<ChannelPlan>& plans);

// One-shot (oneshot.cc): every rank sends its input to every other rank and
// folds all inputs in rank order.
void buildOneShotAllreduce(const PlanShape& shape, uint64_t count, std::vector<ChannelPlan>& plans);

}  // namespace strata
