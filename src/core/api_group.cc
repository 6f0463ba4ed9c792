// C API: groups. Calls made between strata_group_start and strata_group_end on
// one thread are queued here and issued together by the outermost end.
#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>

#include "api_state.h"
#include "params.h"
#include "wait_policy.h"

namespace strata::api {
namespace {

struct Deferred {
  strata_comm* comm;
  bool p2p;
  CollCall call;
  Comm::P2pOp op;
  std::vector<size_t> arrays;  // v-variants: the four count/displacement arrays, copied
};

thread_local int tDepth = 0;
thread_local std::vector<Deferred> tQueue;

// Fusion buffers, kept from group to group: fresh memory would cost a page
// fault per 4 KiB on every group, more than the fused allreduce itself.
class FusionBuffers {
 public:
  // The index-th buffer of the current group, with room for `bytes`.
  char* get(size_t index, size_t bytes) {
    if (index >= buffers_.size()) buffers_.resize(index + 1);
    Buffer& b = buffers_[index];
    if (b.bytes < bytes) {
      b.data.reset(new char[bytes]);  // not zero-filled: the inputs are copied in
      b.bytes = bytes;
    }
    return b.data.get();
  }

 private:
  struct Buffer {
    std::unique_ptr<char[]> data;
    size_t bytes = 0;
  };
  std::vector<Buffer> buffers_;
};
thread_local FusionBuffers tFusionBuffers;

// Rebinds a deferred v-variant's array pointers to its own copies.
void bindArrays(Deferred& d, int n) {
  const size_t* base = d.arrays.data();
  d.call.sendCounts = d.call.sendCounts ? base : nullptr;
  d.call.sendDispls = d.call.sendDispls ? base + n : nullptr;
  d.call.recvCounts = d.call.recvCounts ? base + 2 * n : nullptr;
  d.call.recvDispls = d.call.recvDispls ? base + 3 * n : nullptr;
}

// Small allreduces of one group, packed into one buffer (tensor fusion):
// one pass over the network instead of one per call. Every rank sees the same
// calls in the same order, so every rank packs them alike.
struct Fusion {
  std::vector<const Deferred*> calls;
  uint64_t bytes = 0;
  char* buffer = nullptr;  // inputs in call order, then the result

  bool accepts(const Deferred& d, uint64_t bytes, uint64_t callLimit, uint64_t limit) const {
    return d.call.coll == Coll::Allreduce && bytes <= callLimit &&
           (calls.empty() || (d.call.datatype == calls[0]->call.datatype &&
                              d.call.op == calls[0]->call.op && this->bytes + bytes <= limit));
  }
  // The inputs into `into`, which becomes the buffer.
  void pack(char* into) {
    buffer = into;
    walk([&](const CollCall& c, uint64_t off, uint64_t n) { std::memcpy(buffer + off, c.sendbuf, n); });
  }
  // The results back into each call's output.
  void scatter() const {
    walk([&](const CollCall& c, uint64_t off, uint64_t n) { std::memcpy(c.recvbuf, buffer + off, n); });
  }

 private:
  // fn(call, offset in the buffer, bytes) for each packed call, in order.
  template <typename Fn>
  void walk(Fn fn) const {
    uint64_t off = 0;
    for (const Deferred* d : calls) {
      const uint64_t n = d->call.count * strata_datatype_size(d->call.datatype);
      fn(d->call, off, n);
      off += n;
    }
  }
};

// Issues everything queued: per communicator (in order of first use) its
// collectives in call order (runs of small allreduces fused), then its sends
// and receives as one exchange; then drives them all until done. Returns the
// first failure.
Status issueQueue(std::vector<Deferred>& queue, strata_comm** failedComm) {
  std::vector<strata_comm*> comms;
  for (const Deferred& d : queue)
    if (std::find(comms.begin(), comms.end(), d.comm) == comms.end()) comms.push_back(d.comm);

  std::vector<std::unique_ptr<Request>> requests;
  std::vector<strata_comm*> owners;
  Status first;
  auto note = [&](const Status& s, strata_comm* comm) {
    if (!s.isOk() && first.isOk()) {
      first = s;
      *failedComm = comm;
    }
  };
  const uint64_t fusionLimit = static_cast<uint64_t>(std::max<int64_t>(0, params::fusionBytes()));
  // A call joins a fusion only while its own latency outweighs copying it in
  // and out: up to half the one-shot size (measured: 1.7x faster per call at
  // 4 KiB, even at 8 KiB, 1.3x slower at 16 KiB, 2 ranks).
  const uint64_t callLimit =
      std::min<uint64_t>(fusionLimit, static_cast<uint64_t>(std::max<int64_t>(0, params::oneshotBytes())) / 2);
  std::vector<std::unique_ptr<Fusion>> fusions;  // those submitted, to scatter
  std::vector<Fusion*> fusionOf;                 // per request, or null
  // Starts one request with `start`; a request that fails to start is dropped.
  auto track = [&](strata_comm* comm, Fusion* fusion, const std::function<Status(Request*)>& start) {
    requests.push_back(std::make_unique<Request>());
    owners.push_back(comm);
    fusionOf.push_back(fusion);
    Status s = start(requests.back().get());
    if (!s.isOk()) {
      requests.pop_back();
      owners.pop_back();
      fusionOf.pop_back();
      note(s, comm);
    }
  };
  auto submit = [&](strata_comm* comm, const CollCall& call, Fusion* fusion) {
    track(comm, fusion, [&](Request* r) { return comm->impl->submit(call, true, r); });
  };
  for (strata_comm* comm : comms) {
    CallGuard guard(comm);
    std::vector<Comm::P2pOp> p2p;
    auto pending = std::make_unique<Fusion>();
    auto flush = [&] {
      if (pending->calls.size() == 1) submit(comm, pending->calls[0]->call, nullptr);
      if (pending->calls.size() > 1) {
        pending->pack(tFusionBuffers.get(fusions.size(), pending->bytes));
        CollCall call = pending->calls[0]->call;
        call.sendbuf = call.recvbuf = pending->buffer;
        call.count = pending->bytes / strata_datatype_size(call.datatype);
        fusions.push_back(std::move(pending));
        submit(comm, call, fusions.back().get());
      }
      pending = std::make_unique<Fusion>();
    };
    for (Deferred& d : queue) {
      if (d.comm != comm) continue;
      if (d.p2p) {
        p2p.push_back(d.op);
        continue;
      }
      if (!d.arrays.empty()) bindArrays(d, comm->impl->size());
      const uint64_t bytes = d.call.count * strata_datatype_size(d.call.datatype);
      if (!pending->accepts(d, bytes, callLimit, fusionLimit)) flush();
      if (pending->accepts(d, bytes, callLimit, fusionLimit)) {
        pending->calls.push_back(&d);
        pending->bytes += bytes;
      } else {
        submit(comm, d.call, nullptr);
      }
    }
    flush();
    if (!p2p.empty())
      track(comm, nullptr, [&](Request* r) { return comm->impl->submitGroup(p2p, true, r); });
  }
  // Drive every communicator involved until all requests are done, oldest
  // first: one may need another's progress (ranks meet in different orders).
  int64_t spins = 0;
  for (strata_comm* comm : comms) spins = std::max(spins, comm->impl->spins());
  WaitPolicy wait(spins);
  for (size_t i = 0; i < requests.size(); ++i) {
    while (!requests[i]->done()) {
      bool progressed = false;
      for (strata_comm* comm : comms) {
        CallGuard guard(comm);
        progressed |= comm->impl->poll();
      }
      wait.afterPoll(progressed);
    }
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    note(requests[i]->status(), owners[i]);
    if (fusionOf[i] && requests[i]->status().isOk()) fusionOf[i]->scatter();
  }
  return first;
}

}  // namespace

bool groupActive() { return tDepth > 0; }

void deferCollective(strata_comm* comm, const CollCall& call) {
  Deferred d{comm, false, call, {}, {}};
  if (call.sendCounts || call.recvCounts) {
    const int n = comm->impl->size();
    d.arrays.assign(4 * size_t(n), 0);
    const size_t* sources[] = {call.sendCounts, call.sendDispls, call.recvCounts, call.recvDispls};
    for (int a = 0; a < 4; ++a)
      if (sources[a]) std::copy(sources[a], sources[a] + n, d.arrays.begin() + a * n);
  }
  tQueue.push_back(std::move(d));
}

void deferP2p(strata_comm* comm, const Comm::P2pOp& op) {
  tQueue.push_back(Deferred{comm, true, {}, op, {}});
}

}  // namespace strata::api

using strata::api::finish;

extern "C" {

STRATA_API strata_result_t strata_group_start(void) {
  ++strata::api::tDepth;
  return STRATA_SUCCESS;
}

STRATA_API strata_result_t strata_group_end(void) {
  using namespace strata::api;
  if (tDepth == 0)
    return finish(strata::makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                                         "strata_group_end without a matching strata_group_start"));
  if (--tDepth > 0) return STRATA_SUCCESS;
  // Issued from where it was queued, then emptied: its capacity (like the
  // fusion buffers') is kept for the next group.
  strata_comm* failed = nullptr;
  strata::Status s = issueQueue(tQueue, &failed);
  tQueue.clear();
  return finish(s, failed);
}

}  // extern "C"
