// One-shot allreduce for small buffers: every rank sends its whole input to
// every other rank (n-1 sends), then folds all n inputs in rank order straight
// out of the peers' slots. One hop of latency instead of the ring's 2(n-1);
// each rank reads n-1 peer inputs, which is cheap while the buffer is small.
// Payloads up to 32 bytes ride inline with the slot flag (one cache line).
//
// The buffer fits one slot, so one channel carries it. Every element is
// in_0 op in_1 op ... op in_{n-1} on every rank, whatever the slot size.
// In place, the fold writes the input while its sends may still be leaving.
#include <algorithm>

#include "allreduce.h"
#include "cost_model.h"

namespace strata {
namespace {

void buildOneShotAllreduce(const PlanShape& shape, uint64_t count, int /*nchannels: 1*/,
                           std::vector<ChannelPlan>& plans) {
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

double oneshotUs(const CostView& v, double bytes) {
  double worstLat = 0, sendUs = 0;
  for (int p = 1; p < v.shape.nranks; ++p) {
    const LinkCost& l = v.link(0, p);
    worstLat = std::max(worstLat, l.latencyUs);
    // Sends leave one after the other from one thread; a network send is a
    // system call and a wake-up on the other side, a memory one a copy.
    sendUs += (v.cross(0, p) ? l.latencyUs : 0) + bytes / (l.gbps * 1e3);
  }
  return worstLat + sendUs + v.reduceUs(bytes * (v.shape.nranks - 1));
}

}  // namespace

const AllreduceAlgorithm kOneShotAllreduce{
    "oneshot", "every rank sends its buffer to every other and folds them all", buildOneShotAllreduce,
    oneshotUs, kInputStable | kSameBitsAnyChunking | kRankOrder | kOneSlot | kUpToOneshotBytes | kForcesDirect};

}  // namespace strata
