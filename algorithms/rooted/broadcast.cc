#include <algorithm>

#include "exchange.h"
#include "rooted.h"

namespace strata {
namespace {

// The binomial tree over positions counted from the root along the
// layout's walk: position q's parent is q without its lowest set bit, its
// children q + d for every power of two d below that bit (below n at the
// root), the farthest, whose subtree is the largest, first. At the root's
// first sends the distances are the largest: where a node's ranks are
// adjacent in the walk, the early rounds cross between nodes with one
// sender a node, and the last ones stay within nodes.
int lowestBit(int q) { return q & -q; }
int highestBelow(int n) {  // the largest power of two below n (1 for n <= 2)
  int d = 1;
  while (2 * d < n) d *= 2;
  return d;
}

}  // namespace

void buildBroadcast(const PlanShape& shape, uint64_t count, int root, RootedForm form, int nchannels,
                    std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const int r = shape.rank;
  if (form == RootedForm::Tree) {
    const int rootPos = shape.posOf(root);
    const int q = (shape.posOf(r) - rootPos + n) % n;
    auto rankOf = [&](int pos) { return shape.rankAt((rootPos + pos) % n); };
    const int parent = q == 0 ? -1 : rankOf(q - lowestBit(q));
    std::vector<int> children;
    for (int d = q == 0 ? highestBelow(n) : lowestBit(q) / 2; d > 0; d /= 2)
      if (q + d < n) children.push_back(rankOf(q + d));
    forEachChunk(shape, count, nchannels, plans, [&](std::vector<Step>& steps, uint64_t off, uint64_t len) {
      if (q == 0) {
        for (int c : children) steps.push_back({Prim::Send, 0, -1, c, off, off, len});
        steps.push_back({Prim::Copy, 0, -1, -1, off, off, len});
        return;
      }
      if (children.empty()) {
        steps.push_back({Prim::Recv, 0, parent, -1, off, off, len});
        return;
      }
      steps.push_back({Prim::RecvCopySend, 0, parent, children[0], off, off, len});
      for (size_t i = 1; i < children.size(); ++i)
        steps.push_back({Prim::Send, 0, -1, children[i], off, off, len, kInFromOutput});
    });
    return;
  }
  const bool direct = form == RootedForm::Direct;
  // Chain root, root+1, ..., root-1 (direct: the root is everyone's prev).
  const int pos = (r - root + n) % n;
  const int next = pos == n - 1 ? -1 : (r + 1) % n;
  const int prev = pos == 0 ? -1 : direct ? root : (r + n - 1) % n;
  forEachChunk(shape, count, nchannels, plans, [&](std::vector<Step>& steps, uint64_t off, uint64_t len) {
    if (pos == 0) {
      for (int i = 1; i < (direct ? n : std::min(n, 2)); ++i)
        steps.push_back({Prim::Send, 0, -1, (r + i) % n, off, off, len});
      steps.push_back({Prim::Copy, 0, -1, -1, off, off, len});
    } else if (next >= 0 && !direct) {
      steps.push_back({Prim::RecvCopySend, 0, prev, next, off, off, len});
    } else {
      steps.push_back({Prim::Recv, 0, prev, -1, off, off, len});
    }
  });
}

double directBroadcastUs(const CostView& v, double bytes) {
  // The root's n-1 sends, as one rank's sends in the one-hop exchange.
  return pairwiseAllgatherUs(v, bytes);
}

double treeBroadcastUs(const CostView& v, double bytes) {
  // The root's sends, one a round, each of the whole buffer: every later
  // round's sender started with it, so the last round ends the broadcast.
  double us = 0;
  for (int d = highestBelow(v.shape.nranks); d > 0 && d < v.shape.nranks; d /= 2) us += v.link(0, d).us(bytes);
  return us;
}

}  // namespace strata
