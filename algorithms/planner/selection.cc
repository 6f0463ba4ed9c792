#include "selection.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

#include "node_tree.h"
#include "pairwise.h"

namespace strata {
namespace {

struct Named {
  const char* name;
  AllreduceAlgo algo;
};
// In the order ties are broken: with 2 ranks halving-doubling beats the ring
// the model rates equal (see kExchangeEfficiency), and the hierarchical
// algorithm on one node is the ring, so it comes after it.
constexpr Named kNames[] = {
    {"oneshot", AllreduceAlgo::OneShot}, {"rd", AllreduceAlgo::RecursiveDoubling},
    {"hd", AllreduceAlgo::HalvingDoubling}, {"ring", AllreduceAlgo::Ring},
    {"hier", AllreduceAlgo::Hierarchical}, {"tree", AllreduceAlgo::Tree},
};

// With more than one round each way, halving-doubling's exchanges reach
// this fraction of a ring's bandwidth: each round waits for its whole range
// before the next starts, where a ring's steps overlap (measured: 0.7-0.8
// with 4 ranks on one node and on two). With one round (2 ranks) it sends a
// slot ahead of its receives and beats the ring.
constexpr double kExchangeEfficiency = 0.75;

// The model's view of the layout: costs of the link between two positions.
struct View {
  const CostModel& m;
  const PlanShape& s;

  bool cross(int posA, int posB) const {
    return s.layout && s.layout->crossesNodes(s.rankAt(posA), s.rankAt(posB));
  }
  const LinkCost& link(int posA, int posB) const { return cross(posA, posB) ? m.net : m.shm; }

  int nodes() const { return s.layout ? s.layout->nodes() : 1; }
  int mostPerNode() const {
    if (!s.layout) return s.nranks;
    int most = 1;
    for (const auto& node : s.layout->hierarchy.nodes) most = std::max(most, static_cast<int>(node.ranks.size()));
    return most;
  }
  // One round of pairwise exchanges at distance `bit` in the virtual order:
  // the slowest link a pair uses, and the round's latency.
  struct Round {
    const LinkCost& link;
    double latencyUs;
  };
  Round round(const Fold& f, int bit) const {
    const int crossers = roundCrossers(f, bit);
    if (crossers == 0) return {m.shm, m.shm.latencyUs};
    return {m.net, crossers * m.net.latencyUs};
  }
  // The most ranks of one node whose partner at distance `bit` is on another
  // node: they cross at once, and a crossing's latency is mostly work on the
  // node (system calls, protocol processing, a NIC's per-message cost), which
  // queues (measured: 2 ranks of a node crossing together take 1.5-2x one).
  int roundCrossers(const Fold& f, int bit) const {
    if (!s.layout) return 0;
    std::vector<int> perNode(s.layout->nodes(), 0);
    int most = 0;
    for (int v = 0; v < f.p; ++v) {
      const int pos = f.posOfVirtual(v, s.nranks);
      if (cross(pos, f.posOfVirtual(v ^ bit, s.nranks)))
        most = std::max(most, ++perNode[s.layout->hierarchy.nodeOf[s.rankAt(pos)]]);
    }
    return most;
  }
  // Folding `bytes` into a buffer: memory-bound, at shared-memory speed.
  double reduceUs(double bytes) const { return bytes / (m.shm.gbps * 1e3); }
  double foldUs(const Fold& f, double bytes) const {
    if (f.p == s.nranks) return 0;
    const LinkCost* worst = &m.shm;
    for (int pos = 0; pos + 1 < 2 * (s.nranks - f.p); pos += 2)
      if (cross(pos, pos + 1)) worst = &m.net;
    return 2 * worst->us(bytes) + reduceUs(bytes);
  }
};

double ringUs(const View& v, double bytes) {
  const int n = v.s.nranks;
  const int nodes = v.nodes();
  // A block goes 2(n-1) hops, `crossings` of every n between nodes; the
  // steps overlap, so the slowest link sets the bandwidth.
  const int crossings = nodes > 1 ? nodes : 0;
  const double hopUs = (crossings * v.m.net.latencyUs + (n - crossings) * v.m.shm.latencyUs) / n;
  const LinkCost& slow = nodes > 1 ? v.m.net : v.m.shm;
  return 2 * (n - 1) * (hopUs + bytes / n / (slow.gbps * 1e3)) + v.reduceUs(bytes * (n - 1) / n);
}

double oneshotUs(const View& v, double bytes) {
  double worstLat = 0, sendUs = 0;
  for (int p = 1; p < v.s.nranks; ++p) {
    const LinkCost& l = v.link(0, p);
    worstLat = std::max(worstLat, l.latencyUs);
    // Sends leave one after the other from one thread; a network send is a
    // system call and a wake-up on the other side, a memory one a copy.
    sendUs += (v.cross(0, p) ? l.latencyUs : 0) + bytes / (l.gbps * 1e3);
  }
  return worstLat + sendUs + v.reduceUs(bytes * (v.s.nranks - 1));
}

double rdUs(const View& v, double bytes) {
  const Fold f = Fold::of(v.s.nranks, 0);
  double t = v.foldUs(f, bytes);
  for (int bit = 1; bit < f.p; bit *= 2) {
    const View::Round r = v.round(f, bit);
    t += r.latencyUs + bytes / (r.link.gbps * 1e3) + v.reduceUs(bytes);
  }
  return t;
}

double hdUs(const View& v, double bytes) {
  const Fold f = Fold::of(v.s.nranks, 0);
  double t = v.foldUs(f, bytes);
  double part = bytes;
  const double efficiency = f.p > 2 ? kExchangeEfficiency : 1.0;
  for (int bit = 1; bit < f.p; bit *= 2) {
    part /= 2;
    const View::Round r = v.round(f, bit);
    t += 2 * (r.latencyUs + part / (r.link.gbps * 1e3) / efficiency) + v.reduceUs(part);
  }
  return t;
}

double treeUs(const View& v, double bytes) {
  const int chain = v.mostPerNode() - 1;
  const LinkCost& slow = v.nodes() > 1 ? v.m.net : v.m.shm;
  // Up and down, each hop once per chunk. Pipelined, the links work at once:
  // the slowest carries the buffer once each way, and the busiest rank (a
  // node leader with two child nodes and a chain) moves it four times, the
  // moves beyond the slow link's at memory speed.
  const double fanout = v.nodes() > 2 ? 4 : (v.nodes() > 1 ? 3 : 2);
  const double latencyUs = 2 * chain * v.m.shm.latencyUs + NodeTree::of(v.nodes()).crossings() * v.m.net.latencyUs;
  return latencyUs + bytes / (slow.gbps * 1e3) + (fanout - 1) * bytes / (v.m.shm.gbps * 1e3) +
         v.reduceUs(bytes * (fanout - 1));
}

double hierUs(const View& v, double bytes) {
  const int nodes = v.nodes();
  if (nodes == 1 || nodes == v.s.nranks) return ringUs(v, bytes);
  const int local = v.mostPerNode();
  // Each local rank runs its own ring over the nodes on 1/local of the
  // buffer, over its own connections, all crossing at once (roundCrossers).
  // The buffer goes slice by slice (a slot per local rank). Within a slice
  // each phase waits for the one before, as halving-doubling's rounds do
  // (kExchangeEfficiency), but a rank's sends run ahead of its receives, so
  // the node's memory phases of one slice overlap the network phase of
  // another: the slower level sets the pace, and the faster one shows only
  // while the pipeline fills and drains. Measured between namespaces whose
  // links tc tbf caps at 8 Gbit/s, where 2 nodes x 2 ranks can reach at
  // most 1.5x the line rate in busbw (each node sends the buffer across
  // once): hier 0.90 of that, halving-doubling 0.74.
  const double shmUs = 2 * (local - 1) * (bytes / local) / (v.m.shm.gbps * 1e3);
  const double netUs = 2 * (nodes - 1) * (bytes / local / nodes) / (v.m.net.gbps * 1e3);
  const double slice = static_cast<double>(v.s.slotBytes) * local;
  const double fill = std::min(1.0, slice / bytes);
  const double latencyUs = 2 * (local - 1) * v.m.shm.latencyUs + 2 * (nodes - 1) * local * v.m.net.latencyUs;
  return latencyUs + (std::max(shmUs, netUs) + fill * std::min(shmUs, netUs)) / kExchangeEfficiency +
         v.reduceUs(bytes * (local - 1) / local + bytes / local * (nodes - 1) / nodes);
}

}  // namespace

const char* algoName(AllreduceAlgo algo) {
  for (const Named& n : kNames)
    if (n.algo == algo) return n.name;
  return "?";
}

Status parseLinkCost(const std::string& text, const char* var, LinkCost* out) {
  char* end = nullptr;
  const char* s = text.c_str();
  double lat = std::strtod(s, &end);
  double bw = 0;
  bool ok = end != s && *end == ',';
  if (ok) {
    const char* b = end + 1;
    bw = std::strtod(b, &end);
    ok = end != b && *end == '\0' && lat >= 0 && bw > 0 && std::isfinite(lat) && std::isfinite(bw);
  }
  if (!ok)
    return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                          "%s='%s' is not 'latency_us,GB/s' (two numbers, latency >= 0, bandwidth > 0)",
                          var, text.c_str());
  *out = {lat, bw};
  return Status::ok();
}

Status parseForcedAlgo(const std::string& text, bool* forced, AllreduceAlgo* algo) {
  *forced = !text.empty();
  if (text.empty()) return Status::ok();
  for (const Named& n : kNames)
    if (text == n.name) {
      *algo = n.algo;
      return Status::ok();
    }
  return makeErrorQuiet(STRATA_ERR_INVALID_ARGUMENT,
                        "STRATA_ALGO='%s' is not an algorithm (ring, oneshot, rd, hd, tree, hier)", text.c_str());
}

double estimateUs(const CostModel& model, AllreduceAlgo algo, const PlanShape& shape, uint64_t bytes,
                  size_t oneshotBytes) {
  const View v{model, shape};
  const double b = static_cast<double>(bytes);
  switch (algo) {
    case AllreduceAlgo::Ring: return ringUs(v, b);
    case AllreduceAlgo::OneShot:
      if (bytes > shape.slotBytes || bytes > oneshotBytes) return std::numeric_limits<double>::infinity();
      return oneshotUs(v, b);
    case AllreduceAlgo::RecursiveDoubling: return rdUs(v, b);
    case AllreduceAlgo::HalvingDoubling: return hdUs(v, b);
    case AllreduceAlgo::Tree: return treeUs(v, b);
    case AllreduceAlgo::Hierarchical: return hierUs(v, b);
  }
  return std::numeric_limits<double>::infinity();
}

Status Tuning::create(const std::string& forcedAlgo, size_t oneshotBytes, const CostModel& model,
                      const PlanShape& shape, Tuning* out) {
  Tuning t;
  STRATA_CHECK(parseForcedAlgo(forcedAlgo, &t.forced_, &t.forcedAlgo_));
  t.oneshotBytes_ = oneshotBytes;
  for (int k = 0; k < kBuckets; ++k) {
    const uint64_t bytes = uint64_t(1) << k;
    double best = std::numeric_limits<double>::infinity();
    for (const Named& n : kNames) {
      double us = estimateUs(model, n.algo, shape, bytes, oneshotBytes);
      if (us < best) {
        best = us;
        t.byLog2_[k] = n.algo;
      }
    }
  }
  *out = t;
  return Status::ok();
}

Status Tuning::chooseAllreduce(const PlanShape& shape, uint64_t count, AllreduceChoice* choice) const {
  const uint64_t bytes = count * shape.elemSize;
  AllreduceAlgo algo;
  if (forced_) {
    algo = forcedAlgo_;
    if (algo == AllreduceAlgo::OneShot && bytes > shape.slotBytes)
      return makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                            "STRATA_ALGO=oneshot cannot carry %llu bytes: it needs the buffer to "
                            "fit one slot (STRATA_SLOT_BYTES=%zu)",
                            (unsigned long long)bytes, shape.slotBytes);
  } else {
    int k = bytes <= 1 ? 0 : 64 - __builtin_clzll(bytes - 1);
    algo = byLog2_[std::min(k, kBuckets - 1)];
    // A bucket's upper size decided; a one-shot pick must still fit.
    if (algo == AllreduceAlgo::OneShot && (bytes > shape.slotBytes || bytes > oneshotBytes_))
      algo = AllreduceAlgo::RecursiveDoubling;
  }
  *choice = {algo, algo == AllreduceAlgo::OneShot ? 1 : shape.channelsFor(bytes)};
  return Status::ok();
}

bool Tuning::useDirect(uint64_t bytes) const {
  if (forced_ && (forcedAlgo_ == AllreduceAlgo::OneShot || forcedAlgo_ == AllreduceAlgo::Ring))
    return forcedAlgo_ == AllreduceAlgo::OneShot;
  return bytes <= oneshotBytes_;
}

std::string Tuning::describe() const {
  if (forced_) return std::string(algoName(forcedAlgo_)) + " (STRATA_ALGO)";
  auto size = [](int k) {
    char buf[32];
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    std::snprintf(buf, sizeof(buf), "%llu%s", 1ull << (k % 10), units[k / 10]);
    return std::string(buf);
  };
  std::string out;
  int start = 0;
  for (int k = 1; k <= kBuckets; ++k) {
    if (k < kBuckets && byLog2_[k] == byLog2_[start]) continue;
    if (!out.empty()) out += ", ";
    out += size(start) + (k == kBuckets ? "+" : "-" + size(k - 1)) + " " + algoName(byLog2_[start]);
    start = k;
  }
  return out;
}

}  // namespace strata
