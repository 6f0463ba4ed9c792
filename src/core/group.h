// A group: the calls one thread makes between strata_group_start and its
// outermost strata_group_end, queued, then issued together: per communicator
// (in order of first use) its collectives in call order, runs of small
// allreduces fused (fusion.h), then its sends and receives as one exchange;
// then one wait drives every communicator involved until all are done (one
// may need another's progress: ranks meet in different orders).
#pragma once

#include <vector>

#include "api_state.h"
#include "fusion.h"

namespace strata::api {

class Group {
 public:
  // Queues a collective; the count and displacement arrays of v-variants are
  // copied. With `stream`, a stream-ordered call: issued at the end without
  // being waited for.
  void defer(strata_comm* comm, const CollCall& call, const StreamCall* stream, std::vector<char> scratch);
  void defer(strata_comm* comm, const P2pOp& op, const StreamCall* stream);
  // Issues everything queued and waits for it; returns the first failure
  // and, in *failedComm, its communicator. The queue is emptied, its
  // capacity (and the fusion buffers) kept for the next group.
  Status issue(strata_comm** failedComm);

 private:
  // Connects the GPUs of every communicator whose queued stream-ordered
  // calls would be its first on GPU memory, on a thread each, when there
  // are several: one thread driving several ranks could not connect them
  // one after another (each waits for all of its ranks).
  void connectDevicesTogether(const std::vector<strata_comm*>& comms);
  struct Deferred {
    strata_comm* comm;
    bool p2p;
    CollCall call;
    P2pOp op;
    std::vector<size_t> arrays;  // v-variants: the four count/displacement arrays
    StreamCall stream;           // stream-ordered when stream.stream is set
    std::vector<char> scratch;   // memory the call reads, kept until the group's calls are done
  };
  // One started request, and what to do when it is done.
  struct Started {
    std::unique_ptr<Request> request;
    strata_comm* comm;
    Fusion* fusion;  // unpacked on success, or null
  };
  void issueOn(strata_comm* comm, const FusionLimits& limits, std::vector<Started>* started,
               std::vector<std::unique_ptr<Fusion>>* fusions);

  std::vector<Deferred> queue_;
  FusionBuffers buffers_;
};

}  // namespace strata::api
