// Tree allreduce: reduce up a tree to its root, broadcast the result back
// down, pipelined a slot at a time. The tree follows the hierarchy: within a
// node the ranks form a chain from its first rank (the node's leader), and
// the leaders form a binary tree over the nodes (node k's children are nodes
// 2k+1 and 2k+2), so a chunk crosses between nodes log2(nodes) times each way
// instead of the ring's nodes-1 times, and each node's network link carries
// the buffer once each way (a leader sends up and receives down once).
//
// Each rank interleaves its two phases one chunk apart (reduce chunk c+1,
// then broadcast chunk c), so the broadcast of a chunk overlaps the
// reduction of the next. The final value of each chunk is computed once, at
// the root, so every rank gets the same bits.
#include <algorithm>

#include "allreduce.h"

namespace strata {
namespace {

struct TreeLinks {
  int parent = -1;
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
  const int node = h.nodeOf[r];
  const auto& ranks = h.nodes[node].ranks;
  const int local = h.localRank[r];
  if (local > 0) t.parent = ranks[local - 1];
  else if (node > 0) t.parent = h.nodes[(node - 1) / 2].ranks[0];
  if (local + 1 < static_cast<int>(ranks.size())) t.children.push_back(ranks[local + 1]);
  if (local == 0)
    for (int c : {2 * node + 1, 2 * node + 2})
      if (c < static_cast<int>(h.nodes.size())) t.children.push_back(h.nodes[c].ranks[0]);
  return t;
}

Step step(Prim prim, int recvPeer, int sendPeer, uint64_t off, uint64_t len, uint8_t flags) {
  Step s{prim, 0, recvPeer, sendPeer, off, off, len};
  s.flags = flags;
  return s;
}

// Reduction of one chunk: children's partial sums folded into the input,
// sent to the parent; at the root, the final value, sent to the last child.
void reduceUp(std::vector<Step>& steps, const TreeLinks& t, uint64_t off, uint64_t len) {
  const auto& ch = t.children;
  const int k = static_cast<int>(ch.size());
  if (k == 0) {
    steps.push_back(step(Prim::Send, -1, t.parent, off, len, 0));
    return;
  }
  for (int i = 0; i + 1 < k; ++i)
    steps.push_back(step(Prim::RecvReduceCopy, ch[i], -1, off, len, kPartial | (i ? kInFromOutput : 0)));
  const uint8_t in = k > 1 ? kInFromOutput : 0;
  if (t.parent >= 0) steps.push_back(step(Prim::RecvReduceSend, ch[k - 1], t.parent, off, len, in));
  else steps.push_back(step(Prim::RecvReduceCopySend, ch[k - 1], ch[k - 1], off, len, in));
}

// Broadcast of one chunk: from the parent to the output and every child; the
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
  const size_t end = t.parent >= 0 ? ch.size() : ch.size() - 1;
  for (size_t i = first; i < end; ++i) steps.push_back(step(Prim::Send, -1, ch[i], off, len, kInFromOutput));
}

}  // namespace

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

}  // namespace strata
