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
// Memory rates follow the working set: where a rank's share of a node's
// cache holds its input, output and the slots it writes, the cache's copy
// and fold rates replace the DRAM ones for the whole play (NetModel::caches).
// What is not modelled: memory bandwidth shared by a node's ranks, NIC
// message-rate limits beyond msgOverheadUs, adaptive routing.
#pragma once

#include <cstdint>
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

  int nranks() const { return nodes * ranksPerNode; }
  int nodeOf(int rank) const { return rank / ranksPerNode; }
  int leafOf(int rank) const { return nodeOf(rank) / nodesPerLeaf; }
  int nicOf(int rank) const { return nodeOf(rank) * nicsPerNode + rank % ranksPerNode % nicsPerNode; }
  int uplinkLanes() const;
};

// Defaults: a typical InfiniBand HDR cluster, one 200 Gb/s NIC per node of 8
// ranks, 1.5 us from rank to rank across a leaf, 0.5 us more through the
// spine; ranks of a node copy through shared memory at 20 GB/s and fold at
// 10 GB/s (one core's reduction of two float streams).
struct NetModel {
  Level shm{0.4, 20};
  Level nic{1.5, 25};
  double spineLatencyUs = 0.5;
  double msgOverheadUs = 0.1;  // a NIC's time per message, on top of the bytes
  double reduceGBps = 10;      // bytes folded per second per rank

  // A cache level: its size on a node, shared by the node's ranks, and the
  // copy and fold rates of one rank whose buffers it holds.
  struct Cache {
    double bytes;
    double copyGBps;
    double foldGBps;
  };
  std::vector<Cache> caches;  // smallest first; none: every buffer from DRAM

  // This model with shm.gbps and reduceGBps from the smallest cache that
  // holds `perRankBytes` for each of `ranksSharing` ranks (the DRAM rates
  // above where none does).
  NetModel forWorkingSet(double perRankBytes, int ranksSharing) const;
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
  // written: the step's own fold or copy already wrote the chunk into a
  // same-node slot (a receive that sends on), so no copy is left to do.
  Timing transfer(int from, int to, int fromRes, int toRes, uint64_t bytes, double readyUs, bool written = false);
  double foldUs(uint64_t bytes) const { return bytes / (model_.reduceGBps * 1e3); }
  // A receive from a rank of the same node copies the chunk out of the
  // shared slot: a second copy, on the receiver (a NIC's DMA is the network
  // receive's).
  double copyOutUs(int from, int to, uint64_t bytes) const {
    return topo_.nodeOf(from) == topo_.nodeOf(to) ? bytes / (model_.shm.gbps * 1e3) : 0;
  }

 private:
  double& lane(std::vector<double>& lanes, int leaf);

  Topology topo_;
  NetModel model_;
  int lanes_;
  std::vector<double> memFree_, txFree_, rxFree_, upFree_, downFree_;
};

}  // namespace strata::sim
