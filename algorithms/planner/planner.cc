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

PlanShape Planner::shapeFor(const CollCall& call, const PlanShape& shape) {
  PlanShape s = shape;
  if (call.pick.chunkBytes) s.slotBytes = call.pick.chunkBytes;
  return s;
}

Status Planner::choose(const CollCall& call, const PlanShape& commShape, const Tuning& tuning,
                       PlanChoice* choice) {
  const PlanShape shape = shapeFor(call, commShape);
  const uint64_t bytes = call.count * shape.elemSize;
  const int n = shape.nranks;
  const CallPick& pick = call.pick;
  // The caller's channels, else the size's.
  auto channels = [&](int bySize) { return pick.nchannels ? pick.nchannels : bySize; };
  switch (call.coll) {
    case Coll::Allreduce:
    case Coll::Barrier: {
      AllreduceChoice c;
      if (pick.algo) {
        if (pick.algo->has(kOneSlot) && bytes > shape.slotBytes)
          return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                                "options->algorithm=%s cannot carry %llu bytes: it needs them in one slot of %zu",
                                pick.algo->name, (unsigned long long)bytes, shape.slotBytes);
        c = {pick.algo, pick.algo->has(kOneSlot) ? 1 : channels(shape.channelsFor(bytes))};
      } else {
        STRATA_CHECK(tuning.chooseAllreduce(shape, call.count, &c));
        if (!c.algo->has(kOneSlot)) c.nchannels = channels(c.nchannels);
      }
      *choice = {c.algo->name, c.nchannels, c.algo->inputStable(call.sendbuf == call.recvbuf), c.algo, false};
      return Status::ok();
    }
    case Coll::ReduceScatter: {
      // Bruck's partial sums live in host scratch: device memory keeps the
      // ring and the direct form. A caller's direct or pipelined pick is
      // one of those two.
      const bool host = call.memory == MemoryType::Host;
      const bool bruck = host && pick.direct < 0 &&
                         (pick.bruck >= 0 ? pick.bruck == 1 : tuning.useBruckReduceScatter(bytes));
      const bool direct = !bruck && (pick.direct >= 0 ? pick.direct == 1 : tuning.useDirectReduceScatter(bytes));
      *choice = {bruck ? "bruck" : direct ? "direct" : "ring", channels(shape.channelsFor(bytes * n))};
      choice->direct = direct;
      choice->bruck = bruck;
      if (bruck) choice->scratchElems = bruckReduceScatterScratch(n, call.count);
      return Status::ok();
    }
    case Coll::Broadcast:
    case Coll::Reduce: {
      // A caller's direct or pipelined pick is one of those two.
      const bool tree = call.coll == Coll::Broadcast && pick.direct < 0 &&
                        (pick.tree >= 0 ? pick.tree == 1 : tuning.useTreeBroadcast(bytes));
      const bool direct = !tree && (pick.direct >= 0 ? pick.direct == 1 : tuning.useDirect(bytes));
      *choice = {tree ? "tree" : direct ? "direct" : "chain", channels(shape.channelsFor(bytes * n))};
      choice->direct = direct;
      choice->tree = tree;
      return Status::ok();
    }
    case Coll::Allgather: {
      const bool bruck = pick.bruck >= 0 ? pick.bruck == 1 : tuning.useBruckAllgather(bytes);
      *choice = {bruck ? "bruck" : "pairwise", channels(shape.channelsFor(bytes * n))};
      choice->bruck = bruck;
      return Status::ok();
    }
    case Coll::Alltoall:
      *choice = {"pairwise", channels(shape.channelsFor(bytes * n))};
      return Status::ok();
    case Coll::Allgatherv:
    case Coll::Alltoallv:
      *choice = {"pairwise", channels(shape.channelsFor(sum(call.recvCounts, n) * shape.elemSize))};
      return Status::ok();
    case Coll::SendRecv:
      break;
  }
  return STRATA_ERROR(STRATA_ERR_INTERNAL, "no planner for %s", collName(call.coll));
}

Status Planner::plan(const CollCall& call, const PlanShape& commShape, const Tuning& tuning,
                     std::vector<ChannelPlan>& plans, PlanChoice* choice) {
  STRATA_CHECK(choose(call, commShape, tuning, choice));
  const PlanShape shape = shapeFor(call, commShape);
  const int nch = choice->nchannels;
  switch (call.coll) {
    case Coll::Allreduce:
    case Coll::Barrier:
      choice->allreduce->build(shape, call.count, nch, plans);
      break;
    case Coll::Broadcast:
      buildBroadcast(shape, call.count, call.root,
                     choice->tree ? RootedForm::Tree : choice->direct ? RootedForm::Direct : RootedForm::Chain, nch,
                     plans);
      break;
    case Coll::Reduce:
      buildReduce(shape, call.count, call.root, choice->direct, nch, plans);
      break;
    case Coll::ReduceScatter:
      if (choice->bruck) buildBruckReduceScatter(shape, call.count, nch, plans);
      else buildReduceScatter(shape, call.count, choice->direct, nch, plans);
      break;
    case Coll::Allgather:
      if (choice->bruck) {
        buildBruckAllgather(shape, call.count, nch, plans);
        break;
      }
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
