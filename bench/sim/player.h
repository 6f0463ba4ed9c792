// Plays ranks' plans over the network model, step by step, as the executor
// runs them: a channel's steps in order; a step starts once the channel's
// previous step is done, its receive (if any) has arrived and its send (if
// any) has a free slot in the connector, whose FIFO of nslots slots lets a
// sender run up to nslots chunks ahead of its receiver. A slot frees when
// the receiving step is done. Folding costs bytes / reduce rate on the
// receiving rank before it sends on, a copy out of a shared-memory slot
// bytes / the shm rate; a ReduceAll takes one chunk from every other rank's
// connector and folds n-1 of them.
//
// Steps are played in order of their start times (a heap), so that
// transfers meet the links in the order they would on the wire.
//
// Symmetry: when every rank's plan is the plan of a rank in [0, period)
// carried over by a symmetry g of the ranks (a shift by a multiple of
// period, or an XOR with one) that the network shares (period is a whole
// leaf switch, so g maps nodes to nodes and leaves to leaves), every rank
// runs at the times of its representative. Only the representatives are
// played; a connector from s to q is the same connector, in time, as the
// one from g(s) to g(q), so each is kept once under the key of the copy
// whose sender is a representative, and a transfer loads the links of the
// representatives of its ends. sweep.cc checks the claim on the plans
// themselves, and sim_test.cc the times against a full play.
#pragma once

#include <cstdint>
#include <vector>

#include "network.h"
#include "plan.h"

namespace strata::sim {

struct Symmetry {
  enum Kind : uint8_t { None, Shift, Xor };
  Kind kind = None;
  int period = 0;  // representatives are ranks [0, period); None: every rank

  // The symmetry that takes `rank` to its representative, applied to `q`.
  int carry(int rank, int q, int n) const {
    if (kind == None) return q;
    const int base = rank - rank % period;
    return kind == Shift ? (q - base + n) % n : q ^ base;
  }
  int rep(int rank) const { return kind == None ? rank : rank % period; }
  int played(int n) const { return kind == None ? n : period; }
};

struct PlayResult {
  double timeUs = 0;   // the last rank's last step
  uint64_t steps = 0;  // steps played
  bool stuck = false;  // some step never became ready (plans that do not match)
};

// plans[i]: rank i's plans, for the ranks the symmetry plays.
PlayResult play(const Topology& topo, const NetModel& model, int nslots, size_t elemSize,
                const std::vector<PlanSet>& plans, Symmetry sym);

}  // namespace strata::sim
