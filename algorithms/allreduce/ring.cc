// Ring allreduce: reduce-scatter, then allgather, around every rank in the
// layout's node-major order (receive from the previous position, send to the
// next), so the ring crosses between nodes once per node.
//
// Each channel owns a contiguous range of the buffer and walks it in slices
// of n blocks, a block being at most one slot (ring_pass.h has the schedule).
// Bytes on the wire per rank: 2(n-1)/n of the buffer. Memory traffic per
// rank and byte of result: the input is read once, each received block is
// read once from the peer's slot, and the output is written once; block i's
// final sum is computed by one rank alone and copied by the others, so every
// rank ends with the same bits. Which rank finishes a block, and so the
// order its elements' operands are folded in (from the position after the
// finisher round to it), depends on where the slot size and the channel
// count cut the blocks: not the same bits at any chunking.
#include <algorithm>

#include "allreduce.h"
#include "cost_model.h"
#include "ring_pass.h"

namespace strata {
namespace {

void buildRingAllreduce(const PlanShape& shape, uint64_t count, int nchannels,
                        std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = shape.rankAt(i);
  const RingGroup g{order.data(), n, shape.posOf(shape.rank)};
  const uint64_t sliceMax = shape.slotElems() * n;
  for (int ch = 0; ch < nchannels; ++ch) {
    auto& steps = plans[ch].steps;
    steps.clear();
    auto [begin, end] = channelRange(count, nchannels, ch, shape.alignElems());
    for (uint64_t slice = begin; slice < end; slice += sliceMax)
      appendRingAllreduce(steps, g, slice, std::min(sliceMax, end - slice), shape.alignElems(), 0);
  }
}

double ringUs(const CostView& v, double bytes) {
  const int n = v.shape.nranks;
  const int nodes = v.nodes();
  // A block goes 2(n-1) hops, `crossings` of every n between nodes; the
  // steps overlap, so the slowest link sets the bandwidth.
  const int crossings = nodes > 1 ? nodes : 0;
  const double hopUs = (crossings * v.model.net.latencyUs + (n - crossings) * v.model.shm.latencyUs) / n;
  const LinkCost& slow = nodes > 1 ? v.model.net : v.model.shm;
  return 2 * (n - 1) * (hopUs + bytes / n / (slow.gbps * 1e3)) + v.reduceUs(bytes * (n - 1) / n);
}

}  // namespace

const AllreduceAlgorithm kRingAllreduce{
    "ring", "reduce-scatter + allgather around the node-major ring", buildRingAllreduce, ringUs,
    kInputStable | kInputStableInPlace | kForcesPipelined};

}  // namespace strata
