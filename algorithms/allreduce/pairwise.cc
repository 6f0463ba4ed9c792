#include "pairwise.h"

#include <algorithm>

namespace strata {

Fold Fold::of(int n, int pos) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  const int extra = n - p;
  if (pos < 2 * extra) {
    if (pos % 2 == 0) return {p, -1, pos + 1};
    return {p, pos / 2, pos - 1};
  }
  return {p, pos - extra, -1};
}

void appendExchange(std::vector<Step>& steps, const Exchange& x, uint64_t slotElems) {
  const uint64_t sends = (x.send.end - x.send.begin + slotElems - 1) / slotElems;
  const uint64_t recvs = (x.recv.end - x.recv.begin + slotElems - 1) / slotElems;
  auto sendChunk = [&](uint64_t i) {
    uint64_t off = x.send.begin + i * slotElems;
    Step s{Prim::Send, 0, -1, x.peer, off, off, std::min(slotElems, x.send.end - off)};
    s.flags = x.sendFlags;
    steps.push_back(s);
  };
  auto recvChunk = [&](uint64_t i) {
    uint64_t off = x.recv.begin + i * slotElems;
    Step s{x.recvPrim, 0, x.peer, -1, off, off, std::min(slotElems, x.recv.end - off)};
    s.flags = x.recvFlags;
    steps.push_back(s);
  };
  for (uint64_t i = 0; i < std::max(sends, recvs + 1); ++i) {
    if (i < sends) sendChunk(i);
    if (i >= 1 && i - 1 < recvs) recvChunk(i - 1);
  }
}

bool beginFold(std::vector<Step>& steps, const PlanShape& shape, const Fold& fold, Range all,
               uint8_t* inFlags) {
  const Range none{all.begin, all.begin};
  const uint64_t slotElems = shape.slotElems();
  *inFlags = 0;
  if (fold.partner < 0) return true;
  const int peer = shape.rankAt(fold.partner);
  if (fold.vpos < 0) {
    appendExchange(steps, {peer, all, none, 0, Prim::Recv, 0}, slotElems);
    // The result of what was just sent: it cannot come before that has left.
    appendExchange(steps, {peer, none, all, 0, Prim::Recv, kLandsEarly}, slotElems);
    return false;
  }
  appendExchange(steps, {peer, none, all, 0, Prim::RecvReduceCopy, kPartial}, slotElems);
  *inFlags = kInFromOutput;
  return true;
}

void endFold(std::vector<Step>& steps, const PlanShape& shape, const Fold& fold, Range all) {
  if (fold.partner >= 0 && fold.vpos >= 0)
    appendExchange(steps, {shape.rankAt(fold.partner), all, {all.begin, all.begin}, kInFromOutput, Prim::Recv, 0},
                   shape.slotElems());
}

RoundCost roundCost(const CostView& v, const Fold& f, int bit) {
  int crossers = 0;
  if (v.shape.layout) {
    std::vector<int> perNode(v.nodes(), 0);
    for (int vpos = 0; vpos < f.p; ++vpos) {
      const int pos = f.posOfVirtual(vpos, v.shape.nranks);
      if (v.cross(pos, f.posOfVirtual(vpos ^ bit, v.shape.nranks)))
        crossers = std::max(crossers, ++perNode[v.shape.layout->hierarchy.nodeOf[v.shape.rankAt(pos)]]);
    }
  }
  if (crossers == 0) return {v.model.shm, 1, v.model.shm.latencyUs};
  return {v.model.net, v.model.net.sharers(crossers), v.model.net.burstUs(crossers)};
}

double foldCostUs(const CostView& v, const Fold& f, double bytes) {
  if (f.p == v.shape.nranks) return 0;
  const LinkCost* worst = &v.model.shm;
  for (int pos = 0; pos + 1 < 2 * (v.shape.nranks - f.p); pos += 2)
    if (v.cross(pos, pos + 1)) worst = &v.model.net;
  return 2 * worst->us(bytes) + v.reduceUs(bytes);
}

}  // namespace strata
