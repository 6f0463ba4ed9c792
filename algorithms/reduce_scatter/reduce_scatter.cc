#include "reduce_scatter.h"

namespace strata {

void buildReduceScatter(const PlanShape& shape, uint64_t count, bool direct, int nchannels,
                        std::vector<ChannelPlan>& plans) {
  const int n = shape.nranks;
  const int r = shape.rank;
  const int next = (r + 1) % n;
  const int prev = (r + n - 1) % n;
  auto block = [&](int b) { return uint64_t((b % n + n) % n) * count; };
  forEachChunk(shape, count, nchannels, plans, [&](std::vector<Step>& steps, uint64_t off, uint64_t len) {
    if (n == 1) {
      steps.push_back({Prim::Copy, 0, -1, -1, off, off, len});
    } else if (direct) {
      for (int i = 1; i < n; ++i)
        steps.push_back({Prim::Send, 0, -1, (r + i) % n, block(r + i) + off, 0, len});
      steps.push_back({Prim::ReduceAll, 0, -1, -1, block(r) + off, off, len});
    } else {
      steps.push_back({Prim::Send, 0, -1, next, block(r - 1) + off, 0, len});
      for (int j = 2; j < n; ++j)
        steps.push_back({Prim::RecvReduceSend, 0, prev, next, block(r - j) + off, 0, len});
      steps.push_back({Prim::RecvReduceCopy, 0, prev, -1, block(r) + off, off, len});
    }
  });
}

}  // namespace strata
