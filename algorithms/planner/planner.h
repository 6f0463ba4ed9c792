// From a validated collective call to per-channel plans: picks the algorithm
// family (direct one-hop for small buffers, ring or chain for large ones,
// STRATA_ALGO to force either) and the number of channels, then builds.
#pragma once

#include <vector>

#include "allreduce.h"
#include "exchange.h"
#include "op_desc.h"
#include "plan.h"

namespace strata {

// One collective as the calling rank issued it. Counts are in elements.
struct CollCall {
  Coll coll;
  const void* sendbuf;
  void* recvbuf;
  uint64_t count;  // per rank: the block size of allgather, reduce_scatter, alltoall
  strata_datatype_t datatype;
  strata_op_t op;
  int root;                   // broadcast, reduce
  const size_t* sendCounts;   // alltoallv
  const size_t* sendDispls;   // alltoallv
  const size_t* recvCounts;   // allgatherv, alltoallv
  const size_t* recvDispls;   // allgatherv, alltoallv
};

struct PlanChoice {
  const char* algo;  // for logs and strata-perf
  int nchannels;     // channels the plans use
  // No step writes memory an earlier step sent from before the operation
  // ends (OpContext::sendFromCaller). Only the in-place one-shot allreduce
  // breaks it: it folds into its input while its sends may still be going.
  bool inputStable = true;
};

class Planner {
 public:
  // Fills plans[0 .. choice->nchannels) for this rank.
  Status plan(const CollCall& call, const PlanShape& shape, const AllreduceTuning& tuning,
              std::vector<ChannelPlan>& plans, PlanChoice* choice);

 private:
  ExchangeSpec spec_;  // scratch, capacity reused
};

}  // namespace strata
