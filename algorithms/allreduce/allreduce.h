// Allreduce algorithms: each builds, for one rank, the per-channel plans of an
// allreduce of `count` elements. Plans depend only on (shape, count) and the
// layout every rank shares, so every rank builds matching plans without
// talking to the others.
#pragma once

#include <string>
#include <vector>

#include "plan.h"
#include "status.h"

namespace strata {

enum class AllreduceAlgo { Ring, OneShot, RecursiveDoubling, HalvingDoubling, Tree, Hierarchical };

const char* algoName(AllreduceAlgo algo);

// Ring (ring.cc): reduce-scatter then allgather around the node-major order.
void buildRingAllreduce(const PlanShape& shape, uint64_t count, int nchannels,
                        std::vector<ChannelPlan>& plans);

// One-shot (oneshot.cc): every rank sends its input to every other rank and
// folds all inputs in rank order. The buffer must fit one slot.
void buildOneShotAllreduce(const PlanShape& shape, uint64_t count, std::vector<ChannelPlan>& plans);

// Recursive doubling (recursive_doubling.cc): log2 rounds of whole-buffer
// swaps. Writes what it sends in the same round: no sending from the
// caller's memory.
void buildRecursiveDoubling(const PlanShape& shape, uint64_t count, int nchannels,
                            std::vector<ChannelPlan>& plans);

// Halving-doubling, Rabenseifner's (halving_doubling.cc).
void buildHalvingDoubling(const PlanShape& shape, uint64_t count, int nchannels,
                          std::vector<ChannelPlan>& plans);

// Pipelined tree over the hierarchy (tree.cc): chains within nodes, a binary
// tree between them.
void buildTreeAllreduce(const PlanShape& shape, uint64_t count, int nchannels,
                        std::vector<ChannelPlan>& plans);

// Hierarchical (hierarchical.cc): node reduce-scatter, allreduce between
// nodes, node allgather. The flat ring on one node or one rank per node.
void buildHierarchicalAllreduce(const PlanShape& shape, uint64_t count, int nchannels,
                                std::vector<ChannelPlan>& plans);

// Builds `algo`'s plans on `nchannels` channels (one-shot always uses one).
void buildAllreduce(AllreduceAlgo algo, const PlanShape& shape, uint64_t count, int nchannels,
                    std::vector<ChannelPlan>& plans);

// Whether connectors may send from the caller's memory (OpContext::sendFromCaller).
bool allreduceInputStable(AllreduceAlgo algo, bool inPlace);

}  // namespace strata
