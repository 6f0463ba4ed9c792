// Reduce-scatter in ceil(log2 n) rounds for any n: Bruck's allgather
// (exchange/bruck.cc) run backwards, on the layout's walking order. Blocks
// are named relative to the holder: block t of the rank at position i is the
// block of position i+t. Before the round of distance d (d = 2^k, taken from
// the largest down to 1) position i holds partial sums of its blocks
// 0 .. d+m-1, m = min(d, n-d); it sends blocks d .. d+m-1 to position i+d
// and receives from position i-d that rank's partials of the same blocks,
// which are its own blocks 0 .. m-1, and folds them in (slot op own). After
// the round it holds blocks 0 .. d-1; after the last (d = 1), block 0, its
// result, goes to the output. Every rank talks to ceil(log2 n) peers each
// way. Bytes: each rank sends and receives n-1 blocks and folds n-1, as the
// ring does, in log2 n dependent rounds instead of n-1.
//
// A block received in one round is sent or folded again in a later one, so
// its partial sum is kept in the operation's scratch region (kOutToScratch),
// block t at t*count: blocks 0 .. M-1 with M the largest m of a round before
// the last, at most n/2. Blocks never received are read from the input, which
// is never written; the output is written once, by the last round.
//
// Every element's fold order follows from n alone: the same bits on every
// run, whatever the channels, slots or transports, but not rank order, so
// reproducible mode never takes it.
//
// Channels and pieces as in Bruck's allgather: every channel carries the
// same share of every block; within a round, blocks that sit one after
// another in every buffer a piece touches (the sender's source, the
// receiver's partial and destination) travel as one run, cut into slot-sized
// pieces, a send and a receive alternating. The same argument makes one slot
// per FIFO enough: order each rank's steps by (round, piece, send before
// receive); the blocked rank furthest behind would wait on one further still.
#include <algorithm>

#include "cost_model.h"
#include "exchange.h"
#include "reduce_scatter.h"

namespace strata {
namespace {

int roundBlocks(int n, int dist) { return std::min(dist, n - dist); }

// Blocks 0 .. (this)-1 hold partial sums in scratch before the round of
// distance `dist`: those a round of a larger distance received.
int scratchBlocksBefore(int n, int dist) {
  int most = 0;
  for (int d = 2 * dist; d < n; d *= 2) most = std::max(most, roundBlocks(n, d));
  return most;
}

// Where a block's partial sum sits: the input (at its rank's block), scratch
// (at the holder's relative block) or, for the last fold, the output.
struct Loc {
  uint8_t flag;  // kInFromScratch or kOutToScratch: scratch; 0: the input (a source) or the output
  uint64_t offset;
};

struct Piece {
  Loc src;   // the sender's partial
  Loc own;   // the receiver's partial
  Loc dest;  // where the receiver's fold goes
  uint64_t len;
};

// Calls fn(piece) for each piece the rank at position `from` sends to the
// rank at position from+dist in that round, `share` of each block; sender
// and receiver both call it with the sender's position, so their pieces
// match one for one.
template <typename Fn>
void forEachPiece(const PlanShape& shape, int from, int dist, uint64_t count, Range share, Fn fn) {
  const int n = shape.nranks;
  const int to = (from + dist) % n;
  const int m = roundBlocks(n, dist);
  const int kept = scratchBlocksBefore(n, dist);
  const bool last = dist == 1;
  auto partial = [&](int pos, int t) {
    if (t < kept) return Loc{kInFromScratch, uint64_t(t) * count + share.begin};
    return Loc{0, uint64_t(shape.rankAt((pos + t) % n)) * count + share.begin};
  };
  auto locs = [&](int j) {
    const Loc dest = last ? Loc{0, share.begin} : Loc{kOutToScratch, uint64_t(j) * count + share.begin};
    return Piece{partial(from, dist + j), partial(to, j), dest, 0};
  };
  const uint64_t slotElems = shape.slotElems();
  const uint64_t len = share.end - share.begin;
  // Whole blocks that follow each other in all three buffers are one run.
  const bool whole = len == count;
  auto follows = [&](const Loc& a, const Loc& b) { return a.flag == b.flag && b.offset == a.offset + count; };
  for (int j = 0; j < m;) {
    const Piece first = locs(j);
    int run = 1;
    for (Piece prev = first; whole && j + run < m; ++run) {
      const Piece next = locs(j + run);
      if (!follows(prev.src, next.src) || !follows(prev.own, next.own) || !follows(prev.dest, next.dest)) break;
      prev = next;
    }
    const uint64_t total = uint64_t(run - 1) * count + len;
    for (uint64_t off = 0; off < total; off += slotElems) {
      Piece p = first;
      p.src.offset += off;
      p.own.offset += off;
      p.dest.offset += off;
      p.len = std::min(slotElems, total - off);
      fn(p);
    }
    j += run;
  }
}

}  // namespace

uint64_t bruckReduceScatterScratch(int nranks, uint64_t count) {
  return uint64_t(scratchBlocksBefore(nranks, 1)) * count;
}

void buildBruckReduceScatter(const PlanShape& shape, uint64_t count, int nchannels, std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const int pos = shape.posOf(shape.rank);
  int top = 1;
  while (top * 2 < n) top *= 2;
  std::vector<Piece> sends, recvs;
  forEachChannel(shape, count, nchannels, plans, [&](std::vector<Step>& steps, Range share) {
    for (int dist = top; dist >= 1; dist /= 2) {
      const int to = shape.rankAt((pos + dist) % n);
      const int fromPos = (pos - dist + n) % n;
      sends.clear();
      recvs.clear();
      forEachPiece(shape, pos, dist, count, share, [&](const Piece& p) { sends.push_back(p); });
      forEachPiece(shape, fromPos, dist, count, share, [&](const Piece& p) { recvs.push_back(p); });
      const int from = shape.rankAt(fromPos);
      for (size_t i = 0; i < std::max(sends.size(), recvs.size()); ++i) {
        if (i < sends.size()) {
          const Piece& p = sends[i];
          steps.push_back({Prim::Send, 0, -1, to, p.src.offset, 0, p.len, p.src.flag});
        }
        if (i < recvs.size()) {
          const Piece& p = recvs[i];
          const uint8_t flags = dist == 1 ? p.own.flag : uint8_t(p.own.flag | kOutToScratch | kPartial);
          steps.push_back({Prim::RecvReduceCopy, 0, from, -1, p.own.offset, p.dest.offset, p.len, flags});
        }
      }
    }
  });
}

double bruckReduceScatterUs(const CostView& v, double blockBytes) {
  const int n = v.shape.nranks;
  const double efficiency = n > 2 ? kExchangeEfficiency : 1;
  double us = 0;
  for (int dist = 1; dist < n; dist *= 2) {
    // As Bruck's allgather rounds: a round that crosses pays the queued part
    // of the network latency once per crossing rank of the node with the
    // most (LinkCost::burstUs), and on a shared link their bytes one after
    // another.
    const int crossers = v.mostCrossing(dist);
    const LinkCost& l = crossers ? v.model.net : v.model.shm;
    const int senders = std::max(1, crossers);
    const double bytes = roundBlocks(n, dist) * blockBytes;
    us += l.burstUs(senders) + l.sharers(senders) * bytes / (l.gbps * 1e3) / efficiency + v.reduceUs(bytes);
  }
  return us;
}

double ringReduceScatterUs(const CostView& v, double blockBytes) {
  // A block's partial sum walks n-1 links of the ring one after another,
  // a slot at a time behind each other, so the links' latencies add up and
  // the slowest link sets the rate; the link it skips is the cheapest.
  const int n = v.shape.nranks;
  double latency = 0, cheapest = 0, gbps = v.model.shm.gbps;
  for (int pos = 0; pos < n; ++pos) {
    const LinkCost& l = v.link(pos, (pos + 1) % n);
    latency += l.latencyUs;
    cheapest = pos == 0 ? l.latencyUs : std::min(cheapest, l.latencyUs);
    gbps = std::min(gbps, l.gbps);
  }
  const double bytes = (n - 1) * blockBytes;
  return latency - cheapest + bytes / (gbps * 1e3) + v.reduceUs(bytes);
}

double directReduceScatterUs(const CostView& v, double blockBytes) {
  // Block p straight to rank p, as the one-hop allgather sends; then one
  // fold of every rank's block.
  return pairwiseAllgatherUs(v, blockBytes) + v.reduceUs((v.shape.nranks - 1) * blockBytes);
}

}  // namespace strata
