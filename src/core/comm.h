// The communicator: bootstrap, transports and their connectors, channels,
// progress threads, and the sticky failure state. Arguments reaching it have
// been validated by the C API layer (api.cc).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "channel.h"
#include "planner.h"
#include "progress_threads.h"
#include "slot_store_choice.h"
#include "transport.h"

namespace strata {

class Comm final : public FailureSink {
 public:
  static Status create(const boot::BootstrapConfig& config, std::unique_ptr<Comm>* out);
  ~Comm() override;

  int rank() const { return rank_; }
  // The transport connecting this rank to `peer` ("self" for this rank).
  const char* transportTo(int peer) const {
    return peer == rank_ ? "self" : transports_[peerTransport_[peer]]->name();
  }
  int size() const { return nranks_; }

  // Queues a collective on `request` (validated, with data to move). With
  // `callerWaits` the caller will wait() at once and drives it itself;
  // otherwise the progress threads are woken to carry it.
  Status submit(const CollCall& call, bool callerWaits, Request* request);
  // A lone blocking collective: runs it to its end at once on the calling
  // thread when its one channel is idle (Channel::runNow), else queues it as
  // submit() does for a caller that waits. Not for a group's calls, which
  // must all be issued before any is driven to its end.
  Status run(const CollCall& call, Request* request);

  // Queues a group of sends and receives as one operation: they progress
  // together, so any pattern whose every send has a matching receive
  // completes (see exchange.h).
  struct P2pOp {
    bool send;
    int peer;
    const void* sendbuf;  // send
    void* recvbuf;        // recv
    size_t count;
    strata_datatype_t datatype;
  };
  Status submitGroup(const std::vector<P2pOp>& ops, bool callerWaits, Request* request);

  // The algorithm and channels `call` would run with.
  Status choose(const CollCall& call, PlanChoice* choice) const;

  // Drives every channel until the request is done; returns its status. A
  // blocking call's request (run() above, waited by the thread that issued
  // it) also reports its time to the slot-store choice.
  Status wait(Request& request);
  // Drives every channel once; true if the request is done.
  bool test(Request& request);
  // Drives every channel with work once; true if anything moved.
  bool poll();
  // How long a waiting thread spins before yielding (STRATA_SPIN's choice).
  int64_t spins() const { return spins_; }

  // FailureSink
  bool failed() const override { return failed_.load(std::memory_order_acquire); }
  Status failure() const override;
  void fail(const Status& why) override;
  double timeoutSeconds() const override { return timeout_; }

  void setLastError(const std::string& message);
  std::string lastError() const;

  // API calls in flight on this communicator (abort waits for them to leave).
  std::atomic<int> activeCalls{0};

 private:
  Comm() = default;
  Status init(const boot::BootstrapConfig& config);
  Status connectTransports(const topo::HostInfo& self);
  // Plans `call` into plans_ (or keeps the ones there, see kept_) and fills
  // its context, with the next sequence number.
  Status prepare(const CollCall& call, PlanChoice* choice, OpContext* ctx);
  void driveUntilDone(Request& request);
  // The slot-store choice for an allreduce of this size, or null when its
  // slots are not candidates for streaming (below STRATA_NT_BYTES).
  SlotStoreChoice* slotStoresFor(const CollCall& call, const OpContext& ctx);
  static int sizeBucket(uint64_t bytes) { return 63 - __builtin_clzll(bytes | 1); }
  void traceStart(const PlanChoice& choice, const OpContext& ctx) const;
  // Puts the per-channel plans in plans_[0..nch) on the channels' queues.
  void enqueue(const OpContext& ctx, int nch, bool callerWaits, Request* request,
               uint64_t p2pKey = 0);

  int rank_ = 0;
  int nranks_ = 0;
  double timeout_ = 0;
  int64_t spins_ = 0;
  bool hasSockets_ = false;  // some connector needs progress() (a thread may sleep on it)
  PlanShape shape_{};
  Tuning tuning_;
  Layout layout_;
  size_t streamingBytes_ = 0;
  kernels::Isa isa_ = kernels::Isa::Portable;
  uint64_t seq_ = 0;                 // collectives issued
  std::vector<uint64_t> sendSeq_;    // messages sent to each peer
  std::vector<uint64_t> recvSeq_;    // messages received from each peer
  // A barrier's result byte: one per queue entry, so barriers in flight
  // never share one.
  std::array<uint8_t, Channel::kDepth> barrierBytes_{};
  Planner planner_;
  ExchangeSpec p2pSpec_;  // scratch for groups

  std::unique_ptr<boot::Bootstrap> bootstrap_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<int> peerTransport_;  // index into transports_, per rank
  Connections connections_;
  std::vector<Channel> channels_;
  std::vector<ChannelPlan> plans_;  // scratch for building, capacity reused
  // The allreduce whose plans were built last, and whether they are still in
  // plans_ (an operation run at once leaves them there; a queued one takes
  // them): the same call again reuses them and its context instead of
  // building them anew.
  struct PlannedAllreduce {
    uint64_t count;
    strata_datatype_t datatype;
    strata_op_t op;
    bool inPlace;
    PlanChoice choice;
    OpContext ctx;  // its context, but for buffers and sequence number
  };
  bool planKept_ = false;
  PlannedAllreduce kept_{};
  // How large allreduces write shared-memory slots, per power-of-two size
  // (time per byte differs between sizes that fit a cache and those that do not).
  std::array<SlotStoreChoice, 64> slotStores_;
  std::unique_ptr<ProgressThreads> threads_;

  std::atomic<bool> failed_{false};
  mutable std::mutex errorMutex_;
  Status failure_;
  std::string lastError_;
};

}  // namespace strata
