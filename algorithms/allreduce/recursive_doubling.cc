// Recursive doubling: log2(p) rounds; in round k each rank swaps its whole
// partial result with the rank whose position differs in bit k and folds
// the two. Positions are the layout's node-major order, so the first rounds
// pair ranks of one node and only the last ones cross nodes. A rank count
// that is not a power of two first folds the extra ranks into partners
// (pairwise.h) and hands them the result at the end: two more hops.
//
// Bitwise agreement: in each round both partners evaluate (lower
// position's value) op (higher's) from the same two values, so every rank
// ends with the same bits (even for min/max of -0 and +0, or NaNs). The latency is log2(p) hops against the ring's 2(n-1);
// the bytes, p's log2 times the buffer, make it a small-message algorithm.
// Every element goes through the same rounds in the same operand order
// whatever range or slot it is in: the same bits at any chunking.
//
// A round writes the output that the same round sends from, so sends must
// copy into slots (connectors may not send from the caller's memory).
#include <algorithm>

#include "allreduce.h"
#include "pairwise.h"

namespace strata {
namespace {

void buildRecursiveDoubling(const PlanShape& shape, uint64_t count, int nchannels,
                            std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const Fold fold = Fold::of(n, shape.posOf(shape.rank));
  forEachChannel(shape, count, nchannels, plans, [&](std::vector<Step>& steps, Range all) {
    uint8_t inFlags;
    if (!beginFold(steps, shape, fold, all, &inFlags)) return;
    for (int bit = 1; bit < fold.p; bit <<= 1) {
      const int peer = shape.rankAt(fold.posOfVirtual(fold.vpos ^ bit, n));
      const bool last = bit * 2 == fold.p;
      const bool lower = (fold.vpos & bit) == 0;
      appendExchange(steps,
                     {peer, all, all, inFlags, Prim::RecvReduceCopy,
                      static_cast<uint8_t>(inFlags | (last ? 0 : kPartial) | (lower ? kOwnFirst : 0))},
                     shape.slotElems());
      inFlags = kInFromOutput;
    }
    endFold(steps, shape, fold, all);
  });
}

double rdUs(const CostView& v, double bytes) {
  const Fold f = Fold::of(v.shape.nranks, 0);
  double t = foldCostUs(v, f, bytes);
  for (int bit = 1; bit < f.p; bit *= 2) {
    const RoundCost r = roundCost(v, f, bit);
    t += r.us(bytes) + v.reduceUs(bytes);
  }
  return t;
}

}  // namespace

const AllreduceAlgorithm kRecursiveDoubling{
    "rd", "recursive doubling: log2(n) swaps of the whole buffer", buildRecursiveDoubling, rdUs,
    kSameBitsAnyChunking};

}  // namespace strata
