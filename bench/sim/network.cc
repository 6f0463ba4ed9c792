#include "network.h"

#include <algorithm>
#include <cmath>

namespace strata::sim {

bool Topology::shareCore(int a, int b) const {
  if (coresPerNode <= 0 || coresPerNode >= ranksPerNode || nodeOf(a) != nodeOf(b)) return false;
  auto core = [&](int r) { return int64_t(r % ranksPerNode) * coresPerNode / ranksPerNode; };
  return core(a) == core(b);
}

int Topology::uplinkLanes() const {
  return std::max(1, static_cast<int>(std::lround(nodesPerLeaf * nicsPerNode / oversub)));
}

namespace {

// The rate of a stream whose bytes a cache serves at `cached` for the
// fraction `hit` of them and DRAM at `dram` for the rest: their times per
// byte add (0: no limit, for the rate and for the result).
double blend(double hit, double cached, double dram) {
  const double perByte = (cached > 0 ? hit / cached : 0) + (dram > 0 && hit < 1 ? (1 - hit) / dram : 0);
  return perByte > 0 ? 1 / perByte : 0;
}

// The faster of two sets of hand-off rates, by a round of a slot write, a
// copy-out and a fold (0: no limit).
NetModel::Handoff faster(const NetModel::Handoff& a, const NetModel::Handoff& b) {
  auto perByte = [](const NetModel::Handoff& h) {
    auto t = [](double gbps) { return gbps > 0 ? 1 / gbps : 0; };
    return t(h.writeGBps) + t(h.copyOutGBps) + t(h.foldGBps);
  };
  return perByte(b) < perByte(a) ? b : a;
}

}  // namespace

double NetModel::Cache::shareOf(double set) const {
  if (shares.empty()) return set <= bytes ? 1.0 : bytes / set;
  if (set <= shares.front().first) return shares.front().second;
  for (size_t i = 1; i < shares.size(); ++i)
    if (set <= shares[i].first) {
      const auto [x0, y0] = shares[i - 1];
      const auto [x1, y1] = shares[i];
      return y0 + (y1 - y0) * (set - x0) / (x1 - x0);
    }
  return shares.back().second * shares.back().first / set;
}

NetModel NetModel::forWorkingSet(double perRankBytes, SlotSets slots, int ranksSharing) const {
  NetModel m = *this;
  if (caches.empty()) return m;
  // The smallest cache that holds what passes, else the largest, for its
  // share of what it must hold.
  auto tier = [&](double passed, double held, double* hit) {
    *hit = 1.0;
    for (size_t i = 0; i + 1 < caches.size(); ++i)
      if (passed * ranksSharing <= caches[i].bytes) return &caches[i];
    *hit = caches.back().shareOf(held * ranksSharing);
    return &caches.back();
  };
  double hit;
  const Cache* plain = tier(perRankBytes, perRankBytes, &hit);
  m.shm.gbps = blend(hit, plain->copyGBps, shm.gbps);
  m.outputGBps = blend(hit, plain->outputRate(), outputGBps > 0 ? outputGBps : shm.gbps);
  m.inputGBps = blend(hit, plain->inputRate(), inputGBps > 0 ? inputGBps : shm.gbps);
  m.reduceGBps = blend(hit, plain->foldGBps, reduceGBps);
  double refillHit;
  const Cache* refilled = tier(slots.passed, slots.refill, &refillHit);
  const Cache* read = tier(slots.passed, slots.read, &hit);
  m.handoff = {blend(refillHit, refilled->handoff.writeGBps, handoff.writeGBps),
               blend(hit, read->handoff.copyOutGBps, handoff.copyOutGBps),
               blend(hit, read->handoff.foldGBps, handoff.foldGBps)};
  m.sameCore = {blend(refillHit, refilled->outputRate(), shm.gbps), blend(hit, read->inputRate(), shm.gbps),
                blend(hit, read->foldGBps, reduceGBps)};
  if (slots.timedStores && handoff.writeGBps > 0 && handoff.copyOutGBps > 0 && handoff.foldGBps > 0) {
    m.handoff = faster(m.handoff, nonTemporal.writeGBps > 0 ? nonTemporal : handoff);
  }
  return m;
}

namespace {

// The slower of a plain rate and a hand-off rate (0: none).
double slower(double plain, double handoff) { return handoff > 0 ? std::min(plain, handoff) : plain; }

}  // namespace

NetModel::Handoff Network::handoffOf(int from, int to) const {
  return topo_.shareCore(from, to) ? model_.sameCore : model_.handoff;
}

double Network::foldUs(int from, int to, uint64_t bytes, bool intoSlot) const {
  const double slotFold = handoffOf(from, to).foldGBps;
  // A measured slot fold holds the arithmetic and the slot's side; the
  // rank's own buffers then carry only the input read (and the output
  // written), not the plain fold's two buffers read and one written.
  const double gbps = topo_.nodeOf(from) != topo_.nodeOf(to) || slotFold <= 0
                          ? model_.reduceGBps
                          : std::min(intoSlot ? inputGBps() : model_.shm.gbps, slotFold);
  return bytes / (gbps * 1e3);
}

double Network::copyOutUs(int from, int to, uint64_t bytes) const {
  if (topo_.nodeOf(from) != topo_.nodeOf(to)) return 0;
  return bytes / (slower(outputGBps(), handoffOf(from, to).copyOutGBps) * 1e3);
}

Network::Network(const Topology& topo, const NetModel& model)
    : topo_(topo),
      model_(model),
      lanes_(topo.uplinkLanes()),
      memFree_(topo.nranks(), 0),
      txFree_(size_t(topo.nodes) * topo.nicsPerNode, 0),
      rxFree_(size_t(topo.nodes) * topo.nicsPerNode, 0) {
  const int leaves = (topo.nodes + topo.nodesPerLeaf - 1) / topo.nodesPerLeaf;
  upFree_.assign(size_t(leaves) * lanes_, 0);
  downFree_.assign(size_t(leaves) * lanes_, 0);
}

// The lane of `leaf` that frees first.
double& Network::lane(std::vector<double>& lanes, int leaf) {
  double* first = &lanes[size_t(leaf) * lanes_];
  return *std::min_element(first, first + lanes_);
}

Network::Timing Network::transfer(int from, int to, int fromRes, int toRes, uint64_t bytes, double readyUs,
                                  Fill fill) {
  if (topo_.nodeOf(from) == topo_.nodeOf(to)) {
    double& port = memFree_[fromRes];
    const double start = std::max(readyUs, port);
    const double write = handoffOf(from, to).writeGBps;
    const double gbps = fill == Fill::FromSlot && write > 0 ? write : slower(inputGBps(), write);
    port = start + (fill == Fill::Written ? 0 : bytes / (gbps * 1e3));
    return {port, port + model_.shm.latencyUs};
  }
  // Hop by hop, each no earlier than the one before: a message waits in
  // the switch for a busy link instead of holding its sender's NIC, whose
  // next message may leave meanwhile to another destination.
  const double dur = model_.msgOverheadUs + bytes / (model_.nic.gbps * 1e3);
  double& tx = txFree_[topo_.nicOf(fromRes)];
  const double sent = std::max(readyUs, tx) + dur;
  tx = sent;
  double end = sent;
  auto hop = [&](double& free) {
    end = std::max(end - dur, free) + dur;
    free = end;
  };
  const bool spine = topo_.leafOf(from) != topo_.leafOf(to);
  if (spine) {
    hop(lane(upFree_, topo_.leafOf(fromRes)));
    hop(lane(downFree_, topo_.leafOf(toRes)));
  }
  hop(rxFree_[topo_.nicOf(toRes)]);
  return {sent, end + model_.nic.latencyUs + (spine ? model_.spineLatencyUs : 0)};
}

}  // namespace strata::sim
