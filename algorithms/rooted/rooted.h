// Rooted collectives: broadcast from a root, reduce to a root.
//
// Both move the buffer one slot-sized chunk at a time, on `nchannels`
// channels. Direct: one hop per chunk, the root sends to every rank, or
// every rank sends to the root, which folds all inputs in rank order straight
// out of their slots (least latency on one node; the root moves n-1 copies
// and, across nodes, pays a network send for each). Chain: a pipelined chain
// that starts (broadcast) or ends (reduce) at the root: every link carries
// the buffer once and all links are busy at the same time, time ~ size /
// bandwidth + (n-2) chunks of latency. Tree (broadcast): a binomial tree
// over the layout's walking order from the root, ceil(log2 n) hops deep,
// each rank talking to its parent and at most ceil(log2 n) children, where
// the direct form's root sends to, and connects to, every other rank.
#pragma once

#include <cstdint>
#include <vector>

#include "cost_model.h"
#include "plan.h"

namespace strata {

enum class RootedForm : uint8_t { Direct, Chain, Tree };

// Broadcast of `count` elements: the root's input reaches every rank's output
// (the root's own output too, unless it is the input).
void buildBroadcast(const PlanShape& shape, uint64_t count, int root, RootedForm form, int nchannels,
                    std::vector<ChannelPlan>& plans);

// Reduce of `count` elements: op over every rank's input, into the root's output.
void buildReduce(const PlanShape& shape, uint64_t count, int root, bool direct, int nchannels,
                 std::vector<ChannelPlan>& plans);

// The cost model's estimates of a broadcast of `bytes` in the direct form
// and as a tree, in microseconds, from position 0 of the layout's order.
double directBroadcastUs(const CostView& v, double bytes);
double treeBroadcastUs(const CostView& v, double bytes);

}  // namespace strata
