#include "player.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <unordered_map>

namespace strata::sim {
namespace {

bool folds(Prim p) { return p == Prim::RecvReduceSend || p == Prim::RecvReduceCopySend || p == Prim::RecvReduceCopy; }

// One channel of one played rank.
struct Cursor {
  int rank;
  int ch;
  size_t next = 0;     // index of the step to run
  double doneUs = 0;   // when the previous step finished
  int scanned = 0;     // a ReduceAll's peers found ready so far
  double readyUs = 0;  // the latest arrival among them
  bool queued = false;
};

// A FIFO of nslots slots: the k-th send fills slot k % nslots, the k-th
// receive empties it. times_ holds, per slot, when its chunk arrives and
// when the receive that emptied it finished.
struct Connector {
  uint32_t sent = 0, received = 0;
  int sender = -1, receiver = -1;  // a cursor waiting on this connector
  uint32_t times;                  // first of 2 x nslots entries in Play::times_
};

class Play {
 public:
  Play(const Topology& topo, const NetModel& model, int nslots, size_t elemSize, const std::vector<PlanSet>& plans,
       Symmetry sym)
      : net_(topo, model), n_(topo.nranks()), nslots_(nslots), elemSize_(elemSize), plans_(plans), sym_(sym) {
    for (int r = 0; r < static_cast<int>(plans.size()); ++r)
      for (int ch = 0; ch < static_cast<int>(plans[r].size()); ++ch)
        if (!plans[r][ch].steps.empty()) cursors_.push_back({r, ch});
  }

  PlayResult run() {
    for (int c = 0; c < static_cast<int>(cursors_.size()); ++c) advance(c);
    PlayResult out;
    while (!heap_.empty()) {
      auto [start, c] = heap_.top();
      heap_.pop();
      execute(c, start);
      ++out.steps;
    }
    for (const Cursor& c : cursors_) {
      out.timeUs = std::max(out.timeUs, c.doneUs);
      if (c.next < plans_[c.rank][c.ch].steps.size()) out.stuck = true;
    }
    return out;
  }

 private:
  // The connector from rank s to rank q on channel ch, under the key of the
  // copy whose sender is s's representative.
  Connector& conn(int s, int q, int ch) {
    const uint64_t key = (uint64_t(ch) << 56) | (uint64_t(sym_.rep(s)) << 28) | uint64_t(sym_.carry(s, q, n_));
    auto [it, added] = index_.try_emplace(key, static_cast<uint32_t>(conns_.size()));
    if (added) {
      conns_.push_back({});
      conns_.back().times = static_cast<uint32_t>(times_.size());
      times_.resize(times_.size() + 2 * nslots_, 0);
    }
    return conns_[it->second];
  }
  double& arrival(Connector& k, uint32_t i) { return times_[k.times + i % nslots_]; }
  double& freed(Connector& k, uint32_t i) { return times_[k.times + nslots_ + i % nslots_]; }

  // Queues cursor c's next step once everything it waits for is known;
  // otherwise registers c on the connector it waits for.
  void advance(int c) {
    Cursor& cur = cursors_[c];
    const auto& steps = plans_[cur.rank][cur.ch].steps;
    if (cur.next >= steps.size() || cur.queued) return;
    const Step& s = steps[cur.next];
    double ready = cur.doneUs;
    if (s.prim == Prim::ReduceAll) {
      for (; cur.scanned < n_ - 1; ++cur.scanned) {
        const int peer = (cur.rank + 1 + cur.scanned) % n_;
        Connector& k = conn(peer, cur.rank, cur.ch);
        if (k.sent <= k.received) {
          k.receiver = c;
          return;
        }
        cur.readyUs = std::max(cur.readyUs, arrival(k, k.received));
      }
      ready = std::max(ready, cur.readyUs);
    }
    if (s.recvPeer >= 0) {
      Connector& k = conn(s.recvPeer, cur.rank, cur.ch);
      if (k.sent <= k.received) {
        k.receiver = c;
        return;
      }
      ready = std::max(ready, arrival(k, k.received));
    }
    if (s.sendPeer >= 0) {
      Connector& k = conn(cur.rank, s.sendPeer, cur.ch);
      if (k.sent >= uint32_t(nslots_)) {
        const uint32_t reuse = k.sent - nslots_;
        if (k.received <= reuse) {
          k.sender = c;
          return;
        }
        ready = std::max(ready, freed(k, reuse));
      }
    }
    cur.queued = true;
    heap_.push({ready, c});
  }

  void wake(int& waiter) {
    const int c = waiter;
    waiter = -1;
    if (c >= 0) advance(c);
  }

  void consume(Connector& k, double doneUs) {
    freed(k, k.received) = doneUs;
    ++k.received;
    wake(k.sender);
  }

  void execute(int c, double start) {
    Cursor& cur = cursors_[c];
    const Step& s = plans_[cur.rank][cur.ch].steps[cur.next];
    const uint64_t bytes = s.count * elemSize_;
    double t = start;
    if (folds(s.prim)) t += net_.foldUs(s.recvPeer, cur.rank, bytes, s.sendPeer >= 0);
    if (s.prim == Prim::ReduceAll) t += net_.foldUs((cur.rank + 1) % n_, cur.rank, bytes * (n_ - 1), false);
    const bool copies = s.prim == Prim::Recv || s.prim == Prim::RecvCopySend;
    if (copies) t += net_.copyOutUs(s.recvPeer, cur.rank, bytes);
    // A step that writes both its output and a slot writes the slot first
    // and copies the output from it (algorithms/core/executor.cc).
    if (s.prim == Prim::CopySend || s.prim == Prim::RecvReduceCopySend) t += net_.outputUs(bytes);
    // The slot a fold wrote goes as it is; a received chunk passed on is
    // copied from the slot it came in to the next one.
    const Network::Fill fill = s.recvPeer < 0    ? Network::Fill::FromBuffer
                               : folds(s.prim) ? Network::Fill::Written
                                               : Network::Fill::FromSlot;
    double done = t;
    if (s.sendPeer >= 0) {
      const auto timing =
          net_.transfer(cur.rank, s.sendPeer, sym_.rep(cur.rank), sym_.rep(s.sendPeer), bytes, t, fill);
      done = timing.sentUs;
      Connector& k = conn(cur.rank, s.sendPeer, cur.ch);
      arrival(k, k.sent) = timing.arrivesUs;
      ++k.sent;
      wake(k.receiver);
    }
    if (s.recvPeer >= 0) consume(conn(s.recvPeer, cur.rank, cur.ch), done);
    if (s.prim == Prim::ReduceAll)
      for (int i = 1; i < n_; ++i) consume(conn((cur.rank + i) % n_, cur.rank, cur.ch), done);
    cur.doneUs = done;
    cur.queued = false;
    cur.scanned = 0;
    cur.readyUs = 0;
    ++cur.next;
    advance(c);
  }

  Network net_;
  int n_;
  int nslots_;
  size_t elemSize_;
  const std::vector<PlanSet>& plans_;
  Symmetry sym_;
  std::vector<Cursor> cursors_;
  std::vector<Connector> conns_;
  std::vector<double> times_;
  std::unordered_map<uint64_t, uint32_t> index_;
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap_;
};

}  // namespace

PlayResult play(const Topology& topo, const NetModel& model, int nslots, size_t elemSize,
                const std::vector<PlanSet>& plans, Symmetry sym) {
  return Play(topo, model, nslots, elemSize, plans, sym).run();
}

}  // namespace strata::sim
