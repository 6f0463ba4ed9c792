// One-shot allreduce for small buffers: every rank sends its whole input to
// every other rank (n-1 sends), then folds all n inputs in rank order straight
// out of the peers' slots. One hop of latency instead of the ring's 2(n-1);
// each rank reads n-1 peer inputs, which is cheap while the buffer is small.
// Payloads up to 32 bytes ride inline with the slot flag (one cache line).
#include "allreduce.h"

namespace strata {

void buildOneShotAllreduce(const PlanShape& shape, uint64_t count, std::vector<ChannelPlan>& plans) {
  auto& steps = plans[0].steps;
  steps.clear();
  if (shape.nranks == 1) {
    steps.push_back({Prim::Copy, 0, -1, -1, 0, 0, count});
    return;
  }
  // Start with the next rank so that ranks do not all hit rank 0 first.
  for (int i = 1; i < shape.nranks; ++i)
    steps.push_back({Prim::Send, 0, -1, (shape.rank + i) % shape.nranks, 0, 0, count});
  steps.push_back({Prim::ReduceAll, 0, -1, -1, 0, 0, count});
}

}  // namespace strata
