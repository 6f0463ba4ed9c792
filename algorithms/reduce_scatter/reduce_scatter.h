// Reduce-scatter: rank r's output is op over every rank's input block r (the
// input holds nranks blocks of `count` elements).
//
// Ring (bandwidth): block r-1 leaves, blocks r-2 .. r-n+1 are received,
// reduced with the own input and passed on, block r is received and reduced
// into the output; one slot-sized piece of every block at a time. Each rank
// sends and receives (n-1)/n of the input.
// Direct (latency): every rank sends block p to rank p, and rank p folds all
// inputs of its block in rank order straight out of the slots: one hop.
// Bruck's (log depth, bruck.cc): ceil(log2 n) rounds to ceil(log2 n) peers
// each way, partial sums kept in the operation's scratch region.
#pragma once

#include <vector>

#include "plan.h"

namespace strata {

void buildReduceScatter(const PlanShape& shape, uint64_t count, bool direct, int nchannels,
                        std::vector<ChannelPlan>& plans);

void buildBruckReduceScatter(const PlanShape& shape, uint64_t count, int nchannels, std::vector<ChannelPlan>& plans);
// Elements of scratch (OpContext::scratch) the plans of
// buildBruckReduceScatter use on `nranks` ranks, every channel's together.
uint64_t bruckReduceScatterScratch(int nranks, uint64_t count);

// The cost model's estimates (cost_model.h) of one reduce-scatter of
// `blockBytes` per rank with each schedule; the planner takes Bruck's where
// it is the cheapest of the three.
struct CostView;
double ringReduceScatterUs(const CostView& v, double blockBytes);
double directReduceScatterUs(const CostView& v, double blockBytes);
double bruckReduceScatterUs(const CostView& v, double blockBytes);

}  // namespace strata
