#include "exchange.h"

#include <algorithm>

#include "cost_model.h"

namespace strata {
namespace {

struct Stream {
  int peer;
  bool send;
  std::vector<const Transfer*> transfers;
  size_t transfer = 0;  // cursor: current transfer
  uint64_t done = 0;    // and elements of its channel share already emitted
};

// Position of `peer` in the visit order rank+1, rank-1, rank+2, rank-2, ...
uint64_t visitKey(int peer, int rank, int n) {
  int forward = (peer - rank + n) % n, backward = n - forward;
  return forward <= backward ? 2 * uint64_t(forward) : 2 * uint64_t(backward) + 1;
}

}  // namespace

void buildExchange(const PlanShape& shape, const ExchangeSpec& spec, int nchannels,
                   std::vector<ChannelPlan>& plans) {
  // Channel shares in whole slots: a transfer of one slot or less stays on
  // channel 0, so its split depends on nothing but its own count.
  const uint64_t slotElems = shape.slotElems();
  const uint64_t align = slotElems;
  // Streams in visit order, a peer's sends before its receives, each
  // stream's transfers in the order given: one sort, however many ranks.
  std::vector<std::pair<uint64_t, const Transfer*>> keyed;
  for (bool send : {true, false})
    for (const Transfer& t : send ? spec.sends : spec.recvs)
      if (t.count > 0) keyed.push_back({visitKey(t.peer, shape.rank, shape.nranks) << 1 | (send ? 0 : 1), &t});
  std::stable_sort(keyed.begin(), keyed.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Stream> streams;
  for (const auto& [key, t] : keyed) {
    const bool send = (key & 1) == 0;
    if (streams.empty() || streams.back().peer != t->peer || streams.back().send != send)
      streams.push_back(Stream{t->peer, send, {}});
    streams.back().transfers.push_back(t);
  }

  // A copy that reads exactly what a send reads (allgather's own block)
  // rides along with that send's pieces: the input is read once for both.
  const Transfer* riding = nullptr;
  const Transfer* carrier = nullptr;
  if (spec.copies.size() == 1)
    for (const Transfer& t : spec.sends)
      if (!carrier && t.count > 0 && t.inOffset == spec.copies[0].inOffset &&
          t.count == spec.copies[0].count && t.msg == spec.copies[0].msg)
        riding = &spec.copies[0], carrier = &t;

  for (int ch = 0; ch < nchannels; ++ch) {
    auto& steps = plans[ch].steps;
    steps.clear();
    for (const Transfer& t : spec.copies) {
      auto [b, e] = channelRange(t.count, nchannels, ch, align);
      if (e > b && &t != riding)
        steps.push_back({Prim::Copy, t.msg, -1, -1, t.inOffset + b, t.outOffset + b, e - b});
    }
    // Appends the stream's next piece on this channel; false when it has none.
    auto emitPiece = [&](Stream& s) {
      for (; s.transfer < s.transfers.size(); ++s.transfer, s.done = 0) {
        const Transfer& t = *s.transfers[s.transfer];
        auto [b, e] = channelRange(t.count, nchannels, ch, align);
        if (b + s.done >= e) continue;
        uint64_t off = b + s.done, len = std::min(slotElems, e - off);
        s.done += len;
        if (&t == carrier)
          steps.push_back({Prim::CopySend, t.msg, -1, s.peer, t.inOffset + off, riding->outOffset + off, len});
        else if (s.send)
          steps.push_back({Prim::Send, t.msg, -1, s.peer, t.inOffset + off, 0, len});
        else steps.push_back({Prim::Recv, t.msg, s.peer, -1, 0, t.outOffset + off, len,
                              static_cast<uint8_t>(spec.landsEarly ? kLandsEarly : 0)});
        return true;
      }
      return false;
    };
    for (Stream& s : streams) s.transfer = 0, s.done = 0;
    for (bool more = true; more;) {
      more = false;
      for (bool sends : {true, false})
        for (Stream& s : streams)
          if (s.send == sends) more |= emitPiece(s);
    }
  }
}

void allgatherSpec(const PlanShape& shape, uint64_t count, ExchangeSpec* spec) {
  spec->clear();
  for (int p = 0; p < shape.nranks; ++p) {
    if (p == shape.rank) {
      spec->copies.push_back({p, 0, 0, p * count, count});
      continue;
    }
    spec->sends.push_back({p, 0, 0, 0, count});
    spec->recvs.push_back({p, 0, 0, p * count, count});
  }
  spec->landsEarly = true;
}

double pairwiseAllgatherUs(const CostView& v, double blockBytes) {
  // As oneshot.cc charges its sends: they leave one after another from one
  // thread, a network one costing a system call and a wake-up, and the
  // slowest peer's latency ends the exchange.
  double worstLat = 0, sendUs = 0;
  for (int p = 1; p < v.shape.nranks; ++p) {
    const LinkCost& l = v.link(0, p);
    worstLat = std::max(worstLat, l.latencyUs);
    sendUs += (v.cross(0, p) ? l.latencyUs : 0) + blockBytes / (l.gbps * 1e3);
  }
  return worstLat + sendUs;
}

void allgathervSpec(const PlanShape& shape, const size_t* counts, const size_t* displs,
                    ExchangeSpec* spec) {
  spec->clear();
  const size_t mine = counts[shape.rank];
  for (int p = 0; p < shape.nranks; ++p) {
    if (p == shape.rank) {
      spec->copies.push_back({p, 0, 0, displs[p], mine});
      continue;
    }
    spec->sends.push_back({p, 0, 0, 0, mine});
    spec->recvs.push_back({p, 0, 0, displs[p], counts[p]});
  }
  spec->landsEarly = true;
}

void alltoallSpec(const PlanShape& shape, uint64_t count, ExchangeSpec* spec) {
  spec->clear();
  for (int p = 0; p < shape.nranks; ++p) {
    if (p == shape.rank) {
      spec->copies.push_back({p, 0, p * count, p * count, count});
      continue;
    }
    spec->sends.push_back({p, 0, p * count, 0, count});
    spec->recvs.push_back({p, 0, 0, p * count, count});
  }
}

void alltoallvSpec(const PlanShape& shape, const size_t* sendCounts, const size_t* sendDispls,
                   const size_t* recvCounts, const size_t* recvDispls, ExchangeSpec* spec) {
  spec->clear();
  for (int p = 0; p < shape.nranks; ++p) {
    if (p == shape.rank) {
      spec->copies.push_back({p, 0, sendDispls[p], recvDispls[p], sendCounts[p]});
      continue;
    }
    spec->sends.push_back({p, 0, sendDispls[p], 0, sendCounts[p]});
    spec->recvs.push_back({p, 0, 0, recvDispls[p], recvCounts[p]});
  }
}

}  // namespace strata
