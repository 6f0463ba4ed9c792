// Allgather in ceil(log2 n) rounds for any n (Bruck's schedule, on the
// layout's walking order). Before round k the rank at position i holds the
// blocks of positions i .. i+2^k-1; in round k it sends the first
// m = min(2^k, n-2^k) of them to position i-2^k and receives the blocks of
// positions i+2^k .. i+2^k+m-1 from position i+2^k, so every rank talks to
// ceil(log2 n) peers each way. Each received block lands at its final offset
// in the output and is sent on from there (kInFromOutput), so no rotation
// pass follows. Bytes: each rank sends and receives (n-1) blocks, as the
// one-hop exchange does, but in log2 n hops of latency instead of n-1
// messages; what it gives up is overlap, since a block forwarded in round k
// waits for its arrival in an earlier round.
//
// Every channel carries the same share of every block, so a block is
// received and forwarded on one channel and its steps' order is the whole
// dependency. Within a round the blocks of consecutive ranks are one run of
// the output; runs are cut into slot-sized pieces, and a rank alternates
// sending its piece i and receiving its piece i. Deadlock-free with one slot
// per FIFO: order every rank's steps by (round, piece, send before
// receive); the blocked rank furthest behind waits either for a sender
// that is further still (it has not sent piece i) or for a receiver that has
// not taken an earlier piece, also further behind. Neither exists.
#include <algorithm>

#include "cost_model.h"
#include "exchange.h"

namespace strata {
namespace {

// Calls fn(outOffset, len) for each piece of the blocks of positions
// first .. first+m-1 (mod n), `share` of each; sender and receiver both call
// it with the sender's position, so their pieces match one for one.
template <typename Fn>
void forEachPiece(const PlanShape& shape, int first, int m, uint64_t count, Range share, Fn fn) {
  const int n = shape.nranks;
  const uint64_t slotElems = shape.slotElems();
  // Whole blocks of consecutive ranks are contiguous in the output.
  const bool whole = share.begin == 0 && share.end == count;
  for (int j = 0; j < m;) {
    const int rank = shape.rankAt((first + j) % n);
    int run = 1;
    while (whole && j + run < m && shape.rankAt((first + j + run) % n) == rank + run) ++run;
    const uint64_t begin = uint64_t(rank) * count + share.begin;
    const uint64_t end = uint64_t(rank + run - 1) * count + share.end;
    for (uint64_t off = begin; off < end; off += slotElems) fn(off, std::min(slotElems, end - off));
    j += run;
  }
}

}  // namespace

void buildBruckAllgather(const PlanShape& shape, uint64_t count, int nchannels, std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const int pos = shape.posOf(shape.rank);
  const uint64_t own = uint64_t(shape.rank) * count;
  struct Piece {
    uint64_t offset, len;
  };
  std::vector<Piece> sends, recvs;
  forEachChannel(shape, count, nchannels, plans, [&](std::vector<Step>& steps, Range share) {
    for (int dist = 1; dist < n; dist *= 2) {
      const int m = std::min(dist, n - dist);
      const int to = shape.rankAt((pos - dist + n) % n);
      const int from = shape.rankAt((pos + dist) % n);
      sends.clear();
      recvs.clear();
      forEachPiece(shape, pos, m, count, share, [&](uint64_t off, uint64_t len) { sends.push_back({off, len}); });
      forEachPiece(shape, (pos + dist) % n, m, count, share,
                   [&](uint64_t off, uint64_t len) { recvs.push_back({off, len}); });
      for (size_t i = 0; i < std::max(sends.size(), recvs.size()); ++i) {
        if (i < sends.size()) {
          const Piece& p = sends[i];
          // Round 0 sends the own block from the input and writes it to the
          // output with one read; later rounds send from the output.
          if (dist == 1) steps.push_back({Prim::CopySend, 0, -1, to, p.offset - own, p.offset, p.len});
          else steps.push_back({Prim::Send, 0, -1, to, p.offset, 0, p.len, kInFromOutput});
        }
        // Each block is written once, by its receive, and read only after:
        // it may land as it arrives.
        if (i < recvs.size())
          steps.push_back({Prim::Recv, 0, from, -1, 0, recvs[i].offset, recvs[i].len, kLandsEarly});
      }
    }
  });
}

double bruckAllgatherUs(const CostView& v, double blockBytes) {
  const int n = v.shape.nranks;
  const double efficiency = n > 2 ? kExchangeEfficiency : 1;
  double us = 0;
  for (int dist = 1; dist < n; dist *= 2) {
    // Every rank sends at once: as recursive doubling's rounds (pairwise.cc),
    // a round that crosses pays the queued part of the network latency once
    // per crossing rank of the node with the most (LinkCost::burstUs), and
    // on a shared link their bytes one after another.
    const int crossers = v.mostCrossing(-dist);
    const LinkCost& l = crossers ? v.model.net : v.model.shm;
    const int senders = std::max(1, crossers);
    us += l.burstUs(senders) +
          l.sharers(senders) * std::min(dist, n - dist) * blockBytes / (l.gbps * 1e3) / efficiency;
  }
  return us;
}

}  // namespace strata
