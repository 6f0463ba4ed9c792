// One allreduce on the modelled cluster: the planner's plans for every rank
// the play needs, played (player.h), with the two ways a large case is cut
// down to size, and the references the result is compared with.
//
// Symmetry: a leaf switch's ranks stand for all when the plans say so:
// symmetryOf builds the plans of sample ranks and of their images under a
// shift or an XOR by whole leaves and accepts the symmetry only if every
// step matches (primitive, count, and peers carried by the same
// symmetry). Otherwise every rank is played.
//
// Extrapolation: when the played steps would exceed a budget, the same
// algorithm on the same channels is played at two smaller counts c/2^k and
// c/2^(k+1) (the largest that fit), and the time is extended linearly in
// bytes from them: in a pipelined plan's steady state each more chunk costs
// the same. sim_test.cc measures the error against exact plays.
#pragma once

#include <cstdint>
#include <string>

#include "allreduce.h"
#include "cost_model.h"
#include "network.h"
#include "player.h"

namespace strata::sim {

struct Scenario {
  Topology topo;
  NetModel model;
  int nchannels = 4;              // the communicator's (Comm::init: up to 4)
  size_t slotBytes = 262144;      // STRATA_SLOT_BYTES
  int nslots = 8;                 // STRATA_NSLOTS
  size_t oneshotBytes = 16384;    // STRATA_ONESHOT_BYTES
  uint64_t ntBytes = 8u << 20;    // STRATA_NT_BYTES: from here results are written past the caches
  // STRATA_SHM_NT_BYTES: a shared-memory connector that carries this much in
  // a call fills its slots with whichever of regular and non-temporal
  // stores it timed faster (transports/shm/shm_slot_stores.h; 0: never).
  uint64_t shmNtBytes = 512u << 10;
  uint64_t stepBudget = 4000000;  // most steps one play may run before extrapolating
};

struct Outcome {
  bool carried = false;  // the algorithm can carry this size (oneshot: one slot)
  double timeUs = 0;
  int nchannels = 0;
  std::string method;  // "full", "leaf" (symmetry), with "+extrap" when extended
  uint64_t steps = 0;  // steps played, in all plays
  bool stuck = false;
};

// The plans' symmetry at this count on these channels, or None.
Symmetry symmetryOf(const AllreduceAlgorithm& algo, const Scenario& sc, uint64_t count, int nchannels);

// One allreduce of `bytes` (float32) with `algo`, as the planner would plan
// it when a call forces that algorithm.
Outcome simulate(const AllreduceAlgorithm& algo, const Scenario& sc, uint64_t bytes);

// The same, played with a fixed symmetry (None: every rank) and no
// extrapolation: for checking the shortcuts against the full play.
Outcome simulateWith(const AllreduceAlgorithm& algo, const Scenario& sc, uint64_t bytes, Symmetry sym);

// Rank `rank`'s plans, through Planner::plan with the call's pick.
void buildPlans(const AllreduceAlgorithm& algo, const Scenario& sc, const Layout& layout, int rank, uint64_t count,
                int nchannels, PlanSet& plans);

// The cost model strata would rate this cluster with: a shared-memory hop
// and a network hop, at the model's latencies and bandwidths, a network
// message's queued part the NIC's per-message time (as STRATA_COST_NET's
// third number gives it).
CostModel costModelOf(const NetModel& model);

// The cost model's pick for `bytes` (Tuning::create / chooseAllreduce), and
// its own estimate for `algo`.
const AllreduceAlgorithm* pickOf(const Scenario& sc, uint64_t bytes);
double modelUs(const Scenario& sc, const AllreduceAlgorithm& algo, uint64_t bytes);

// Textbook alpha-beta-gamma times with alpha the network hop (latency plus a
// message's overhead), beta one NIC's bandwidth, gamma the fold rate; NaN
// for algorithms without one.
double closedFormUs(const std::string& algo, const Scenario& sc, uint64_t bytes);

// nccl-tests' allreduce bus bandwidth, GB/s.
inline double busbw(uint64_t bytes, int n, double us) { return bytes / (us * 1e3) * 2.0 * (n - 1) / n; }

}  // namespace strata::sim
