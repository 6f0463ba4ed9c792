// The communicator: it owns the bootstrap, the transports and their
// connectors, the channels and the progress threads, and turns each call into
// queued plans on its channels. What it delegates: settings to CommConfig,
// algorithm choice and plans to the planner (kept in a PlanCache), groups of
// sends and receives to p2p_group.h, waiting to driveUntil (wait_loop.h).
// Arguments reaching it have been validated by the C API layer.
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "bootstrap.h"
#include "channel.h"
#include "comm_config.h"
#include "control_plane.h"
#include "lazy_links.h"
#include "memory_budget.h"
#include "op_log.h"
#include "log.h"
#include "p2p_group.h"
#include "plan_cache.h"
#include "planner.h"
#include "progress_threads.h"
#include "staging.h"
#include "stuck_watch.h"
#include "timeline.h"
#include "transport.h"
#include "tuner_file.h"

namespace strata {

class Comm final : public FailureSink {
 public:
  static Status create(const boot::BootstrapConfig& config, const CommOverrides& overrides,
                       std::unique_ptr<Comm>* out);
  ~Comm() override;

  // What its creator set (communicators split or duplicated from it inherit it).
  const CommOverrides& overrides() const { return overrides_; }

  int rank() const { return rank_; }
  int size() const { return nranks_; }
  bool reproducible() const { return config_.reproducible; }
  int channels() const { return shape_.nchannels; }
  size_t slotBytes() const { return shape_.slotBytes; }
  // The transport connecting this rank to `peer` ("self" for this rank).
  const char* transportTo(int peer) const {
    return peer == rank_ ? "self" : transports_[peerTransport_[peer]]->name();
  }

  // Queues a collective on `request` (validated, with data to move). With
  // `callerWaits` the caller will wait() at once and drives it itself;
  // otherwise the progress threads are woken to carry it.
  Status submit(const CollCall& call, bool callerWaits, Request* request);
  // A lone blocking collective: runs it to its end at once on the calling
  // thread when its one channel is idle (Channel::runNow), else queues it as
  // submit() does for a caller that waits. Not for a group's calls, which
  // must all be issued before any is driven to its end.
  Status run(const CollCall& call, Request* request);
  // Queues a group of sends and receives as one operation (p2p_group.h).
  // `gates`, when given, holds one input gate per op (stream-ordered groups).
  Status submitGroup(const std::vector<P2pOp>& ops, bool callerWaits, Request* request,
                     const std::vector<InputGate*>* gates = nullptr);

  // Stream-ordered forms (streams/staging.h): the buffers of `call` (or of
  // each op) as the caller gave them are described by `parts`, one per
  // buffer pair; their staging is enqueued on `lane` and the host
  // collective queued for the progress threads, gated on the stream.
  // Returns without waiting for either.
  Status submitOnStream(const CollCall& call, gpu::StreamLane& lane, const streams::PartSpec& part,
                        const streams::PreMul& premul);
  Status submitGroupOnStream(const std::vector<P2pOp>& ops, gpu::StreamLane& lane,
                             const std::vector<streams::PartSpec>& parts);
  // The memory it holds for its transfers (strata_comm_memory): what its
  // transports and connectors allocated, the staging of stream-ordered
  // calls, the scratch of cached plans. On the API's thread.
  MemoryHeld memoryHeld();

  // Whether a stream-ordered call on GPU memory may still have to connect
  // the GPUs (a collective step of its own, at the first such call).
  bool deviceConnectPending() const { return deviceWanted_ && !deviceTried_; }
  // Connects them now if `call` is the first such call; its outcome is what
  // submitOnStream then reports for it. A group of several of one thread's
  // communicators connects them side by side this way before issuing any
  // (connecting one by one would wait for ranks the thread has not reached).
  void prepareDevice(const CollCall& call, const streams::PartSpec& part, const streams::PreMul& premul);
  // Where pinned staging memory comes from: CUDA's pinned allocator unless
  // set (tests stage host memory) before the first stream-ordered call.
  void setPinnedAllocator(const streams::PinnedAllocator& allocator) { pinned_ = allocator; }

  // The algorithm and channels `call` would run with.
  Status choose(const CollCall& call, PlanChoice* choice) const;
  // What `call` would do and why, as one JSON object (explain.cc): the
  // choice of choose(), the rule that made it, every candidate's estimate,
  // and the transport to each peer.
  Status explain(const CollCall& call, std::string* json) const;
  // `call` with the tuner file's choice when it made none itself; *line
  // (when not null) gets the rule's line, 0 for none.
  CollCall tuned(const CollCall& call, int* line) const;
  // STRATA_DEBUG=INFO: the first call of each collective in each power-of-two
  // size class logs what it runs and why (explain.cc).
  void logFirstDecision(const CollCall& call);

  // Drives every channel until the request is done; returns its status.
  Status wait(Request& request);
  // Its caller saw `request` (done) complete, or fail: for the operation log
  // and the timeline (wait() and test() say it themselves).
  void noteDone(const Request& request) { noteDone(request.seq, request.p2pGroup, request.status()); }
  // Drives every channel once; true if the request is done.
  bool test(Request& request);
  // Calls fn(channel, *this) for every channel: how driveUntil reaches them.
  template <typename Fn>
  void forEachChannel(Fn&& fn) {
    for (Channel& ch : channels_) fn(ch, *this);
  }
  // How long a waiting thread spins before yielding (STRATA_SPIN's choice).
  int64_t spins() const { return spins_; }
  // Whether some connector needs progress() calls (a waiter may sleep on it).
  bool hasSockets() const { return hasSockets_.load(std::memory_order_relaxed); }
  // How many peers this rank holds connections to now.
  int connectedPeers() const;
  // Whether some machine of the job runs more of its ranks than it has cores.
  bool oversubscribed() const { return oversubscribed_; }

  // FailureSink
  bool failed() const override { return failed_.load(std::memory_order_acquire); }
  Status failure() const override;
  void fail(const Status& why) override;
  double timeoutSeconds() const override { return config_.timeoutSeconds; }

  // strata_comm_revoke: tells every other rank over the control plane, then
  // fails this rank's operations with STRATA_ERR_REVOKED, as each peer does
  // when the word reaches it.
  void revoke();
  // The control plane, for strata_comm_shrink's agreement.
  fault::ControlPlane& control() { return *control_; }
  // Where every rank stands (fault/stall_report.h), from each rank's
  // operation log, asked for over the control plane before `deadline`: the
  // summary alone, or with every rank's recent operations.
  std::string stallReport(bool full, double deadline) const;

  void setLastError(const std::string& message);
  std::string lastError() const;

  // API calls in flight on this communicator (abort waits for them to leave).
  std::atomic<int> activeCalls{0};

 private:
  Comm() = default;
  Status init(const boot::BootstrapConfig& bootConfig, const CommOverrides& overrides);
  Status connectTransports(const topo::HostInfo& self);
  // Whether transports_[t]'s pairs connect when first needed, not at init.
  bool connectsLater(size_t t) const { return config_.lazyConnect && transports_[t]->connectsPairs(); }
  // Connects one pair over `oob` (its two ranks at once), after init:
  // LazyLinks calls it, on the caller's thread or on one it starts for a
  // peer's request.
  Status connectPair(int peer, OutOfBand& oob);
  // `peer`'s connectors in `made` (connectPair's), kept, and handed to the
  // channels; aborted at once if the communicator failed.
  void adopt(Connections& made, int peer);
  // Makes sure every rank in `peers` (ascending) is connected, connecting
  // those that are not; their failure fails the communicator.
  Status link(const std::vector<int>& peers);
  // Moves the pairs whose transport lacks something on their host
  // (Transport::shortOf: /dev/shm too small for shm's segments) to the next
  // transport that reaches them, saying why; or fails, saying why, under
  // STRATA_SHM_FALLBACK=0 or a forced STRATA_TRANSPORT.
  // Also learns whether any rank has a STRATA_MEM_BUDGET (budgeted_).
  Status avoidShortTransports(const topo::HostInfo& self);
  // Then, where one has, sizes the slots so that every rank's transports fit
  // its own (memory_budget.h), the same on every rank: one more vote.
  Status fitMemoryBudget();
  // The most host memory this rank's transports would hold with `s`, once
  // connected to every peer each is chosen for.
  uint64_t mostHeld(const SlotSizing& s) const;
  // The transports this rank's peers are reached over, "shm,tcp".
  std::string transportNames() const;
  // STRATA_CHECK=1: every rank's fingerprint (check/fingerprint.h), compared
  // over the bootstrap before the transports connect, so that a difference
  // that breaks the connecting (settings that size segments) is named first.
  void compareFingerprints();
  // Channel ch's connectors in `made`, by peer, and those needing progress().
  ChannelLinks linksOf(const Connections& made, int ch) const;
  // Decides at init whether this communicator's GPU buffers may move GPU
  // to GPU (STRATA_GPU_DIRECT; every rank on one host with a GPU, every
  // pair direct by the topology's cost model): every rank decides alike,
  // from the gathered HostInfos and then one vote on its settings and view.
  Status decideDevice(const topo::HostInfo& self);
  // Connects the cuda transport, at the first call that would use it (a job
  // that never passes GPU buffers makes no CUDA context or GPU memory for
  // them). Its failure, agreed by every rank, leaves calls staged and says
  // why (or fails the call with STRATA_GPU_DIRECT=2).
  Status connectDevice();
  // Its CUDA device, fixed at creation (CommOverrides::device).
  int device() const { return overrides_.device; }
  // Whether a stream-ordered call runs over the cuda transport: its buffers
  // (those it has) in memory this rank's GPU reaches (its own device
  // memory, managed or pinned host memory), no pre-multiplier. Others are
  // staged: every rank must pass the same kind for a call, or the two halves
  // never meet (and the call times out).
  bool onDevice(const streams::PartSpec& part, const streams::PreMul& premul) const;
  Status submitOnDevice(const CollCall& call, gpu::StreamLane& lane, const streams::PartSpec& part);
  // The plans and context of `call` (from the cache, or built and kept
  // there), its context completed with this call's buffers and the next
  // sequence number.
  // Inline: a repeated call (a cache hit) pays no call for it.
  Status prepare(const CollCall& call, const PlannedCall** planned, OpContext* ctx) {
    STRATA_CHECK(lookup(call, planned));
    start(call, **planned, ctx);
    return Status::ok();
  }
  // The two halves of prepare(): finding the plans (which may fail), and
  // taking the next sequence number (which may not, so a call that fails
  // takes none and the ranks stay in step).
  Status lookup(const CollCall& given, const PlannedCall** planned) {
    CollCall withRule;
    const CollCall& call = tuner_.empty() ? given : (withRule = tuned(given, nullptr), withRule);
    *planned = PlanKey::cacheable(call) ? cache_.find(PlanKey::of(call)) : nullptr;
    if (!*planned) STRATA_CHECK(planMiss(call, planned));
    if (!(*planned)->linked) {
      STRATA_CHECK(link((*planned)->peers));
      (*planned)->linked = true;
    }
    return Status::ok();
  }
  void start(const CollCall& call, const PlannedCall& planned, OpContext* ctx) {
    *ctx = planned.ctx;
    ctx->input = static_cast<const char*>(call.sendbuf);
    ctx->output = static_cast<char*>(call.recvbuf);
    ctx->tag.seq = ++seq_;
    opLog_.issued(seq_, ctx->tag.desc);
    if (call.coll == Coll::Barrier) {
      static const uint8_t kZero = 0;
      ctx->input = reinterpret_cast<const char*>(&kZero);
      ctx->output = reinterpret_cast<char*>(&barrierBytes_[seq_ % barrierBytes_.size()]);
    }
    if (log::enabled(log::Level::Trace, log::COLL)) traceStart(planned.choice, *ctx);
    if (timeline_) timeline_->issued(seq_, ctx->tag.desc, planned.choice.algo, planned.choice.nchannels);
  }
  // `offThread`: a progress thread ending a stream-ordered operation.
  void noteDone(uint64_t seq, uint64_t p2pGroup, const Status& outcome, bool offThread = false) {
    if (outcome.isOk()) {
      if (offThread) opLog_.doneOffThread(seq);
      else opLog_.done(seq);
      opLog_.p2pDone(p2pGroup);
    }
    if (timeline_ && seq) timeline_->completed(seq, outcome.isOk());
  }
  // Builds `call`'s plans and context, kept in the cache when it keeps them.
  Status planMiss(const CollCall& call, const PlannedCall** planned);
  Status build(const CollCall& call, PlannedCall* planned);
  void traceStart(const PlanChoice& choice, const OpContext& ctx) const;
  // Puts the plans on their channels' queues.
  // `device`: an operation on device memory, run on the channels' streams
  // between its flags.
  void enqueue(const OpContext& ctx, const std::shared_ptr<const PlanSet>& plans, int nch, bool callerWaits,
               Request* request, uint64_t p2pKey = 0, const streams::StagedOp* device = nullptr);

  streams::Stager& stager();
  Status checkStreamsDriven() const;
  // Before the communicator goes: lets stream-ordered operations end (the
  // progress threads still run), fails the rest, then waits for their
  // streams to be done with pinned memory.
  void drainStreams();

  int rank_ = 0;
  int nranks_ = 0;
  CommOverrides overrides_;
  CommConfig config_;
  bool budgeted_ = false;  // some rank has a STRATA_MEM_BUDGET
  int64_t spins_ = 0;
  std::atomic<bool> hasSockets_{false};
  bool oversubscribed_ = false;
  PlanShape shape_{};
  Tuning tuning_;
  TunerRules tuner_;  // STRATA_TUNER_FILE's rules that can match here
  std::set<int> explained_;  // (collective, size class) pairs logFirstDecision logged
  Layout layout_;
  kernels::Isa isa_ = kernels::Isa::Portable;
  uint64_t seq_ = 0;  // collectives issued
  P2pSequences p2pSeqs_;
  // A barrier's result byte: one per queue entry, so barriers in flight
  // never share one.
  std::array<uint8_t, Channel::kDepth> barrierBytes_{};
  Planner planner_;
  PlanCache cache_;
  PlannedCall uncached_;  // the last call the cache does not keep (v-variants)
  ExchangeSpec p2pSpec_;  // scratch for groups

  std::unique_ptr<boot::Bootstrap> bootstrap_;
  fault::OpLog opLog_;  // before control_, which reads it
  std::unique_ptr<fault::ControlPlane> control_;
  std::vector<std::unique_ptr<Transport>> transports_;
  std::vector<int> peerTransport_;  // index into transports_, per rank
  // Connectors by channel and peer, made at init or later by connectPair
  // (under linksMutex_, which fail() takes to abort them from any thread).
  std::mutex linksMutex_;
  Connections connections_;
  // Pairs connected at the first call that needs them; null under
  // STRATA_CONNECT=eager. Made before control_, which serves its requests.
  std::unique_ptr<LazyLinks> lazy_;
  // GPU to GPU, where connectDevice() made it: the cuda transport and its
  // connectors (under deviceMutex_, which fail() takes to abort them from
  // any thread), and plans with their own slot size and tuning (rings and
  // chains: no host scratch).
  bool deviceWanted_ = false;  // decideDevice() said yes
  bool deviceTried_ = false;   // connectDevice() ran (once, on the API's thread or a group's helper)
  Status deviceConnected_;     // its outcome, until the call it was made for reports it
  std::mutex deviceMutex_;
  std::unique_ptr<Transport> deviceTransport_;
  Connections deviceConnections_;
  PlanShape deviceShape_{};
  Tuning deviceTuning_;
  // Fails the communicator when a thread stays inside a CUDA call past the
  // timeout (stuck_watch.h); made with the cuda transport's connectors.
  std::unique_ptr<StuckWatch> deviceWatch_;
  std::vector<Channel> channels_;
  std::unique_ptr<timeline::Timeline> timeline_;  // before threads_, which write to it
  std::unique_ptr<ProgressThreads> threads_;
  streams::PinnedAllocator pinned_{};
  std::unique_ptr<streams::Stager> stager_;  // made by the first stream-ordered call

  std::atomic<bool> failed_{false};
  mutable std::mutex errorMutex_;
  Status failure_;
  std::string lastError_;
};

}  // namespace strata
