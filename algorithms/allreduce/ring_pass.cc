#include "ring_pass.h"

#include <algorithm>

namespace strata {
namespace {

struct Walker {
  std::vector<Step>& steps;
  const RingGroup& g;
  uint64_t off, elems, align;
  // The part of each block the steps move: [at, at + len) of it.
  uint64_t at = 0, len = UINT64_MAX;

  int member(int posDelta) const { return g.members[((g.pos + posDelta) % g.n + g.n) % g.n]; }
  // Block at position pos+delta; empty blocks are empty on every member, so
  // their steps vanish in pairs.
  void add(Prim prim, int blockDelta, bool recv, bool send, uint8_t flags) {
    const int b = ((g.pos + blockDelta) % g.n + g.n) % g.n;
    Range r = ringBlock(elems, g.n, b, align);
    r.begin = std::min(r.end, r.begin + at);
    r.end = std::min(r.end, r.begin + std::min(len, r.end - r.begin));
    if (r.end <= r.begin) return;
    Step s{prim, 0, recv ? member(-1) : -1, send ? member(1) : -1, off + r.begin, off + r.begin,
           r.end - r.begin};
    s.flags = flags;
    steps.push_back(s);
  }
};

}  // namespace

Range ringBlock(uint64_t elems, int n, int b, uint64_t align) {
  uint64_t blockElems = ((elems + n - 1) / n + align - 1) / align * align;
  uint64_t begin = std::min<uint64_t>(elems, uint64_t(b) * blockElems);
  return {begin, std::min<uint64_t>(elems, begin + blockElems)};
}

void appendRingAllreduce(std::vector<Step>& steps, const RingGroup& g, uint64_t off, uint64_t elems,
                         uint64_t align, uint8_t inFlags) {
  if (g.n == 1) {
    if (!(inFlags & kInFromOutput) && elems > 0) steps.push_back({Prim::Copy, 0, -1, -1, off, off, elems});
    return;
  }
  Walker w{steps, g, off, elems, align};
  const int n = g.n;
  w.add(Prim::Send, -1, false, true, inFlags);
  for (int j = 2; j < n; ++j) w.add(Prim::RecvReduceSend, -j, true, true, inFlags);
  w.add(Prim::RecvReduceCopySend, 0, true, true, inFlags);
  for (int j = 1; j < n - 1; ++j) w.add(Prim::RecvCopySend, -j, true, true, 0);
  w.add(Prim::Recv, 1, true, false, 0);
}

void appendRingReduceScatter(std::vector<Step>& steps, const RingGroup& g, uint64_t off, uint64_t elems,
                             uint64_t align, uint64_t stepElems) {
  if (g.n == 1) return;
  Walker w{steps, g, off, elems, align, 0, stepElems};
  const uint64_t block = ringBlock(elems, g.n, 0, align).end;  // the first block is the longest
  for (; w.at < block; w.at += stepElems) {
    w.add(Prim::Send, -1, false, true, 0);
    for (int j = 2; j < g.n; ++j) w.add(Prim::RecvReduceSend, -j, true, true, 0);
    w.add(Prim::RecvReduceCopy, 0, true, false, kPartial);
  }
}

void appendRingAllgather(std::vector<Step>& steps, const RingGroup& g, uint64_t off, uint64_t elems,
                         uint64_t align, uint64_t stepElems) {
  if (g.n == 1) return;
  Walker w{steps, g, off, elems, align, 0, stepElems};
  const uint64_t block = ringBlock(elems, g.n, 0, align).end;
  for (; w.at < block; w.at += stepElems) {
    w.add(Prim::Send, 0, false, true, kInFromOutput);
    for (int j = 1; j < g.n - 1; ++j) w.add(Prim::RecvCopySend, -j, true, true, 0);
    w.add(Prim::Recv, 1, true, false, 0);
  }
}

}  // namespace strata
