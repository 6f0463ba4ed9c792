#include "channel.h"

#include <algorithm>
#include <string>

#include "clock.h"
#include "log.h"
#include "cuda_seam.h"
#include "op_desc.h"
#include "timeline.h"
#include "wait_policy.h"

namespace strata {
namespace {

// Checking the clock costs ~20 ns; do it only every so many idle polls.
constexpr uint32_t kPollsPerClockCheck = 64;
constexpr double kHealthCheckInterval = 0.001;

}  // namespace

ChannelOp* Channel::reserve() {
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (tail - head_.load(std::memory_order_acquire) >= kDepth) return nullptr;
  return &ops_[tail % kDepth];
}

void Channel::commit() {
  uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (ops_[tail % kDepth].forThreads) threadWork_.fetch_add(1, std::memory_order_acq_rel);
  tail_.store(tail + 1, std::memory_order_release);
}

void Channel::addLinks(int peer, SendConnector* send, RecvConnector* recv) {
  std::lock_guard<std::mutex> lock(addedMutex_);
  addedLinks_.push_back({peer, send, recv});
  added_.store(true, std::memory_order_release);
}

void Channel::adoptAdded() {
  std::lock_guard<std::mutex> lock(addedMutex_);
  for (const Added& a : addedLinks_) links.add(a.peer, a.send, a.recv);
  addedLinks_.clear();
  added_.store(false, std::memory_order_relaxed);
}

Advance Channel::advanceOnDevice(ChannelOp& op, Status* error) {
  struct InCall {
    std::atomic<double>& since;
    explicit InCall(std::atomic<double>& s) : since(s) { since.store(nowSeconds(), std::memory_order_release); }
    ~InCall() { since.store(0, std::memory_order_release); }
  } inCall(deviceCallSince);
  gpu::DeviceScope onDevice(device);
  if (!op.deviceStarted) {
    op.deviceStarted = true;
    *error = deviceLane->wait(op.deviceStart, 1);
    if (!error->isOk()) return Advance::Failed;
  }
  Advance a = executor_.advance(*op.plan, &op.cursor, op.ctx, deviceLinks, error);
  if (a != Advance::Done) return a;
  *error = takeDeviceError();
  if (error->isOk()) *error = deviceLane->signal(op.deviceDone, 1);
  return error->isOk() ? Advance::Done : Advance::Failed;
}

void Channel::failAll(const Status& why) {
  // Bytes still on their way must not land in the failed operations' buffers.
  for (RecvConnector* recv : links.recv)
    if (recv) recv->dropPostings();
  uint64_t tail = tail_.load(std::memory_order_acquire);
  for (uint64_t h = head_.load(std::memory_order_relaxed); h != tail; ++h) {
    ChannelOp& op = ops_[h % kDepth];
    if (op.forThreads) threadWork_.fetch_sub(1, std::memory_order_acq_rel);
    if (!op.finished) op.request->channelFailed(why);
    op.plans.reset();
    head_.store(h + 1, std::memory_order_release);
  }
}

const char* Channel::pathHint(const OpContext& ctx) const {
  if (!deviceLane || (!ctx.stream && !ctx.gate)) return "";
  return ctx.stream ? " This stream-ordered call runs GPU to GPU here, its buffers being memory this rank's GPU "
                      "reaches: a rank that passed pageable host memory or another GPU's memory for it runs it "
                      "staged, and the two never meet (STRATA_GPU_DIRECT=0 stages every rank's)."
                    : " This stream-ordered call runs staged here (pageable host memory, another GPU's memory, or a "
                      "pre-multiplier): a rank whose buffers its GPU reaches runs it GPU to GPU, and the two never "
                      "meet (STRATA_GPU_DIRECT=0 stages every rank's).";
}

void Channel::noteBlocked(FailureSink& comm, const ChannelPlan& plan, size_t cursor, const OpContext& ctx) {
  if (++blockedPolls_ % kPollsPerClockCheck != 0) return;
  double now = nowSeconds();
  if (blockedSince_ == 0) {
    blockedSince_ = lastHealthCheck_ = now;
    return;
  }
  if (now - lastHealthCheck_ >= kHealthCheckInterval) {
    lastHealthCheck_ = now;
    Status health = executor_.blockedHealth(plan, cursor, linksOf(ctx));
    if (!health.isOk()) {
      OpDesc desc = OpDesc::unpack(ctx.tag.desc);
      const std::string wait = executor_.describeWait(plan, cursor, linksOf(ctx), ctx);
      comm.fail(STRATA_ERROR(health.code(), "%s (operation #%llu) failed: %s (in %s)", desc.describe().c_str(),
                             (unsigned long long)ctx.tag.seq, health.message().c_str(), wait.c_str()));
      return;
    }
  }
  // Waiting for a GPU stream to reach the operation (or copy its input) is
  // no peer's fault: a long kernel before a collective is normal. Peers
  // are still watched above.
  if (executor_.waitsOnInput(plan, cursor, ctx)) {
    blockedSince_ = now;
    return;
  }
  if (now - blockedSince_ > comm.timeoutSeconds()) {
    OpDesc desc = OpDesc::unpack(ctx.tag.desc);
    const std::string wait = executor_.describeWait(plan, cursor, linksOf(ctx), ctx);
    comm.fail(STRATA_ERROR(STRATA_ERR_TIMEOUT,
                           "%s (operation #%llu) made no progress for %.1f s (STRATA_TIMEOUT, or its config's) in %s; is "
                           "every rank calling the same collectives?%s",
                           desc.describe().c_str(), (unsigned long long)ctx.tag.seq, now - blockedSince_,
                           wait.c_str(), pathHint(ctx)));
  }
}

void Channel::retireHead() {
  uint64_t head = head_.load(std::memory_order_relaxed);
  ChannelOp& op = ops_[head % kDepth];
  if (op.forThreads) threadWork_.fetch_sub(1, std::memory_order_acq_rel);
  if (timeline) timeline->channelSpan(index, op.ctx.messages ? 0 : op.ctx.tag.seq, op.started, nowSeconds());
  // Read before the entry is handed back to the producer; an op that ran
  // ahead has told its request already (which may be gone by now).
  Request* request = op.finished ? nullptr : op.request;
  op.plans.reset();
  head_.store(head + 1, std::memory_order_release);
  if (request) request->channelDone();
}

void Channel::noteSteps(const ChannelPlan& plan, const OpContext& ctx, size_t from, size_t to, double* stepStarted) {
  const double now = nowSeconds();
  const uint64_t seq = ctx.messages ? 0 : ctx.tag.seq;
  for (size_t k = from; k < to && k < plan.steps.size(); ++k) {
    const Step& step = plan.steps[k];
    timeline->step(index, seq, primName(step.prim), step.recvPeer, step.sendPeer, step.count * ctx.elemSize,
                   *stepStarted, now);
    *stepStarted = now;
  }
}

bool Channel::runAhead(FailureSink& comm) {
  const uint64_t head = head_.load(std::memory_order_relaxed);
  const uint64_t tail = tail_.load(std::memory_order_acquire);
  adoptLinks();  // for the operations up to tail
  // Connectors claimed by unfinished single messages queued earlier: a
  // message may not overtake another one on the same connector.
  uint64_t claimed[kDepth];
  size_t nclaimed = 0;
  claimed[nclaimed++] = ops_[head % kDepth].p2pKey;
  bool moved = false;
  for (uint64_t h = head + 1; h != tail; ++h) {
    ChannelOp& op = ops_[h % kDepth];
    if (!op.p2pKey) break;  // nothing overtakes a collective or a group
    if (op.finished) continue;
    if (std::find(claimed, claimed + nclaimed, op.p2pKey) != claimed + nclaimed) continue;
    claimed[nclaimed++] = op.p2pKey;
    Status error;
    Advance a = executor_.advance(*op.plan, &op.cursor, op.ctx, links, &error, &op.posted);
    if (a == Advance::Failed) {
      comm.fail(error);
      return true;
    }
    if (a == Advance::Done && links.flushed()) {
      op.finished = true;
      op.request->channelDone();
    }
    moved |= a != Advance::Blocked;
  }
  return moved;
}

bool Channel::runNow(const ChannelPlan& plan, const OpContext& ctx, FailureSink& comm, int64_t spins,
                     Status* status) {
  if (hasWork() || busy_.test_and_set(std::memory_order_acquire)) return false;
  adoptLinks();
  if (!links.pollers.empty()) {
    busy_.clear(std::memory_order_release);
    return false;
  }
  WaitPolicy wait(spins);
  size_t cursor = 0;
  // Read once: the loop below spins, and a member would be reloaded each turn.
  timeline::Timeline* const traced = timeline;
  const double started = traced ? nowSeconds() : 0;
  double stepStarted = started;
  for (;;) {
    if (comm.failed()) {
      *status = comm.failure();
      break;
    }
    Status error;
    const size_t from = cursor;
    const Advance a = executor_.advance(plan, &cursor, ctx, links, &error);
    if (traced && cursor > from) noteSteps(plan, ctx, from, cursor, &stepStarted);
    if (a == Advance::Done) {
      *status = Status::ok();
      break;
    }
    if (a == Advance::Failed) {
      comm.fail(error);
      continue;
    }
    if (a == Advance::Blocked) noteBlocked(comm, plan, cursor, ctx);
    else noteProgress();
    wait.afterPoll(a == Advance::Progressed);
  }
  if (traced) traced->channelSpan(index, ctx.tag.seq, started, nowSeconds());
  // The deadline bookkeeping is the next operation's, from scratch.
  noteProgress();
  busy_.clear(std::memory_order_release);
  return true;
}

bool Channel::drive(FailureSink& comm, SleepSet* sleep) {
  if (busy_.test_and_set(std::memory_order_acquire)) return false;
  bool progressed = links.progress();
  while (hasWork()) {
    if (comm.failed()) {
      failAll(comm.failure());
      progressed = true;
      break;
    }
    ChannelOp& op = ops_[head_.load(std::memory_order_relaxed) % kDepth];
    if (op.finished) {
      retireHead();
      continue;
    }
    adoptLinks();  // hasWork() saw the operation: what was added before it is there too
    Status error;
    if (timeline && op.started == 0) op.started = op.stepStarted = nowSeconds();
    const size_t from = op.cursor;
    const ChannelLinks& opLinks = linksOf(op.ctx);
    Advance a = op.ctx.stream ? advanceOnDevice(op, &error)
                              : executor_.advance(*op.plan, &op.cursor, op.ctx, links, &error, &op.posted);
    if (timeline && op.cursor > from) noteSteps(*op.plan, op.ctx, from, op.cursor, &op.stepStarted);
    // Every step ran, but bytes wait to leave: not done until they have.
    if (a == Advance::Done && !opLinks.flushed()) a = Advance::Blocked;
    if (a == Advance::Blocked) {
      if (sleep && executor_.waitsOnMemory(*op.plan, op.cursor, opLinks, op.ctx)) sleep->memoryWait = true;
      noteBlocked(comm, *op.plan, op.cursor, op.ctx);
      if (comm.failed()) continue;  // flush on the next turn
      if (op.p2pKey) progressed |= runAhead(comm);
      break;
    }
    progressed = true;
    noteProgress();
    if (a == Advance::Failed) {
      comm.fail(error);
      continue;
    }
    if (a == Advance::Progressed) break;
    // Done: retire it, then try the next queued operation at once.
    retireHead();
  }
  if (sleep) links.addPollFds(sleep->fds);
  busy_.clear(std::memory_order_release);
  return progressed;
}

}  // namespace strata
