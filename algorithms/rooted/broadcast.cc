#include "rooted.h"

namespace strata {

void buildBroadcast(const PlanShape& shape, uint64_t count, int root, bool direct, int nchannels,
                    std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const int r = shape.rank;
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

}  // namespace strata
