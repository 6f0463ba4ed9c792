// Ordered allreduce, for reproducible results (STRATA_REPRODUCIBLE): every
// element is in_0 op in_1 op ... op in_{n-1}, folded in rank order, as the
// one-shot algorithm folds it, whatever the size, the slot size, the channel
// count, the transports or the layout. Each slice of a channel's range is cut
// into n blocks; rank r sends block b of its input to rank b, folds block r
// of every rank's input straight out of the slots (ReduceAll), then sends the
// result to every rank and receives theirs: a direct reduce-scatter, then a
// direct allgather, the next slice's blocks leaving before this slice's
// results come back. A block is a slot, or less in a range of few slots.
// Bytes on the wire per rank: 2(n-1)/n of the buffer, as the ring's.
//
// Not picked by the cost model outside reproducible mode: the ring and
// halving-doubling move the same bytes with fewer connectors at once.
#include <algorithm>

#include "allreduce.h"
#include "cost_model.h"

namespace strata {
namespace {

constexpr uint64_t kMinSlices = 8;

void buildOrderedAllreduce(const PlanShape& shape, uint64_t count, int nchannels, std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const int r = shape.rank;
  const uint64_t align = shape.alignElems();
  forEachChannel(shape, count, nchannels, plans, [&](std::vector<Step>& steps, Range all) {
    // A slice's blocks leave, are folded, and come back: a range of fewer
    // than kMinSlices whole-slot slices gets smaller blocks (down to a
    // quarter slot), so that the next slices' blocks travel while this
    // one's are folded. 4 ranks on shared memory, near cores: 1 MiB took
    // 430 us in one slice and 190 in eight, as the ring; 2 and 4 MiB
    // 1.8x and 1.4x the ring's time, then 0.95x and 1.06x. Larger ranges
    // keep whole-slot blocks: each message costs a socket transport more
    // than it saves there (tcp, 2 and 4 ranks: 1.1-1.3x with quarter-slot
    // blocks at 2-128 MiB).
    const uint64_t wanted = (all.end - all.begin + uint64_t(n) * kMinSlices - 1) / (uint64_t(n) * kMinSlices);
    const uint64_t blockMax = std::clamp((wanted + align - 1) / align * align,
                                         std::max(align, shape.slotElems() / 4 / align * align), shape.slotElems());
    const uint64_t sliceMax = blockMax * n;
    // Slice k's block b: [begin(k, b), begin(k, b + 1)).
    auto begin = [&](uint64_t slice, int b) {
      const uint64_t len = std::min(sliceMax, all.end - slice);
      uint64_t blockElems = (len + n - 1) / n;
      blockElems = (blockElems + align - 1) / align * align;
      return slice + std::min(len, uint64_t(b) * blockElems);
    };
    auto size = [&](uint64_t slice, int b) { return begin(slice, b + 1) - begin(slice, b); };
    auto scatter = [&](uint64_t slice) {  // block b of this rank's input to rank b
      for (int i = 1; i < n; ++i) {
        const int peer = (r + i) % n;
        if (size(slice, peer) > 0)
          steps.push_back({Prim::Send, 0, -1, peer, begin(slice, peer), begin(slice, peer), size(slice, peer)});
      }
    };
    scatter(all.begin);
    for (uint64_t slice = all.begin; slice < all.end; slice += sliceMax) {
      const uint64_t own = begin(slice, r), ownSize = size(slice, r);
      if (ownSize > 0) steps.push_back({Prim::ReduceAll, 0, -1, -1, own, own, ownSize});
      for (int i = 1; i < n && ownSize > 0; ++i) {
        Step s{Prim::Send, 0, -1, (r + i) % n, own, own, ownSize};
        s.flags = kInFromOutput;
        steps.push_back(s);
      }
      // The next slice's blocks leave before this one's results arrive, so
      // that their owners can fold them meanwhile. Each connector still
      // carries one rank's messages in the order its peer takes them.
      if (slice + sliceMax < all.end) scatter(slice + sliceMax);
      for (int i = 1; i < n; ++i) {
        const int owner = (r + n - i) % n;
        if (size(slice, owner) > 0)
          steps.push_back({Prim::Recv, 0, owner, -1, begin(slice, owner), begin(slice, owner), size(slice, owner)});
      }
    }
  });
}

double orderedUs(const CostView& v, double bytes) {
  const int n = v.shape.nranks;
  const LinkCost& slow = v.nodes() > 1 ? v.model.net : v.model.shm;
  // Two phases of n-1 blocks of bytes/n leaving one after the other.
  return 2 * (slow.latencyUs + (n - 1) * bytes / n / (slow.gbps * 1e3)) + v.reduceUs(bytes * (n - 1) / n);
}

}  // namespace

const AllreduceAlgorithm kOrderedAllreduce{
    "ordered", "each rank folds its block of every rank's input in rank order, then sends it to all (reproducible)",
    buildOrderedAllreduce, orderedUs, kInputStable | kSameBitsAnyChunking | kRankOrder | kReproducibleOnly | kForcesDirect};

}  // namespace strata
