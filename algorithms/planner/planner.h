// From a validated collective call to per-channel plans: picks the algorithm
// (allreduce: the tuning's cost-model table; allgather: one hop to every
// peer, or Bruck's log2 n rounds where the model rates them cheaper;
// reduce_scatter: Bruck's rounds backwards where the model rates them below
// both the ring and the direct form, on host memory; other
// collectives: direct one-hop for small buffers, rings and chains for large
// ones) and the number of channels, then builds.
#pragma once

#include <vector>

#include "allreduce.h"
#include "exchange.h"
#include "memory.h"
#include "op_desc.h"
#include "plan.h"
#include "selection.h"

namespace strata {

// A caller's choice for one call (strata_call_options_t's algorithm,
// channels and chunk; NCCL 2.31's per-call config), checked by the API
// layer; zero fields leave the communicator's choice.
struct CallPick {
  const AllreduceAlgorithm* algo = nullptr;  // allreduce
  int direct = -1;         // broadcast, reduce, reduce_scatter: 1 direct, 0 pipelined
  int nchannels = 0;       // at most the communicator's
  uint64_t chunkBytes = 0;  // bytes a slot carries, at most the communicator's slot
  int bruck = -1;          // allgather: 1 Bruck's rounds, 0 one hop to every peer (pairwise);
                           // reduce_scatter (host memory): 1 Bruck's rounds, 0 not (direct says which)
  int tree = -1;           // broadcast: 1 a binomial tree, 0 not (direct says which)

  bool any() const { return algo || direct >= 0 || bruck >= 0 || tree >= 0 || nchannels || chunkBytes; }
  bool operator==(const CallPick& o) const {
    return algo == o.algo && direct == o.direct && bruck == o.bruck && tree == o.tree && nchannels == o.nchannels &&
           chunkBytes == o.chunkBytes;
  }
};

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
  MemoryType memory = MemoryType::Host;  // where sendbuf and recvbuf live
  CallPick pick = {};                    // the caller's choice, if any
};

struct PlanChoice {
  const char* algo;  // for logs and strata-perf
  int nchannels;     // channels the plans use
  // No step writes memory an earlier step sent from before the operation
  // ends (OpContext::sendFromCaller); see kInputStable.
  bool inputStable = true;
  const AllreduceAlgorithm* allreduce = nullptr;  // allreduce and barrier
  bool direct = false;  // broadcast, reduce, reduce_scatter: one hop to or from every rank
  bool bruck = false;   // allgather, reduce_scatter: Bruck's rounds (bruck.cc), forwards or backwards
  bool tree = false;    // broadcast: a binomial tree (rooted.h)
  // Elements of host memory the plans keep partial results in
  // (OpContext::scratch), allocated once with them; 0 for most plans.
  uint64_t scratchElems = 0;
};

class Planner {
 public:
  // The algorithm and channels `call` would run with, without building:
  // the caller's pick where it made one, else the tuning's.
  static Status choose(const CollCall& call, const PlanShape& shape, const Tuning& tuning,
                       PlanChoice* choice);
  // The communicator's shape as `call` plans with it (its pick's chunk).
  static PlanShape shapeFor(const CollCall& call, const PlanShape& shape);
  // Fills plans[0 .. choice->nchannels) for this rank.
  Status plan(const CollCall& call, const PlanShape& shape, const Tuning& tuning,
              std::vector<ChannelPlan>& plans, PlanChoice* choice);

 private:
  ExchangeSpec spec_;  // scratch, capacity reused
};

}  // namespace strata
