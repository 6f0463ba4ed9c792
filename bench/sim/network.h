// The modelled cluster: nodes of ranks, each node's NICs on a leaf switch of
// a two-level fat tree, and what a transfer between two ranks occupies.
//
// A transfer holds each resource on its path for bytes / bandwidth (plus a
// message overhead on the network), hop after hop, first come first served
// in the order the player reaches them, and arrives a latency after the last
// hop:
//   same node:   the sender's memory port (one copy at a time per rank),
//                unless the step that sends wrote the slot as it folded or
//                copied a received chunk (NCCL's recvReduceSend: one pass);
//   other node:  the sender's NIC out, the receiver's NIC in, and, across
//                leaves, one lane of the sender leaf's uplink and one of the
//                receiver leaf's downlink. A leaf's uplink is
//                nodesPerLeaf x nicsPerNode / oversub lanes of one NIC's
//                bandwidth: with oversub 2, half the leaf's NICs can cross
//                the spine at full rate at once.
// A same-node hop's bytes cross between cores: the sender writes slot lines
// the receiver's core read last, and the receiver copies or folds lines the
// sender's core just wrote (NetModel::Handoff); between two ranks that share
// a core they stay in its own caches (NetModel::sameCore). A step that also
// reads or writes the rank's own buffers goes at the slower of the hand-off
// rate and the plain rate of that traffic: filling a slot from the input,
// or folding a slot and the input into the next slot, reads one buffer into
// cache (the input rate, not a copy's: no buffer is written); a fold into
// the output reads one and writes one (a copy's, not a plain fold's two and
// one); a copy out writes the output. One that copies a received slot on
// to the next touches slots alone.
// Memory rates follow the working set, for the whole play: the plain copy
// and fold rates that of a rank's input, output and the slots it writes;
// the hand-off's rates those of the cache the slot's lines are in, a
// smaller one while what streams through it between two fills of the slot
// fits there, else the largest for the share it holds of the distinct
// bytes it must keep (NetModel::SlotSets; sweep.cc, atWorkingSet, says
// which). NetModel::caches holds each cache's rates.
// A set past the smaller caches gets the largest's rates for the share of
// its bytes that cache holds and DRAM's for the rest (Cache::shares): on
// this machine the VM's two cores hold a part of the host's 32 MiB L3 that
// falls from all of a 16 MiB set to four fifths of 24 MiB and about half
// of 36 MiB (2026-11-29; bench/sim/calibrate.py measures it so). strata's
// allreduces slow across that range too: 4 ranks at 2 MiB out of place (24
// MiB) took 1.5-1.8 times as long as in place (16 MiB).
// What is not modelled: memory bandwidth shared by a node's ranks, NIC
// message-rate limits beyond msgOverheadUs, adaptive routing.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace strata::sim {

struct Level {
  double latencyUs;
  double gbps;  // GB/s (1e9 bytes/s) one way
};

struct Topology {
  int nodes = 2048;
  int ranksPerNode = 8;
  int nicsPerNode = 1;
  int nodesPerLeaf = 16;
  double oversub = 1.0;  // leaf downlink : uplink bandwidth
  // A node's cores, its ranks pinned to them in blocks (strata-perf --bind,
  // mpirun --bind-to core); 0: a core per rank.
  int coresPerNode = 0;

  int nranks() const { return nodes * ranksPerNode; }
  int nodeOf(int rank) const { return rank / ranksPerNode; }
  // Whether two ranks of one node run on one core.
  bool shareCore(int a, int b) const;
  int leafOf(int rank) const { return nodeOf(rank) / nodesPerLeaf; }
  int nicOf(int rank) const { return nodeOf(rank) * nicsPerNode + rank % ranksPerNode % nicsPerNode; }
  int uplinkLanes() const;
};

// Defaults: a typical InfiniBand HDR cluster, one 200 Gb/s NIC per node of 8
// ranks, 1.5 us from rank to rank across a leaf, 0.5 us more through the
// spine; ranks of a node copy through shared memory at 20 GB/s and fold at
// 10 GB/s (one core's reduction of two float streams).
struct NetModel {
  // A rank's rates for bytes that cross to or from another core's slots,
  // GB/s (0: no limit beyond the plain rates, shm.gbps and reduceGBps).
  struct Handoff {
    double writeGBps = 0;    // filling a slot its receiver's core read last
    double copyOutGBps = 0;  // copying a slot another core wrote
    double foldGBps = 0;     // folding such a slot into its data
  };
  Level shm{0.4, 20};  // gbps: a rank's copy of its own data
  // A rank writing its output from a slot in cache (0: shm.gbps): from
  // DRAM-sized outputs on, the executor's non-temporal stores
  // (STRATA_NT_BYTES) write it without first reading it.
  double outputGBps = 0;
  // A rank reading its input into a slot in cache (0: shm.gbps): from
  // DRAM-sized inputs on, half a copy's DRAM traffic.
  double inputGBps = 0;
  Level nic{1.5, 25};
  double spineLatencyUs = 0.5;
  double msgOverheadUs = 0.1;  // a NIC's time per message, on top of the bytes
  double reduceGBps = 10;      // bytes folded per second per rank
  // Past the caches.
  Handoff handoff;
  // Slots filled with non-temporal stores, which go to DRAM and their
  // receiver reads from there: a slot ring's worth, as a connector's FIFO
  // is (0: handoff's), whatever the ranks' buffers stream beside them
  // (SlotSets::timedStores).
  Handoff nonTemporal;
  // Between two ranks that share a core: the rates of the cache the slot's
  // lines are in, which is that core's own: a fill at its output rate, a
  // copy-out at its input rate (each touches the slot's set once, beside a
  // piece the L2 holds), a fold at its fold rate (forWorkingSet sets them
  // with handoff's; 0: the plain rates). On an AMD EPYC host (2026-12-07,
  // runs BE and BF) the L3's copy rate in their place put 8 ranks at 64 KiB
  // and 4 and 8 at 1 MiB at 1.26-1.57 times strata's medians. With this
  // machine's cores far apart a slot write between them runs at 2-3 GB/s
  // (it takes lines the other core read) where a core copies its own at
  // 25-50: 8 ranks at 64 KiB, halving-doubling with two of three partners
  // on the same core, took 79 us far, predicted 243 with every hop
  // between cores and 84 with this (2026-11-29, run AY).
  Handoff sameCore;

  // A cache level: its size on a node, shared by the node's ranks, and the
  // rates of one rank whose buffers it holds.
  struct Cache {
    double bytes;
    double copyGBps;
    double foldGBps;
    Handoff handoff;
    // The share of a set of each size that the cache holds, measured
    // (bytes, share; ascending), where a set runs at this cache's rates for
    // that share of its bytes and at DRAM's for the rest. Between two
    // points the share is interpolated, below the first it is the first's,
    // past the last it falls as 1 / size. Empty: all of a set of up to
    // `bytes`, bytes / size of a larger one. Only the largest cache's
    // count: a set past a smaller one goes to the next.
    std::vector<std::pair<double, double>> shares;
    // A rank writing its output from a slot in cache and reading its input
    // into one, while this cache holds the buffers (0: copyGBps). A copy
    // reads and writes the cache's set; these touch it once, beside a slot
    // the L2 holds, and need not go at a copy's rate: on an AMD EPYC host
    // (2026-12-07) the L3's were twice its copy's (57-71 GB/s against
    // 28-30), on the host before about the same (36-44 against 44), and
    // with the copy's the sim put 2 ranks at 1 MiB at 1.27-1.37 times
    // strata's medians (0.95-1.02 with these).
    double outputGBps = 0;
    double inputGBps = 0;
    double outputRate() const { return outputGBps > 0 ? outputGBps : copyGBps; }
    double inputRate() const { return inputGBps > 0 ? inputGBps : copyGBps; }
    double shareOf(double set) const;
  };
  std::vector<Cache> caches;  // smallest first; none: every buffer from DRAM

  // The sets that decide where a slot's lines are when a hand-off touches
  // them, per rank: a smaller cache serves them while it holds `passed`,
  // the bytes that stream through it between two fills of the slot (then
  // the slot has not left it); past those, the largest serves the share of
  // the set it must hold, `read` for the copy-outs and folds and `refill`
  // for the slot writes (sweep.cc, atWorkingSet, says which sets).
  // timedStores: the slots' connectors carry enough a call to time regular
  // against non-temporal stores and keep the faster, as strata's do from
  // STRATA_SHM_NT_BYTES (transports/shm/shm_slot_stores.h): the hand-off
  // then takes the faster of the cached rates and nonTemporal's.
  struct SlotSets {
    double passed;
    double read;
    double refill;
    bool timedStores = false;
  };
  // This model with shm.gbps and reduceGBps (and outputGBps and inputGBps:
  // the cache's own, else its copy rate) from the smallest cache that holds
  // `perRankBytes` for each of `ranksSharing` ranks, and handoff's and
  // sameCore's rates from the cache `slots` give; where none holds a set,
  // blended from the largest's and the rates above (DRAM's) by the share of
  // it the largest holds.
  NetModel forWorkingSet(double perRankBytes, SlotSets slots, int ranksSharing) const;
};

// The link state of one play: when each resource is next free.
class Network {
 public:
  Network(const Topology& topo, const NetModel& model);

  struct Timing {
    double sentUs;     // the sender's step is done with the data
    double arrivesUs;  // the receiver may take it
  };
  // `from` and `to` are real ranks (they decide the path); the resources
  // are those of `fromRes` and `toRes`, which stand for them in a play that
  // simulates representatives of a symmetric plan (player.h).
  // How a same-node send fills the receiver's slot.
  enum class Fill {
    Written,     // the step's own fold already wrote it: no copy left to do
    FromBuffer,  // a copy of the rank's own data
    FromSlot,    // a copy of a slot it received (a cache-hot chunk passed on)
  };
  Timing transfer(int from, int to, int fromRes, int toRes, uint64_t bytes, double readyUs,
                  Fill fill = Fill::FromBuffer);
  // Folding a chunk `to` received from `from` into its data: from the
  // sender's slot on the same node, from its own memory off the network;
  // into the next slot, or else into the output.
  double foldUs(int from, int to, uint64_t bytes, bool intoSlot) const;
  // A receive from a rank of the same node copies the chunk out of the
  // shared slot: a second copy, on the receiver (a NIC's DMA is the network
  // receive's).
  double copyOutUs(int from, int to, uint64_t bytes) const;
  // A rank's copy of a slot it just wrote into its output.
  double outputUs(uint64_t bytes) const { return bytes / (outputGBps() * 1e3); }

 private:
  double& lane(std::vector<double>& lanes, int leaf);
  // The hand-off rates between two ranks of a node.
  NetModel::Handoff handoffOf(int from, int to) const;
  double outputGBps() const { return model_.outputGBps > 0 ? model_.outputGBps : model_.shm.gbps; }
  double inputGBps() const { return model_.inputGBps > 0 ? model_.inputGBps : model_.shm.gbps; }

  Topology topo_;
  NetModel model_;
  int lanes_;
  std::vector<double> memFree_, txFree_, rxFree_, upFree_, downFree_;
};

}  // namespace strata::sim
