// A channel: the connectors of one slice of every collective, and the queue
// of operations (plans) waiting to run on them, in issue order.
//
// Whoever wants progress calls drive(): the caller of a blocking collective,
// a thread waiting on a request, or a progress thread. A try-lock makes sure
// one of them at a time runs the channel; the others move on to other
// channels or wait. The queue is single-producer (the thread issuing calls on
// the communicator) and single-consumer (the current driver).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "executor.h"
#include "request.h"
#include "stream_lane.h"

namespace strata::timeline {
class Timeline;
}

namespace strata {

// What a channel needs from its communicator when something goes wrong.
class FailureSink {
 public:
  virtual ~FailureSink() = default;
  virtual bool failed() const = 0;
  virtual Status failure() const = 0;
  // Records the first failure and aborts every connector of the communicator.
  virtual void fail(const Status& why) = 0;
  virtual double timeoutSeconds() const = 0;
};

// What a thread that found nothing to do may sleep on: the sockets of the
// channels it drives, unless one of them waits on shared memory, which no
// descriptor announces (then it must keep polling).
struct SleepSet {
  std::vector<pollfd> fds;
  bool memoryWait = false;

  bool canSleep() const { return !memoryWait && !fds.empty(); }
};

struct ChannelOp {
  Request* request;
  OpContext ctx;
  std::shared_ptr<const PlanSet> plans;  // keeps `plan` alive while the op is queued
  const ChannelPlan* plan;
  size_t cursor;
  size_t posted;    // receives ahead of the cursor told to landing connectors (PlanExecutor::advance)
  bool forThreads;  // progress threads may drive it (else only its caller)
  // A single send or receive: (peer << 1 | is_send) + 1, else 0. Such an op
  // may run ahead of blocked ones queued before it that use other connectors,
  // so that an irecv does not wait for an isend queued after it.
  uint64_t p2pKey;
  bool finished;  // ran ahead and completed; its request was told
  // An operation on device memory (ctx.stream set): the channel's stream
  // waits for `deviceStart` >= 1 (the caller's stream reached the call)
  // before its first copy, and stores `deviceDone` = 1 after its last.
  gpu::Flag* deviceStart;
  gpu::Flag* deviceDone;
  bool deviceStarted;
  double started;      // its first step here (STRATA_TIMELINE only)
  double stepStarted;  // when its current step became current (STRATA_TIMELINE only)
};

class Channel {
 public:
  // Operations a channel holds before the caller must wait for one to end.
  // Stream-ordered calls stay queued until their GPU stream reaches them, so
  // a training loop may run this far ahead of its GPU.
  static constexpr uint64_t kDepth = 128;

  ChannelLinks links;
  // STRATA_TIMELINE's trace (null without), and this channel's index in it.
  timeline::Timeline* timeline = nullptr;
  int index = 0;
  // Connectors whose slots are GPU memory (transports/cuda), for operations
  // on device memory, and a lane on their stream; empty and null where the
  // communicator has none. Set before the first device operation is queued.
  ChannelLinks deviceLinks;
  void* deviceStream = nullptr;
  std::unique_ptr<gpu::StreamLane> deviceLane;
  int device = -1;  // the CUDA device deviceStream belongs to
  // nowSeconds() when the thread driving this channel entered its
  // GPU-to-GPU step (CUDA calls), 0 outside it: what StuckWatch reads.
  std::atomic<double> deviceCallSince{0};

  // A free queue entry to fill, or nullptr when kDepth operations are queued.
  ChannelOp* reserve();
  // Publishes the entry returned by reserve().
  void commit();

  bool hasWork() const {
    return head_.load(std::memory_order_acquire) != tail_.load(std::memory_order_acquire);
  }
  bool hasThreadWork() const { return threadWork_.load(std::memory_order_acquire) > 0; }

  // Runs ready steps of queued operations. Returns true if anything moved.
  // With `sleep`, also says (under the channel's lock) what a thread may
  // sleep on until the channel can move again.
  bool drive(FailureSink& comm, SleepSet* sleep = nullptr);

  // Runs an operation to its end on the calling thread, without queueing it,
  // when the channel is idle (nothing queued, nobody driving it) and needs no
  // progress() calls: a small blocking call then pays for no queue entry and
  // no request bookkeeping. Deadlines and failures are handled as in drive().
  // False, and nothing done, otherwise; else *status is the outcome.
  bool runNow(const ChannelPlan& plan, const OpContext& ctx, FailureSink& comm, int64_t spins,
              Status* status);

  // Connectors to `peer` made while the channel may be running (pairs
  // connected at the first call that needs them): taken into `links` by
  // whoever drives the channel next, before it runs any step of an
  // operation queued after this call. Whoever aborts them on failure does so
  // from where they were made: `links` is read without a lock.
  void addLinks(int peer, SendConnector* send, RecvConnector* recv);

 private:
  void failAll(const Status& why);
  void retireHead();
  // STRATA_TIMELINE: the steps [from, to) of `plan` have just ended, the
  // first of them having begun at *stepStarted (then moved to now).
  void noteSteps(const ChannelPlan& plan, const OpContext& ctx, size_t from, size_t to, double* stepStarted);
  bool runAhead(FailureSink& comm);
  void noteBlocked(FailureSink& comm, const ChannelPlan& plan, size_t cursor, const OpContext& ctx);
  const ChannelLinks& linksOf(const OpContext& ctx) const { return ctx.stream ? deviceLinks : links; }
  // For a timeout's message, on a communicator with device links: how a
  // stream-ordered call whose ranks took different paths looks.
  const char* pathHint(const OpContext& ctx) const;
  // Runs a device operation's ready steps with the channel's device
  // current: before the first, its stream waits for the caller's; after the
  // last, it signals the operation's `done`.
  Advance advanceOnDevice(ChannelOp& op, Status* error);
  // Something moved: the deadline counts from the next block on.
  void noteProgress() {
    blockedPolls_ = 0;
    blockedSince_ = 0;
  }

  // Its driver (busy_ held) takes in what addLinks() left.
  void adoptLinks() {
    if (added_.load(std::memory_order_acquire)) adoptAdded();
  }
  void adoptAdded();

  std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
  struct Added {
    int peer;
    SendConnector* send;
    RecvConnector* recv;
  };
  std::mutex addedMutex_;
  std::vector<Added> addedLinks_;
  std::atomic<bool> added_{false};
  ChannelOp ops_[kDepth];
  std::atomic<uint64_t> head_{0};
  std::atomic<uint64_t> tail_{0};
  std::atomic<int> threadWork_{0};
  PlanExecutor executor_;
  // Deadline bookkeeping of the current driver, reset on every progress.
  uint32_t blockedPolls_ = 0;
  double blockedSince_ = 0;
  double lastHealthCheck_ = 0;
};

}  // namespace strata
