#include "allreduce.h"

namespace strata {

void buildAllreduce(AllreduceAlgo algo, const PlanShape& shape, uint64_t count, int nchannels,
                    std::vector<ChannelPlan>& plans) {
  switch (algo) {
    case AllreduceAlgo::Ring: return buildRingAllreduce(shape, count, nchannels, plans);
    case AllreduceAlgo::OneShot: return buildOneShotAllreduce(shape, count, plans);
    case AllreduceAlgo::RecursiveDoubling: return buildRecursiveDoubling(shape, count, nchannels, plans);
    case AllreduceAlgo::HalvingDoubling: return buildHalvingDoubling(shape, count, nchannels, plans);
    case AllreduceAlgo::Tree: return buildTreeAllreduce(shape, count, nchannels, plans);
    case AllreduceAlgo::Hierarchical: return buildHierarchicalAllreduce(shape, count, nchannels, plans);
  }
}

bool allreduceInputStable(AllreduceAlgo algo, bool inPlace) {
  // One-shot in place folds into its input while its sends may still be
  // leaving; recursive doubling overwrites, in each round, what it sends.
  if (algo == AllreduceAlgo::OneShot) return !inPlace;
  return algo != AllreduceAlgo::RecursiveDoubling;
}

}  // namespace strata
