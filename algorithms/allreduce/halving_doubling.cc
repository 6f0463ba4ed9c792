// Halving-doubling (Rabenseifner): a reduce-scatter by recursive halving, then
// an allgather by recursive doubling, over the layout's node-major positions.
// In halving round k a rank keeps one half of the range it is responsible
// for, sends the other half to the partner whose position differs in bit k
// and folds the partner's copy of its kept half into the output. Lowest bit
// first: the largest halves go between neighbours in the node-major order,
// usually on one node, and only the smaller ones cross nodes (with 2 nodes x
// 2 ranks: half the buffer over shared memory, a quarter over the network,
// what the hierarchical algorithm moves). After log2(p) rounds each rank
// holds the final values of 1/p of the buffer; the doubling rounds swap
// those back, highest bit first, until every rank has all of it.
// 2*log2(p) hops moving 2(p-1)/p of the buffer:
// the ring's bytes at a fraction of its latency, for medium sizes.
//
// Every final value is computed by one rank and copied, so all ranks agree
// bitwise. A range sent in a round is never written later in the halving
// phase, and the doubling phase only overwrites a range with its final
// value, which depends on the data sent: connectors may send straight from
// the caller's memory.
//
// Every element's operands are grouped by the same rounds whatever the
// chunking, but the rank that keeps it in a round, and so which operand
// comes first (the partner's), follows where the halves split, which the
// channel count and alignment move. Sums and products come out the same
// (IEEE addition and multiplication commute), min and max of -0 and +0, or
// of NaNs, may not: not the same bits at any chunking.
#include <algorithm>

#include "allreduce.h"
#include "cost_model.h"
#include "pairwise.h"

namespace strata {
namespace {

void buildHalvingDoubling(const PlanShape& shape, uint64_t count, int nchannels,
                          std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const Fold fold = Fold::of(n, shape.posOf(shape.rank));
  const uint64_t slotElems = shape.slotElems();
  const uint64_t align = shape.alignElems();
  std::vector<Range> held;
  forEachChannel(shape, count, nchannels, plans, [&](std::vector<Step>& steps, Range all) {
    uint8_t inFlags;
    if (!beginFold(steps, shape, fold, all, &inFlags)) return;
    // Halving: the range this rank is responsible for shrinks by half each
    // round; held[k] is the one it held before round k.
    held.assign(1, all);
    for (int bit = 1; bit < fold.p; bit *= 2) {
      const Range cur = held.back();
      uint64_t half = ((cur.end - cur.begin + 1) / 2 + align - 1) / align * align;
      const uint64_t mid = std::min(cur.end, cur.begin + half);
      const bool low = (fold.vpos & bit) == 0;
      const Range keep = low ? Range{cur.begin, mid} : Range{mid, cur.end};
      const Range give = low ? Range{mid, cur.end} : Range{cur.begin, mid};
      const int peer = shape.rankAt(fold.posOfVirtual(fold.vpos ^ bit, n));
      const bool last = bit * 2 == fold.p;
      appendExchange(steps,
                     {peer, give, keep, inFlags, Prim::RecvReduceCopy,
                      static_cast<uint8_t>(inFlags | (last ? 0 : kPartial))},
                     slotElems);
      inFlags = kInFromOutput;
      held.push_back(keep);
    }
    // Doubling: undo the halving rounds in reverse, swapping final ranges.
    for (int bit = fold.p / 2, k = static_cast<int>(held.size()) - 1; bit >= 1; bit /= 2, --k) {
      const Range mine = held[k];
      const Range parent = held[k - 1];
      const Range theirs = mine.begin == parent.begin ? Range{mine.end, parent.end}
                                                      : Range{parent.begin, mine.begin};
      const int peer = shape.rankAt(fold.posOfVirtual(fold.vpos ^ bit, n));
      // `theirs` holds what this rank sent the partner in halving round k:
      // the partner's final values of it come only after those bytes left.
      appendExchange(steps, {peer, mine, theirs, kInFromOutput, Prim::Recv, kLandsEarly}, slotElems);
    }
    endFold(steps, shape, fold, all);
  });
}

double hdUs(const CostView& v, double bytes) {
  const Fold f = Fold::of(v.shape.nranks, 0);
  double t = foldCostUs(v, f, bytes);
  double part = bytes;
  const double efficiency = f.p > 2 ? kExchangeEfficiency : 1.0;
  for (int bit = 1; bit < f.p; bit *= 2) {
    part /= 2;
    const RoundCost r = roundCost(v, f, bit);
    t += 2 * r.us(part, efficiency) + v.reduceUs(part);
  }
  return t;
}

}  // namespace

const AllreduceAlgorithm kHalvingDoubling{
    "hd", "halving-doubling (Rabenseifner): reduce-scatter by halving, allgather by doubling",
    buildHalvingDoubling, hdUs, kInputStable | kInputStableInPlace};

}  // namespace strata
