// Rooted collectives: broadcast from a root, reduce to a root.
//
// Both move the buffer one slot-sized chunk at a time, on `nchannels`
// channels. `direct`: one hop per chunk, the root sends to every rank, or
// every rank sends to the root, which folds all inputs in rank order straight
// out of their slots (least latency; the root moves n-1 copies). Otherwise a
// pipelined chain that starts (broadcast) or ends (reduce) at the root: every
// link carries the buffer once and all links are busy at the same time,
// time ~ size / bandwidth + (n-2) chunks of latency.
#pragma once

#include <vector>

#include "plan.h"

namespace strata {

// Broadcast of `count` elements: the root's input reaches every rank's output
// (the root's own output too, unless it is the input).
void buildBroadcast(const PlanShape& shape, uint64_t count, int root, bool direct, int nchannels,
                    std::vector<ChannelPlan>& plans);

// Reduce of `count` elements: op over every rank's input, into the root's output.
void buildReduce(const PlanShape& shape, uint64_t count, int root, bool direct, int nchannels,
                 std::vector<ChannelPlan>& plans);

}  // namespace strata
