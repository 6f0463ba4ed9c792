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
// rank ends with the same bits.
#include <algorithm>

#include "allreduce.h"
#include "ring_pass.h"

namespace strata {

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

}  // namespace strata
