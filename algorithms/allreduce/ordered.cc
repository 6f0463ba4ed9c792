// Ordered allreduce, for reproducible results (STRATA_REPRODUCIBLE): every
// element is in_0 op in_1 op ... op in_{n-1}, folded in rank order, as the
// one-shot algorithm folds it, whatever the size, the slot size, the channel
// count, the transports or the layout. Each slice of a channel's range is cut
// into n blocks; rank r sends block b of its input to rank b, folds block r
// of every rank's input straight out of the slots (ReduceAll), then sends the
// result to every rank and receives theirs: a direct reduce-scatter, then a
// direct allgather. Bytes on the wire per rank: 2(n-1)/n of the buffer, as
// the ring's; each phase's sends all go before its receives, so ranks never
// wait on each other's full FIFOs.
//
// Not picked by the cost model outside reproducible mode: the ring and
// halving-doubling move the same bytes with fewer connectors at once.
#include <algorithm>

#include "allreduce.h"
#include "cost_model.h"

namespace strata {
namespace {

void buildOrderedAllreduce(const PlanShape& shape, uint64_t count, int nchannels, std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const int r = shape.rank;
  const uint64_t align = shape.alignElems();
  const uint64_t sliceMax = shape.slotElems() * n;
  forEachChannel(shape, count, nchannels, plans, [&](std::vector<Step>& steps, Range all) {
    for (uint64_t slice = all.begin; slice < all.end; slice += sliceMax) {
      const uint64_t len = std::min(sliceMax, all.end - slice);
      uint64_t blockElems = (len + n - 1) / n;
      blockElems = (blockElems + align - 1) / align * align;
      auto begin = [&](int b) { return slice + std::min(len, uint64_t(b) * blockElems); };
      auto size = [&](int b) { return begin(b + 1) - begin(b); };
      for (int i = 1; i < n; ++i) {
        const int peer = (r + i) % n;
        if (size(peer) > 0) steps.push_back({Prim::Send, 0, -1, peer, begin(peer), begin(peer), size(peer)});
      }
      if (size(r) > 0) steps.push_back({Prim::ReduceAll, 0, -1, -1, begin(r), begin(r), size(r)});
      for (int i = 1; i < n && size(r) > 0; ++i) {
        Step s{Prim::Send, 0, -1, (r + i) % n, begin(r), begin(r), size(r)};
        s.flags = kInFromOutput;
        steps.push_back(s);
      }
      for (int i = 1; i < n; ++i) {
        const int owner = (r + n - i) % n;
        if (size(owner) > 0) steps.push_back({Prim::Recv, 0, owner, -1, begin(owner), begin(owner), size(owner)});
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
