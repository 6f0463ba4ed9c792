// Hierarchical allreduce, per slice of the buffer:
//   1. on each node, a ring reduce-scatter over the node's ranks (shared
//      memory): local rank q ends with block q of the slice summed over its
//      node;
//   2. between nodes, an allreduce of each block among the ranks holding it
//      (one per node): every local rank runs its own ring over the nodes, so
//      all of a node's ranks (and their network paths) carry the traffic;
//   3. on each node, a ring allgather of the blocks.
// Each node sends 2(N-1)/N of the buffer over the network in all, against a
// flat ring's 2(n-1)/n per crossing rank, and the network hops are 2(N-1)
// instead of 2(n-1).
//
// A slice spans `crossPieces` slots per local rank, so that the ring between
// nodes, which cuts a local rank's block into one block per node, moves at
// least slot / kCrossBlockSlotFraction a step: with a slot per local rank, as the flat
// ring's slices, 2,048 nodes would cut a 256 KiB slot into 128-byte steps,
// each paying a message's overhead, and a 4 GiB plan would hold 8.4 M steps.
// The node's rings take the blocks a slot at a time. Steps per rank: 2 local
// per slot of its blocks (the node's rings) and 2 (nodes - 1) per slice (the
// ring between nodes), about 2 nodes + 4 bytes / slot in all: at 16,384
// ranks, 65,528 steps at 4 GiB, as many as the flat ring's 2 bytes / slot
// once the buffer passes n slots.
//
// Nodes with different rank counts split the slice differently; step 2 then
// works on the segments where no node's block boundary falls, each reduced
// among the ranks whose blocks contain it. Every rank walks its segments in
// ascending order, so the segment all its ranks are waiting on always
// completes. Final values are computed once (in step 2's rings) and copied,
// so every rank gets the same bits; as in the ring, where the blocks fall,
// and so the order an element's operands are folded in, follows the slot
// size and the channel count.
#include <algorithm>

#include "allreduce.h"
#include "cost_model.h"
#include "ring_pass.h"

namespace strata {
namespace {

// One node, or one rank per node: nothing to split into levels.
bool flat(int nodes, int nranks) { return nodes == 1 || nodes == nranks; }

// The least a step of the ring between nodes moves, where the data allows:
// an eighth of a slot (32 KiB at the default 256 KiB) keeps a NIC's
// per-message time small beside the bytes, while a slice still holds few
// enough slots that one slice's node phases overlap another's network phase
// (strata-sim at 1,024 and 16,384 ranks, 64 MiB-4 GiB: within 2.3% of the
// best of a half, an eighth and a 32nd of a slot; bench/README.md).
constexpr uint64_t kCrossBlockSlotFraction = 8;

// Slots per local rank in a slice: one up to 8 nodes (the flat ring's slice),
// then enough that a block per node holds slot / kCrossBlockSlotFraction.
uint64_t crossPieces(int nodes) {
  return std::max<uint64_t>(1, (nodes + kCrossBlockSlotFraction - 1) / kCrossBlockSlotFraction);
}

void buildHierarchicalAllreduce(const PlanShape& shape, uint64_t count, int nchannels,
                                std::vector<ChannelPlan>& plans) {
  if (!shape.layout || flat(shape.layout->nodes(), shape.nranks))
    return kRingAllreduce.build(shape, count, nchannels, plans);
  const auto& h = shape.layout->hierarchy;
  const int nodes = static_cast<int>(h.nodes.size());
  const int node = h.nodeOf[shape.rank];
  const auto& mine = h.nodes[node].ranks;
  const int local = h.localRank[shape.rank];
  const uint64_t align = shape.alignElems();
  int fewest = shape.nranks;
  for (const auto& n : h.nodes) fewest = std::min(fewest, static_cast<int>(n.ranks.size()));
  // The node with the fewest ranks has blocks of crossPieces slots; a
  // segment of a block is then at most `nodes` slots (crossPieces <= nodes),
  // so every step of the ring between nodes fits a slot.
  const uint64_t slot = shape.slotElems();
  const uint64_t sliceMax = slot * crossPieces(nodes) * fewest;
  const RingGroup nodeRing{mine.data(), static_cast<int>(mine.size()), local};
  const uint8_t crossIn = mine.size() > 1 ? kInFromOutput : 0;
  std::vector<int> members(nodes);
  std::vector<uint64_t> cuts;

  for (int ch = 0; ch < nchannels; ++ch) {
    auto& steps = plans[ch].steps;
    steps.clear();
    auto [begin, end] = channelRange(count, nchannels, ch, align);
    for (uint64_t slice = begin; slice < end; slice += sliceMax) {
      const uint64_t elems = std::min(sliceMax, end - slice);
      appendRingReduceScatter(steps, nodeRing, slice, elems, align, slot);
      // Segments of this rank's block: cut wherever some node's block ends.
      const Range block = ringBlock(elems, nodeRing.n, local, align);
      cuts.assign({block.begin, block.end});
      for (const auto& other : h.nodes) {
        const int k = static_cast<int>(other.ranks.size());
        for (int b = 0; b < k; ++b) {
          uint64_t edge = ringBlock(elems, k, b, align).end;
          if (edge > block.begin && edge < block.end) cuts.push_back(edge);
        }
      }
      std::sort(cuts.begin(), cuts.end());
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      for (size_t i = 0; i + 1 < cuts.size(); ++i) {
        const uint64_t a = cuts[i];
        for (int k = 0; k < nodes; ++k) {
          const auto& ranks = h.nodes[k].ranks;
          const int nk = static_cast<int>(ranks.size());
          int owner = 0;
          while (owner + 1 < nk && ringBlock(elems, nk, owner, align).end <= a) ++owner;
          members[k] = ranks[owner];
        }
        const RingGroup cross{members.data(), nodes, node};
        appendRingAllreduce(steps, cross, slice + a, cuts[i + 1] - a, align, crossIn);
      }
      appendRingAllgather(steps, nodeRing, slice, elems, align, slot);
    }
  }
}

double hierUs(const CostView& v, double bytes) {
  const int nodes = v.nodes();
  if (flat(nodes, v.shape.nranks)) return kRingAllreduce.costUs(v, bytes);
  const int local = v.mostPerNode();
  // Each local rank runs its own ring over the nodes on 1/local of the
  // buffer, over its own connections, all crossing at once (a step pays
  // their burstUs, pairwise.h's RoundCost says why, but on a shared level
  // only once: below). The buffer goes slice by slice. Within a slice each phase
  // waits for the one before, as halving-doubling's rounds do
  // (kExchangeEfficiency), but a rank's sends run ahead of its receives, so
  // the node's memory phases of one slice overlap the network phase of
  // another: the slower level sets the pace, and the faster one shows only
  // while the pipeline fills and drains (docs/design.md has the
  // measurement). A slice is crossPieces slots per local rank.
  const double shmUs = 2 * (local - 1) * (bytes / local) / (v.model.shm.gbps * 1e3);
  const double netUs = 2 * (nodes - 1) * (bytes / local / nodes) / (v.model.net.gbps * 1e3);
  const double slice = static_cast<double>(v.shape.slotBytes) * local * crossPieces(nodes);
  const double fill = std::min(1.0, slice / bytes);
  // On a shared level (a NIC) the rings' first messages queue on the
  // node's NIC and the rings stay that far apart, so a later step waits for
  // no queue: it costs one latency, or the NIC's per-message time of all
  // the local ranks where that is longer (strata-sim: 64 ranks at 256 KiB,
  // 74.8 us played, priced 84.3 with the queue every step, 74.5 without).
  // Over TCP a message's latency is its rank's own work, which every step
  // pays again: burstUs.
  const LinkCost& net = v.model.net;
  const double netStepUs =
      net.shared ? std::max(net.latencyUs, local * (net.latencyUs - net.inFlightUs)) : net.burstUs(local);
  const double latencyUs = 2 * (local - 1) * v.model.shm.latencyUs + 2 * (nodes - 1) * netStepUs;
  return latencyUs + (std::max(shmUs, netUs) + fill * std::min(shmUs, netUs)) / kExchangeEfficiency +
         v.reduceUs(bytes * (local - 1) / local + bytes / local * (nodes - 1) / nodes);
}

}  // namespace

const AllreduceAlgorithm kHierarchicalAllreduce{
    "hier", "node reduce-scatter (shm), one ring per local rank between nodes (net), node allgather",
    buildHierarchicalAllreduce, hierUs, kInputStable | kInputStableInPlace};

}  // namespace strata
