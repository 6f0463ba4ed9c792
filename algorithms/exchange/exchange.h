// Exchanges: every rank sends blocks to, and receives blocks from, chosen
// peers, with no reduction. Allgather(v), alltoall(v) and groups of sends and
// receives are all built from one description of who sends what to whom.
//
// Schedule: each transfer is split over the channels and into slot-sized
// pieces. A stream is everything sent to (or received from) one peer, its
// transfers in the order given. Round k issues piece k of every send stream,
// then piece k of every receive stream, peers visited as rank+1, rank-1,
// rank+2, ... Deadlock-free whenever every send has its matching receive:
// by induction, all ranks finish round k-1, so each connector's FIFO has
// room for round k's piece (its receiver took the earlier ones), every send
// of round k goes out, and so every receive of round k completes. Matching
// pieces need not be issued in the same order on both sides, only in the
// same round.
#pragma once

#include <vector>

#include "plan.h"

namespace strata {

struct CostView;

struct Transfer {
  int peer;           // the other rank; the own rank for a local copy
  uint16_t msg;       // Step::msg of its steps
  uint64_t inOffset;  // elements: where it comes from (sends and copies)
  uint64_t outOffset; // elements: where it goes (receives and copies)
  uint64_t count;     // elements
};

struct ExchangeSpec {
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
  std::vector<Transfer> copies;  // input -> output within this rank
  // No receive's output range is read by a send or a copy, in place or not
  // (allgather's blocks; a group of sends and receives whose buffers do not
  // overlap): receives may land as they arrive (kLandsEarly). Not
  // alltoall's: in place, a peer's block lands where this rank's block for
  // that peer is still to be sent from.
  bool landsEarly = false;
  void clear() {
    sends.clear();
    recvs.clear();
    copies.clear();
    landsEarly = false;
  }
};

void buildExchange(const PlanShape& shape, const ExchangeSpec& spec, int nchannels,
                   std::vector<ChannelPlan>& plans);

// The specs of the collectives, for `count` elements per rank.
void allgatherSpec(const PlanShape& shape, uint64_t count, ExchangeSpec* spec);
void allgathervSpec(const PlanShape& shape, const size_t* counts, const size_t* displs,
                    ExchangeSpec* spec);
void alltoallSpec(const PlanShape& shape, uint64_t count, ExchangeSpec* spec);
void alltoallvSpec(const PlanShape& shape, const size_t* sendCounts, const size_t* sendDispls,
                   const size_t* recvCounts, const size_t* recvDispls, ExchangeSpec* spec);

// Allgather of `count` elements per rank in ceil(log2 n) rounds, with
// ceil(log2 n) peers each way (bruck.cc), instead of allgatherSpec's one hop
// to n-1 peers.
void buildBruckAllgather(const PlanShape& shape, uint64_t count, int nchannels, std::vector<ChannelPlan>& plans);

// The cost model's estimates (cost_model.h) of one allgather of `blockBytes`
// per rank: one hop to every peer (allgatherSpec), and Bruck's rounds. The
// planner takes the cheaper.
double pairwiseAllgatherUs(const CostView& v, double blockBytes);
double bruckAllgatherUs(const CostView& v, double blockBytes);

}  // namespace strata
