// Tree allreduce: reduce up a tree to its root, broadcast the result back
// down, pipelined a slot at a time. The tree follows the hierarchy: within a
// node the ranks form a chain from its first rank (the node's leader), and
// the leaders form a tree over the nodes (node_tree.h), so a chunk crosses
// between nodes about 2 log2(nodes) times instead of the ring's 2(nodes-1),
// and each node's network link carries the buffer once each way (a leader
// sends up and receives down once).
//
// Each rank interleaves its two phases one chunk apart (reduce chunk c+1,
// then broadcast chunk c), so the broadcast of a chunk overlaps the
// reduction of the next. The final value of each chunk is computed at the
// root; with two roots, at both, as (node 0's partial) op (node 1's partial)
// on each, so every rank still gets the same bits. Every chunk is folded
// the same way, each rank folding each child's partial in front of what it
// holds, children in a fixed order: the same bits at any chunking.
#include <algorithm>
#include <cmath>

#include "allreduce.h"
#include "cost_model.h"
#include "node_tree.h"

namespace strata {
namespace {

struct TreeLinks {
  int parent = -1;
  int partner = -1;           // the other root, which finishes the value too
  bool partnerFirst = false;  // the partner's partial is the left operand
  std::vector<int> children;  // the reduction folds them in this order
};

TreeLinks treeLinks(const PlanShape& shape) {
  TreeLinks t;
  const int r = shape.rank;
  if (!shape.layout) {
    // One node: a chain in rank order.
    if (r > 0) t.parent = r - 1;
    if (r + 1 < shape.nranks) t.children.push_back(r + 1);
    return t;
  }
  const auto& h = shape.layout->hierarchy;
  const int nodes = static_cast<int>(h.nodes.size());
  const NodeTree tree = NodeTree::of(nodes);
  const int node = h.nodeOf[r];
  const auto& ranks = h.nodes[node].ranks;
  const int local = h.localRank[r];
  if (local > 0) {
    t.parent = ranks[local - 1];
  } else if (tree.parent(node) >= 0) {
    t.parent = h.nodes[tree.parent(node)].ranks[0];
  } else if (tree.partner(node) >= 0) {
    t.partner = h.nodes[tree.partner(node)].ranks[0];
    t.partnerFirst = tree.partner(node) < node;
  }
  if (local + 1 < static_cast<int>(ranks.size())) t.children.push_back(ranks[local + 1]);
  if (local == 0)
    for (int c : tree.children(node))
      if (c < nodes) t.children.push_back(h.nodes[c].ranks[0]);
  return t;
}

Step step(Prim prim, int recvPeer, int sendPeer, uint64_t off, uint64_t len, uint8_t flags) {
  Step s{prim, 0, recvPeer, sendPeer, off, off, len};
  s.flags = flags;
  return s;
}

// Reduction of one chunk: children's partial sums folded into the input,
// sent to the parent; at the root, the final value, sent to the last child.
// Two roots first swap their partials, each keeping its own in the output.
void reduceUp(std::vector<Step>& steps, const TreeLinks& t, uint64_t off, uint64_t len) {
  const auto& ch = t.children;
  const int k = static_cast<int>(ch.size());
  const int up = t.parent >= 0 ? t.parent : t.partner;
  if (k == 0 && up >= 0) {
    steps.push_back(step(Prim::Send, -1, up, off, len, 0));
  } else {
    for (int i = 0; i + 1 < k; ++i)
      steps.push_back(step(Prim::RecvReduceCopy, ch[i], -1, off, len, kPartial | (i ? kInFromOutput : 0)));
    const uint8_t in = k > 1 ? kInFromOutput : 0;
    if (t.parent >= 0)
      steps.push_back(step(Prim::RecvReduceSend, ch[k - 1], t.parent, off, len, in));
    else if (t.partner >= 0)
      steps.push_back(step(Prim::RecvReduceCopySend, ch[k - 1], t.partner, off, len, in | kPartial));
    else
      steps.push_back(step(Prim::RecvReduceCopySend, ch[k - 1], ch[k - 1], off, len, in));
  }
  if (t.partner < 0) return;
  // Own partial (in the output if children were folded) op the partner's,
  // in node order: the same expression on both roots.
  const uint8_t own = (k > 0 ? kInFromOutput : 0) | (t.partnerFirst ? 0 : kOwnFirst);
  if (k == 0) steps.push_back(step(Prim::RecvReduceCopy, t.partner, -1, off, len, own));
  else steps.push_back(step(Prim::RecvReduceCopySend, t.partner, ch[k - 1], off, len, own));
}

// Broadcast of one chunk: from the parent to the output and every child; a
// root already sent it to its last child while finishing it.
void broadcastDown(std::vector<Step>& steps, const TreeLinks& t, uint64_t off, uint64_t len) {
  const auto& ch = t.children;
  const int k = static_cast<int>(ch.size());
  size_t first = 0;
  if (t.parent >= 0) {
    if (k == 0) {
      steps.push_back(step(Prim::Recv, t.parent, -1, off, len, 0));
      return;
    }
    steps.push_back(step(Prim::RecvCopySend, t.parent, ch[0], off, len, 0));
    first = 1;
  }
  const size_t end = t.parent >= 0 ? ch.size() : std::max(k - 1, 0);
  for (size_t i = first; i < end; ++i) steps.push_back(step(Prim::Send, -1, ch[i], off, len, kInFromOutput));
}

void buildTreeAllreduce(const PlanShape& shape, uint64_t count, int nchannels,
                        std::vector<ChannelPlan>& plans) {
  const TreeLinks t = treeLinks(shape);
  const uint64_t slotElems = shape.slotElems();
  forEachChannel(shape, count, nchannels, plans, [&](std::vector<Step>& steps, Range all) {
    const uint64_t chunks = (all.end - all.begin + slotElems - 1) / slotElems;
    auto chunk = [&](uint64_t c) {
      uint64_t off = all.begin + c * slotElems;
      return Range{off, std::min(all.end, off + slotElems)};
    };
    for (uint64_t c = 0; c <= chunks; ++c) {
      if (c < chunks) reduceUp(steps, t, chunk(c).begin, chunk(c).end - chunk(c).begin);
      if (c >= 1) broadcastDown(steps, t, chunk(c - 1).begin, chunk(c - 1).end - chunk(c - 1).begin);
    }
  });
}

double treeUs(const CostView& v, double bytes) {
  const int chain = v.mostPerNode() - 1;
  const int nodes = v.nodes();
  const int crossings = NodeTree::of(nodes).crossings();
  const LinkCost& slow = nodes > 1 ? v.model.net : v.model.shm;
  // Pipelined, the links work at once: the slowest carries `b` bytes once
  // each way, and the busiest rank (a node leader with two child nodes and a
  // chain) moves them four times, the moves beyond the slow link's at
  // memory speed.
  const double fanout = nodes > 2 ? 4 : (nodes > 1 ? 3 : 2);
  auto paceUs = [&](double b) {
    return b / (slow.gbps * 1e3) + (fanout - 1) * b / (v.model.shm.gbps * 1e3) + v.reduceUs(b * (fanout - 1));
  };
  // Over connections that each rank's core copies (TCP here: not shared),
  // the tree keeps this price, up and down each hop once per chunk, fully
  // pipelined: the picks it gives were measured on this machine
  // (bench/README.md), and pricing the trip below there moves picks from
  // 2x4 to 16x8 ranks that were not.
  if (!slow.shared) return 2 * chain * v.model.shm.latencyUs + crossings * v.model.net.latencyUs + paceUs(bytes);
  // On a NIC fabric (shared), as strata-sim plays the plan: one chunk's trip
  // from the deepest rank to the root and back, where every rank takes the
  // whole chunk before it folds and sends it on, so each hop costs the
  // chunk's bytes as well as its latency. On the way up it is folded once
  // per chain hop and, at each leader, once per child node (two a level,
  // and the two roots one more): as many times as it crosses, up and down.
  // A leader's fold of its chain child waits for nothing from above, so it
  // overlaps the child nodes' crossings.
  const int nch = v.shape.channelsFor(static_cast<uint64_t>(bytes));
  const double perChannel = bytes / nch;
  const double chunk = std::min(perChannel, static_cast<double>(v.shape.slotBytes));
  const double chunks = std::ceil(perChannel / chunk);
  const double tripUs = 2 * chain * v.model.shm.us(chunk) + crossings * v.model.net.us(chunk) +
                        (chain + crossings) * v.reduceUs(chunk);
  // A rank reduces chunk c+1 and then broadcasts chunk c, in order, so its
  // next reduction waits for the broadcast of the chunk before, which has
  // climbed to the root and come back: two chunks per trip are in flight.
  // Where the trip is short, the busiest rank's pace over the rest of the
  // buffer sets the time instead.
  return tripUs + std::max(paceUs(bytes - chunk * nch), (chunks - 1) / 2 * tripUs);
}

}  // namespace

const AllreduceAlgorithm kTreeAllreduce{
    "tree",
    "pipelined: chains within nodes, a binary tree between nodes (or two roots that swap partials, when "
    "that crosses fewer times), reduce up then broadcast down",
    buildTreeAllreduce, treeUs, kInputStable | kInputStableInPlace | kSameBitsAnyChunking};

}  // namespace strata
