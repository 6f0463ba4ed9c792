// Pieces shared by the algorithms that pair ranks up by position bits
// (recursive doubling, halving-doubling): the fold of a rank count that is
// not a power of two, the exchange of a round, and what the cost model
// charges for both.
#pragma once

#include <vector>

#include "cost_model.h"
#include "plan.h"

namespace strata {

// n positions seen as a power of two p <= n: the first 2*(n-p) positions
// pair up, the even one of each pair folding its data into the odd one
// before the rounds and getting the result back after them.
struct Fold {
  int p;        // the power of two
  int vpos;     // this position's index among the p, -1 if it folds away
  int partner;  // position this one folds into or receives from, -1 if none

  static Fold of(int n, int pos);
  // Position of virtual index v.
  int posOfVirtual(int v, int n) const {
    int extra = n - p;
    return v < extra ? 2 * v + 1 : v + extra;
  }
};

// The fold around a pairwise algorithm's rounds on the range `all`. begin:
// a rank that folds away hands its input over and takes the result back
// (returns false: its plan is complete); its partner takes the input in and
// its rounds then read the output (*inFlags = kInFromOutput). end: the
// partner hands the result back.
bool beginFold(std::vector<Step>& steps, const PlanShape& shape, const Fold& fold, Range all,
               uint8_t* inFlags);
void endFold(std::vector<Step>& steps, const PlanShape& shape, const Fold& fold, Range all);

// Sends [sendBegin, sendEnd) to `peer` while receiving [recvBegin, recvEnd)
// from it, a slot at a time, each receive one send behind, so two ranks
// doing it to each other never both wait on full FIFOs. recvPrim is Recv or
// RecvReduceCopy; flags apply to the sends (sendFlags) and receives.
struct Exchange {
  int peer;
  Range send, recv;
  uint8_t sendFlags;
  Prim recvPrim;
  uint8_t recvFlags;
};
void appendExchange(std::vector<Step>& steps, const Exchange& x, uint64_t slotElems);

// One round of exchanges at distance `bit` in the virtual order, as the cost
// model sees it. Ranks of one node whose partners are on other nodes cross
// at once: the part of each crossing's latency that is work on the node (all
// of it over TCP: system calls, protocol processing; a NIC's per-message
// time over RDMA) queues (LinkCost::burstUs), and on a link whose bandwidth
// is the node's (LinkCost::shared, a NIC) their bytes share it, so the
// busiest node's crossing ranks set the round's time.
struct RoundCost {
  const LinkCost& link;
  int sharers;       // ranks whose bytes share the link (1 in memory: a port per rank)
  double latencyUs;  // until the last of their messages arrives

  // Moving `bytes` from every rank, at `efficiency` of the link's rate.
  double us(double bytes, double efficiency = 1) const {
    return latencyUs + sharers * bytes / (link.gbps * 1e3) / efficiency;
  }
};
RoundCost roundCost(const CostView& v, const Fold& f, int bit);
// The fold and the hand-back around the rounds: `bytes` over the slowest
// folding pair's link each way, and the fold's reduction.
double foldCostUs(const CostView& v, const Fold& f, double bytes);

}  // namespace strata
