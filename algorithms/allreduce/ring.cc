// Ring allreduce: reduce-scatter, then allgather, around ranks 0..n-1
// (receive from rank-1, send to rank+1).
//
// Each channel owns a contiguous range of the buffer and walks it in slices
// of n blocks, a block being at most one slot. For block b of a slice, on rank
// r (NCCL's schedule):
//   send                 block r-1        input -> slot(next)
//   recvReduceSend       blocks r-2..r-n+1  slot(prev) op input -> slot(next)
//   recvReduceCopySend   block r          slot(prev) op input -> output, slot(next)
//   recvCopySend         blocks r-1..r-n+2  slot(prev) -> output, slot(next)
//   recv                 block r+1        slot(prev) -> output
// Bytes on the wire per rank: 2(n-1)/n of the buffer. Memory traffic per
// rank and byte of result: the input is read once, each received block is
// read once from the peer's slot, and the output is written once; block r's
// final sum is computed by rank r alone and copied by the others, so every
// rank ends with the same bits.
#include <algorithm>

#include "allreduce.h"

namespace strata {

void buildRingAllreduce(const PlanShape& shape, uint64_t count, int nchannels,
                        std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const int r = shape.rank;
  const int next = (r + 1) % n;
  const int prev = (r + n - 1) % n;
  const uint64_t align = shape.alignElems();
  const uint64_t slotElems = shape.slotElems();

  for (int ch = 0; ch < nchannels; ++ch) {
    auto& steps = plans[ch].steps;
    steps.clear();
    auto [begin, end] = channelRange(count, nchannels, ch, align);
    if (n == 1) {
      if (end > begin) steps.push_back({Prim::Copy, 0, -1, -1, begin, begin, end - begin});
      continue;
    }
    for (uint64_t slice = begin; slice < end; slice += slotElems * n) {
      uint64_t sliceElems = std::min<uint64_t>(slotElems * n, end - slice);
      uint64_t blockElems = ((sliceElems + n - 1) / n + align - 1) / align * align;
      auto add = [&](Prim prim, int block, int recvPeer, int sendPeer) {
        uint64_t off = std::min<uint64_t>(sliceElems, uint64_t(block) * blockElems);
        uint64_t len = std::min<uint64_t>(blockElems, sliceElems - off);
        // Empty blocks are empty on every rank, so their steps vanish in pairs.
        if (len > 0) steps.push_back({prim, 0, recvPeer, sendPeer, slice + off, slice + off, len});
      };
      auto mod = [n](int x) { return ((x % n) + n) % n; };
      add(Prim::Send, mod(r - 1), -1, next);
      for (int j = 2; j < n; ++j) add(Prim::RecvReduceSend, mod(r - j), prev, next);
      add(Prim::RecvReduceCopySend, r, prev, next);
      for (int j = 1; j < n - 1; ++j) add(Prim::RecvCopySend, mod(r - j), prev, next);
      add(Prim::Recv, mod(r + 1), prev, -1);
    }
  }
}

}  // namespace strata
