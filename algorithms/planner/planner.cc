#include "planner.h"

#include <algorithm>

#include "reduce_scatter.h"
#include "rooted.h"

namespace strata {
namespace {

bool useDirect(const AllreduceTuning& tuning, uint64_t bytes) {
  if (tuning.forced != ForcedAlgo::None) return tuning.forced == ForcedAlgo::OneShot;
  return bytes <= tuning.oneshotBytes;
}

uint64_t sum(const size_t* v, int n) {
  uint64_t s = 0;
  for (int i = 0; i < n; ++i) s += v[i];
  return s;
}

}  // namespace

Status Planner::plan(const CollCall& call, const PlanShape& shape, const AllreduceTuning& tuning,
                     std::vector<ChannelPlan>& plans, PlanChoice* choice) {
  const uint64_t bytes = call.count * shape.elemSize;
  const int n = shape.nranks;
  switch (call.coll) {
    case Coll::Allreduce:
    case Coll::Barrier: {
      AllreduceChoice c;
      STRATA_CHECK(chooseAllreduce(shape, call.count, tuning, &c));
      if (c.algo == AllreduceAlgo::Ring) buildRingAllreduce(shape, call.count, c.nchannels, plans);
      else buildOneShotAllreduce(shape, call.count, plans);
      *choice = {algoName(c.algo), c.nchannels, c.algo == AllreduceAlgo::Ring || call.sendbuf != call.recvbuf};
      return Status::ok();
    }
    case Coll::Broadcast:
    case Coll::Reduce: {
      bool direct = useDirect(tuning, bytes);
      int nch = shape.channelsFor(bytes * n);
      if (call.coll == Coll::Broadcast) buildBroadcast(shape, call.count, call.root, direct, nch, plans);
      else buildReduce(shape, call.count, call.root, direct, nch, plans);
      *choice = {direct ? "direct" : "chain", nch};
      return Status::ok();
    }
    case Coll::ReduceScatter: {
      bool direct = useDirect(tuning, bytes);
      int nch = shape.channelsFor(bytes * n);
      buildReduceScatter(shape, call.count, direct, nch, plans);
      *choice = {direct ? "direct" : "ring", nch};
      return Status::ok();
    }
    case Coll::Allgather:
    case Coll::Alltoall:
    case Coll::Allgatherv:
    case Coll::Alltoallv: {
      uint64_t total = bytes * n;
      if (call.coll == Coll::Allgather) {
        allgatherSpec(shape, call.count, &spec_);
      } else if (call.coll == Coll::Alltoall) {
        alltoallSpec(shape, call.count, &spec_);
      } else if (call.coll == Coll::Allgatherv) {
        allgathervSpec(shape, call.recvCounts, call.recvDispls, &spec_);
        total = sum(call.recvCounts, n) * shape.elemSize;
      } else {
        alltoallvSpec(shape, call.sendCounts, call.sendDispls, call.recvCounts, call.recvDispls, &spec_);
        total = sum(call.recvCounts, n) * shape.elemSize;
      }
      int nch = shape.channelsFor(total);
      buildExchange(shape, spec_, nch, plans);
      *choice = {"pairwise", nch};
      return Status::ok();
    }
    case Coll::SendRecv:
      break;
  }
  return STRATA_ERROR(STRATA_ERR_INTERNAL, "no planner for %s", collName(call.coll));
}

}  // namespace strata
