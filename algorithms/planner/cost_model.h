// The cost model every algorithm's estimate is written in: a latency and a
// bandwidth per level (a shared-memory hop between ranks of a node, a network
// hop between nodes, from STRATA_COST_SHM/STRATA_COST_NET), and the layout's
// view of which positions cross between nodes. Each allreduce algorithm's
// file charges its own hops and bytes with these (docs/design.md says what
// each one counts and the measurements the constants come from).
#pragma once

#include <string>

#include "link_cost.h"
#include "plan.h"
#include "status.h"

namespace strata {

struct CostModel {
  LinkCost shm;  // between ranks of a node
  LinkCost net;  // between nodes (LinkCost::shared: whether a node's ranks share its bandwidth)
};

// With more than one round each way, an algorithm whose rounds wait for
// their whole range before the next starts (halving-doubling, the
// hierarchical algorithm's phases within a slice) reaches this fraction of a
// ring's bandwidth, whose steps overlap. With one round (2 ranks)
// halving-doubling sends a slot ahead of its receives and beats the ring.
constexpr double kExchangeEfficiency = 0.75;

// The model on one layout: costs of the link between two positions.
struct CostView {
  const CostModel& model;
  const PlanShape& shape;

  bool cross(int posA, int posB) const {
    return shape.layout && shape.layout->crossesNodes(shape.rankAt(posA), shape.rankAt(posB));
  }
  const LinkCost& link(int posA, int posB) const { return cross(posA, posB) ? model.net : model.shm; }

  int nodes() const { return shape.layout ? shape.layout->nodes() : 1; }
  int mostPerNode() const;
  // In a round where every position sends to the one `offset` ahead (mod
  // n), the most ranks of one node whose send crosses to another node
  // (0: none crosses): crossings that start together queue on the node.
  int mostCrossing(int offset) const;
  // Folding `bytes` into a buffer: memory-bound, at shared-memory speed.
  double reduceUs(double bytes) const { return bytes / (model.shm.gbps * 1e3); }
};

}  // namespace strata
