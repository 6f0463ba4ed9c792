#include "group.h"

#include <algorithm>
#include <functional>
#include <thread>

#include "log.h"
#include "wait_loop.h"

namespace strata::api {

void Group::defer(strata_comm* comm, const CollCall& call, const StreamCall* stream, std::vector<char> scratch) {
  Deferred d{comm, false, call, {}, {}, stream ? *stream : StreamCall{}, std::move(scratch)};
  if (call.sendCounts || call.recvCounts) {
    const int n = comm->impl->size();
    d.arrays.assign(4 * size_t(n), 0);
    const size_t* sources[] = {call.sendCounts, call.sendDispls, call.recvCounts, call.recvDispls};
    for (int a = 0; a < 4; ++a)
      if (sources[a]) std::copy(sources[a], sources[a] + n, d.arrays.begin() + a * n);
  }
  queue_.push_back(std::move(d));
}

void Group::defer(strata_comm* comm, const P2pOp& op, const StreamCall* stream) {
  queue_.push_back(Deferred{comm, true, {}, op, {}, stream ? *stream : StreamCall{}, {}});
}

void Group::issueOn(strata_comm* comm, const FusionLimits& limits, std::vector<Started>* started,
                    std::vector<std::unique_ptr<Fusion>>* fusions) {
  Comm& impl = *comm->impl;
  auto start = [&](Fusion* fusion, const std::function<Status(Request*)>& submit) {
    auto request = std::make_unique<Request>();
    Status s = submit(request.get());
    // A request that failed to start has nothing to wait for: its status is the failure.
    if (!s.isOk()) request->finishedAlone(s);
    started->push_back({std::move(request), comm, s.isOk() ? fusion : nullptr});
  };
  auto submit = [&](const CollCall& call, Fusion* fusion) {
    start(fusion, [&](Request* r) { return impl.submit(call, true, r); });
  };
  auto pending = std::make_unique<Fusion>();
  auto flush = [&] {
    if (pending->size() == 1) submit(pending->first(), nullptr);
    if (pending->size() > 1) {
      const CollCall fused = pending->pack(buffers_.get(fusions->size(), pending->bytes()));
      fusions->push_back(std::move(pending));
      submit(fused, fusions->back().get());
    }
    pending = std::make_unique<Fusion>();
  };
  // A stream-ordered call that fails to start is reported like a request
  // that failed; one that started is not waited for.
  auto onStream = [&](const std::function<Status()>& submit) {
    Status s = submit();
    if (!s.isOk()) start(nullptr, [&](Request*) { return s; });
  };
  std::vector<P2pOp> p2p;
  std::vector<streams::PartSpec> p2pParts;
  void* p2pStream = nullptr;
  size_t hostOrdered = 0;
  for (Deferred& d : queue_) {
    if (d.comm != comm) continue;
    if (d.p2p) {
      p2p.push_back(d.op);
      p2pParts.push_back(d.stream.part);
      if (!d.stream.stream) ++hostOrdered;
      else if (!p2pStream) p2pStream = d.stream.stream;
      else if (p2pStream != d.stream.stream) p2pStream = reinterpret_cast<void*>(-1);
      continue;
    }
    if (d.stream.stream) {
      flush();  // in call order, and never fused
      onStream([&] { return submitOnStream(impl, d.call, d.stream); });
      continue;
    }
    if (!d.arrays.empty()) {  // point the call at its own copies
      const size_t* base = d.arrays.data();
      const int n = impl.size();
      d.call.sendCounts = d.call.sendCounts ? base : nullptr;
      d.call.sendDispls = d.call.sendDispls ? base + n : nullptr;
      d.call.recvCounts = d.call.recvCounts ? base + 2 * n : nullptr;
      d.call.recvDispls = d.call.recvDispls ? base + 3 * n : nullptr;
    }
    if (!pending->accepts(d.call, limits)) flush();
    if (pending->accepts(d.call, limits)) pending->add(d.call);
    else submit(d.call, nullptr);
  }
  flush();
  if (p2p.empty()) return;
  if (!p2pStream) {
    start(nullptr, [&](Request* r) { return impl.submitGroup(p2p, true, r); });
  } else if (hostOrdered > 0 || p2pStream == reinterpret_cast<void*>(-1)) {
    onStream([&] {
      return makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                            "a group's sends and receives on one communicator run as one exchange, so they "
                            "must all name the same stream (or none): this group mixes %s",
                            hostOrdered > 0 ? "stream-ordered and host-ordered ones" : "several streams");
    });
  } else {
    onStream([&] { return submitGroupOnStream(impl, p2pStream, p2p, p2pParts); });
  }
}

void Group::connectDevicesTogether(const std::vector<strata_comm*>& comms) {
  std::vector<strata_comm*> pending;
  for (strata_comm* comm : comms)
    if (comm->impl->deviceConnectPending()) pending.push_back(comm);
  if (pending.size() < 2) return;
  std::vector<std::thread> connecting;
  for (strata_comm* comm : pending)
    connecting.emplace_back([this, comm] {
      log::setThreadRank(comm->impl->rank());
      for (const Deferred& d : queue_)
        if (d.comm == comm && !d.p2p && d.stream.stream) comm->impl->prepareDevice(d.call, d.stream.part, d.stream.premul);
    });
  for (std::thread& t : connecting) t.join();
}

Status Group::issue(strata_comm** failedComm) {
  std::vector<strata_comm*> comms;
  for (const Deferred& d : queue_)
    if (std::find(comms.begin(), comms.end(), d.comm) == comms.end()) comms.push_back(d.comm);
  // Every communicator stays marked busy until its requests are done, so an
  // abort from another thread waits for this group to see it and leave.
  std::vector<std::unique_ptr<CallGuard>> guards;
  int64_t spins = 0;
  bool sockets = false;
  for (strata_comm* comm : comms) {
    guards.push_back(std::make_unique<CallGuard>(comm));
    spins = std::max(spins, comm->impl->spins());
    sockets |= comm->impl->hasSockets();
  }
  connectDevicesTogether(comms);
  std::vector<Started> started;
  std::vector<std::unique_ptr<Fusion>> fusions;  // those submitted, to unpack
  const FusionLimits limits = FusionLimits::fromParams();
  for (strata_comm* comm : comms) issueOn(comm, limits, &started, &fusions);
  std::vector<std::vector<char>> scratch;  // read by the calls until they are done
  for (Deferred& d : queue_)
    if (!d.scratch.empty()) scratch.push_back(std::move(d.scratch));
  queue_.clear();

  driveUntil(
      spins, sockets,
      [&, next = size_t(0)]() mutable {
        while (next < started.size() && started[next].request->done()) ++next;
        return next == started.size();
      },
      [&](auto&& fn) {
        for (strata_comm* comm : comms) comm->impl->forEachChannel(fn);
      });
  Status first;
  for (const Started& s : started) {
    s.comm->impl->noteDone(*s.request);
    const Status& outcome = s.request->status();
    if (!outcome.isOk() && first.isOk()) {
      first = outcome;
      *failedComm = s.comm;
    }
    if (s.fusion && outcome.isOk()) s.fusion->unpack();
  }
  return first;
}

}  // namespace strata::api
