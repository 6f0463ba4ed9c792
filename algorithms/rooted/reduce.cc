#include "rooted.h"

namespace strata {

void buildReduce(const PlanShape& shape, uint64_t count, int root, bool direct, int nchannels,
                 std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const int r = shape.rank;
  // Chain root+1, root+2, ..., root: partial results flow towards the root.
  const int pos = (r - root - 1 + 2 * n) % n;
  const int next = pos == n - 1 ? -1 : (r + 1) % n;
  const int prev = pos == 0 ? -1 : (r + n - 1) % n;
  forEachChunk(shape, count, nchannels, plans, [&](std::vector<Step>& steps, uint64_t off, uint64_t len) {
    if (n == 1)
      steps.push_back({Prim::Copy, 0, -1, -1, off, off, len});
    else if (direct)
      steps.push_back(r == root ? Step{Prim::ReduceAll, 0, -1, -1, off, off, len}
                                : Step{Prim::Send, 0, -1, root, off, off, len});
    else if (pos == 0)
      steps.push_back({Prim::Send, 0, -1, next, off, off, len});
    else
      steps.push_back({next >= 0 ? Prim::RecvReduceSend : Prim::RecvReduceCopy, 0, prev, next, off, off, len});
  });
}

}  // namespace strata
