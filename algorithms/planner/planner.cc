#include "planner.h"

#include <algorithm>

#include "reduce_scatter.h"
#include "rooted.h"

namespace strata {
namespace {

uint64_t sum(const size_t* v, int n) {
  uint64_t s = 0;
  for (int i = 0; i < n; ++i) s += v[i];
  return s;
}

}  // namespace

Status Planner::choose(const CollCall& call, const PlanShape& shape, const Tuning& tuning,
                       PlanChoice* choice) {
  const uint64_t bytes = call.count * shape.elemSize;
  const int n = shape.nranks;
  switch (call.coll) {
    case Coll::Allreduce:
    case Coll::Barrier: {
      AllreduceChoice c;
      STRATA_CHECK(tuning.chooseAllreduce(shape, call.count, &c));
      *choice = {c.algo->name, c.nchannels, c.algo->inputStable(call.sendbuf == call.recvbuf), c.algo, false};
      return Status::ok();
    }
    case Coll::Broadcast:
    case Coll::Reduce:
    case Coll::ReduceScatter: {
      const bool direct = tuning.useDirect(bytes);
      *choice = {direct ? "direct" : (call.coll == Coll::ReduceScatter ? "ring" : "chain"),
                 shape.channelsFor(bytes * n)};
      choice->direct = direct;
      return Status::ok();
    }
    case Coll::Allgather:
    case Coll::Alltoall:
      *choice = {"pairwise", shape.channelsFor(bytes * n)};
      return Status::ok();
    case Coll::Allgatherv:
    case Coll::Alltoallv:
      *choice = {"pairwise", shape.channelsFor(sum(call.recvCounts, n) * shape.elemSize)};
      return Status::ok();
    case Coll::SendRecv:
      break;
  }
  return STRATA_ERROR(STRATA_ERR_INTERNAL, "no planner for %s", collName(call.coll));
}

Status Planner::plan(const CollCall& call, const PlanShape& shape, const Tuning& tuning,
                     std::vector<ChannelPlan>& plans, PlanChoice* choice) {
  STRATA_CHECK(choose(call, shape, tuning, choice));
  const int nch = choice->nchannels;
  switch (call.coll) {
    case Coll::Allreduce:
    case Coll::Barrier:
      choice->allreduce->build(shape, call.count, nch, plans);
      break;
    case Coll::Broadcast:
      buildBroadcast(shape, call.count, call.root, choice->direct, nch, plans);
      break;
    case Coll::Reduce:
      buildReduce(shape, call.count, call.root, choice->direct, nch, plans);
      break;
    case Coll::ReduceScatter:
      buildReduceScatter(shape, call.count, choice->direct, nch, plans);
      break;
    case Coll::Allgather:
      allgatherSpec(shape, call.count, &spec_);
      buildExchange(shape, spec_, nch, plans);
      break;
    case Coll::Alltoall:
      alltoallSpec(shape, call.count, &spec_);
      buildExchange(shape, spec_, nch, plans);
      break;
    case Coll::Allgatherv:
      allgathervSpec(shape, call.recvCounts, call.recvDispls, &spec_);
      buildExchange(shape, spec_, nch, plans);
      break;
    case Coll::Alltoallv:
      alltoallvSpec(shape, call.sendCounts, call.sendDispls, call.recvCounts, call.recvDispls, &spec_);
      buildExchange(shape, spec_, nch, plans);
      break;
    case Coll::SendRecv:
      return STRATA_ERROR(STRATA_ERR_INTERNAL, "no planner for %s", collName(call.coll));
  }
  return Status::ok();
}

}  // namespace strata
