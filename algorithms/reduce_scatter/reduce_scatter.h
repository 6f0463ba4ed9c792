// Reduce-scatter: rank r's output is op over every rank's input block r (the
// input holds nranks blocks of `count` elements).
//
// Ring (bandwidth): block r-1 leaves, blocks r-2 .. r-n+1 are received,
// reduced with the own input and passed on, block r is received and reduced
// into the output; one slot-sized piece of every block at a time. Each rank
// sends and receives (n-1)/n of the input.
// Direct (latency): every rank sends block p to rank p, and rank p folds all
// inputs of its block in rank order straight out of the slots: one hop.
#pragma once

#include <vector>

#include "plan.h"

namespace strata {

void buildReduceScatter(const PlanShape& shape, uint64_t count, bool direct, int nchannels,
                        std::vector<ChannelPlan>& plans);

}  // namespace strata
