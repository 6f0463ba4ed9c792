#include "executor.h"

#include <algorithm>
#include <cstring>

#include "op_desc.h"

namespace strata {
namespace {

// Applies the op's final transformation (avg divides the sum once, on the
// rank that completes the sum, so every rank gets the same bits).
void finish(void* data, size_t count, const OpContext& ctx) {
  if (ctx.op == STRATA_AVG && ctx.nranks > 1)
    ctx.memory->scaleDown(data, data, count, ctx.datatype, ctx.nranks, ctx.stream);
}

// Why a slot that does not belong to this step cannot be used: kept out of
// line, the matching case (every slot of a correct program) is three compares.
__attribute__((noinline, cold)) void mismatch(const SlotTag& got, size_t gotBytes, size_t wantBytes, int peer,
                                              const SlotTag& want, const OpContext& ctx, Status* error) {
  OpDesc mine = OpDesc::unpack(want.desc);
  OpDesc theirs = OpDesc::unpack(got.desc);
  if (got.desc != want.desc || got.seq != want.seq) {
    const bool p2p = mine.coll == Coll::SendRecv || theirs.coll == Coll::SendRecv;
    *error = STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "mismatched %s: rank %d sent %s as its %s #%llu while rank %d expected "
                          "%s as %s #%llu; %s",
                          p2p ? "messages" : "collectives", peer, theirs.describe().c_str(),
                          p2p ? "message" : "operation", (unsigned long long)got.seq, ctx.rank,
                          mine.describe().c_str(), p2p ? "message" : "operation",
                          (unsigned long long)want.seq,
                          p2p ? "sends and receives between two ranks must match in order, count "
                                "and datatype"
                              : "every rank must issue the same collectives with the same count, "
                                "datatype, op and root in the same order");
  } else {
    *error = STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                          "mismatched counts in %s: rank %d sent a %zu-byte chunk where rank %d "
                          "expected %zu bytes; the counts given on every rank must agree",
                          mine.describe().c_str(), peer, gotBytes, ctx.rank, wantBytes);
  }
}

bool checkSlot(const SlotTag& got, size_t gotBytes, size_t wantBytes, int peer, const SlotTag& want,
               const OpContext& ctx, Status* error) {
  if (__builtin_expect(got.seq == want.seq && got.desc == want.desc && gotBytes == wantBytes, 1)) return true;
  mismatch(got, gotBytes, wantBytes, peer, want, ctx, error);
  return false;
}

// out <- finish(slots[0] op slots[1] op ... op slots[nranks-1]), in rank
// order, a block at a time through a scratch buffer, so that in place (out
// is one of the slots) a block's inputs are all read before it is written.
// Kept out of line: its 4 KiB buffer would otherwise sit in the frame of
// every 2-rank call, which needs none.
__attribute__((noinline)) void foldThroughScratch(char* out, const void* const* slots, size_t count,
                                                  const OpContext& ctx) {
  alignas(64) char scratch[4096];
  const size_t blockElems = sizeof(scratch) / ctx.elemSize;
  for (size_t done = 0; done < count; done += blockElems) {
    const size_t n = std::min(blockElems, count - done);
    const size_t off = done * ctx.elemSize;
    auto at = [&](int r) { return static_cast<const char*>(slots[r]) + off; };
    ctx.reduce(scratch, at(0), at(1), n);
    for (int r = 2; r < ctx.nranks - 1; ++r) ctx.reduce(scratch, scratch, at(r), n);
    ctx.reduce(out + off, scratch, at(ctx.nranks - 1), n);
    finish(out + off, n, ctx);
  }
}

}  // namespace

const char* primName(Prim prim) {
  switch (prim) {
    case Prim::Copy: return "copy";
    case Prim::Send: return "send";
    case Prim::CopySend: return "copySend";
    case Prim::Recv: return "recv";
    case Prim::RecvReduceSend: return "recvReduceSend";
    case Prim::RecvReduceCopySend: return "recvReduceCopySend";
    case Prim::RecvCopySend: return "recvCopySend";
    case Prim::RecvReduceCopy: return "recvReduceCopy";
    case Prim::ReduceAll: return "reduceAll";
  }
  return "?";
}

std::vector<int> peersOf(const PlanSet& plans, int self, int nranks) {
  std::vector<bool> talks(nranks, false);
  for (const ChannelPlan& plan : plans)
    for (const Step& step : plan.steps)
      for (int peer : {step.recvPeer, step.sendPeer})
        if (peer >= 0 && peer != self) talks[peer] = true;
  std::vector<int> peers;
  for (int p = 0; p < nranks; ++p)
    if (talks[p]) peers.push_back(p);
  return peers;
}

void PlanExecutor::postAhead(const ChannelPlan& plan, size_t cursor, size_t* posted, const OpContext& ctx,
                             const ChannelLinks& links) {
  // Steps run before they were posted consumed their messages unposted;
  // the connector counts those itself.
  size_t& k = *posted;
  if (k < cursor) k = cursor;
  for (; k < plan.steps.size(); ++k) {
    const Step& step = plan.steps[k];
    if (step.prim == Prim::ReduceAll) return;  // one message from every peer: never posted, lands in slots
    RecvConnector* recv = step.recvPeer >= 0 ? links.recv[step.recvPeer] : nullptr;
    if (!recv || !recv->landsInCaller()) continue;
    const Message msg = ctx.message(step);
    // Nothing of a stream-ordered operation may touch its output before
    // its stream reaches it (input_gate.h), landing bytes included.
    if (msg.gate && !msg.gate->ready(0)) return;
    void* dst = step.flags & kLandsEarly ? msg.output + step.outOffset * ctx.elemSize : nullptr;
    if (!recv->post(dst, step.count * ctx.elemSize, msg.tag)) return;
  }
}

Advance PlanExecutor::advance(const ChannelPlan& plan, size_t* cursor, const OpContext& ctx,
                              const ChannelLinks& links, Status* error, size_t* posted) {
  // A step that is not ready is retried a few times right here: its data is
  // often one cache line away, and noticing it from this loop is much
  // quicker than a round trip through the caller's poll loop.
  constexpr int kQuickRetries = 16;
  bool moved = false;
  int retries = 0;
  while (*cursor < plan.steps.size()) {
    if (posted && links.landing) postAhead(plan, *cursor, posted, ctx, links);
    StepResult r = run(plan.steps[*cursor], ctx, links, error);
    if (r == StepResult::Failed) return Advance::Failed;
    if (r == StepResult::NotReady) {
      if (++retries <= kQuickRetries && links.pollers.empty()) continue;
      return moved ? Advance::Progressed : Advance::Blocked;
    }
    retries = 0;
    ++*cursor;
    moved = true;
  }
  return Advance::Done;
}

InputGate* PlanExecutor::closedGate(const Step& step, const OpContext& ctx) {
  InputGate* gate = ctx.messages ? ctx.messages[step.msg].gate : ctx.gate;
  if (!gate) return nullptr;
  const bool readsInput =
      !(step.flags & (kInFromOutput | kInFromScratch)) && step.prim != Prim::Recv && step.prim != Prim::RecvCopySend;
  return gate->ready(readsInput ? (step.inOffset + step.count) * ctx.elemSize : 0) ? nullptr : gate;
}

PlanExecutor::StepResult PlanExecutor::run(const Step& step, const OpContext& ctx,
                                           const ChannelLinks& links, Status* error) {
  const size_t bytes = step.count * ctx.elemSize;
  const Message msg = ctx.message(step);
  if (msg.gate && closedGate(step, ctx)) return StepResult::NotReady;
  const char* in = (step.flags & kInFromOutput ? msg.output : msg.input) + step.inOffset * ctx.elemSize;
  char* out = msg.output + step.outOffset * ctx.elemSize;
  if (__builtin_expect(step.flags & kScratch, 0)) {
    if (step.flags & kInFromScratch) in = ctx.scratch + step.inOffset * ctx.elemSize;
    if (step.flags & kOutToScratch) out = ctx.scratch + step.outOffset * ctx.elemSize;
  }

  if (step.prim == Prim::Copy) {
    if (in != out) ctx.copy(out, in, bytes, ctx.ntOutput);
    return StepResult::Ran;
  }
  if (step.prim == Prim::ReduceAll) return reduceAll(step, msg, ctx, links, error);

  const void* slotIn = nullptr;
  RecvConnector* recv = step.recvPeer >= 0 ? links.recv[step.recvPeer] : nullptr;
  if (recv) {
    size_t got = 0;
    SlotTag tag;
    slotIn = recv->peek(&got, &tag);
    if (!slotIn) return StepResult::NotReady;
    if (!checkSlot(tag, got, bytes, step.recvPeer, msg.tag, ctx, error)) return StepResult::Failed;
  }
  SendConnector* send = step.sendPeer >= 0 ? links.send[step.sendPeer] : nullptr;
  if (send && ctx.sendFromCaller && send->sendsFromCaller() &&
      (step.prim == Prim::Send || step.prim == Prim::RecvCopySend)) {
    // No slot copy: the input, or the output once written, goes out as is.
    // acquire() only asks whether a FIFO entry is free (size plays no part).
    if (!send->acquire(0)) return StepResult::NotReady;
    if (step.prim == Prim::RecvCopySend) ctx.copy(out, slotIn, bytes, ctx.ntOutput);
    send->publishFrom(step.prim == Prim::RecvCopySend ? out : in, bytes, msg.tag);
    if (recv) consume(recv, step.recvPeer, msg.tag);
    return StepResult::Ran;
  }
  void* slotOut = nullptr;
  if (send) {
    slotOut = send->acquire(bytes);
    if (!slotOut) return StepResult::NotReady;
  }

  switch (step.prim) {
    case Prim::Send:
      ctx.copy(slotOut, in, bytes, send->nonTemporalStores(msg.tag, bytes));
      break;
    case Prim::CopySend:
      // The output from the slot just written (in cache), not from in again.
      ctx.copy(slotOut, in, bytes, false);
      if (out != in) ctx.copy(out, slotOut, bytes, ctx.ntOutput);
      break;
    case Prim::Recv:
      if (slotIn != out) ctx.copy(out, slotIn, bytes, ctx.ntOutput);  // else it landed there
      break;
    case Prim::RecvReduceSend:
      ctx.reduce(slotOut, slotIn, in, step.count);
      break;
    case Prim::RecvReduceCopySend:
      // Reduce into the (cache-hot) outgoing slot, then copy it out: the
      // output may be written with non-temporal stores and never read back.
      if (step.flags & kOwnFirst) ctx.reduce(slotOut, in, slotIn, step.count);
      else ctx.reduce(slotOut, slotIn, in, step.count);
      if (!(step.flags & kPartial)) finish(slotOut, step.count, ctx);
      ctx.copy(out, slotOut, bytes, ctx.ntOutput);
      break;
    case Prim::RecvCopySend:
      ctx.copy(slotOut, slotIn, bytes, send->nonTemporalStores(msg.tag, bytes));
      ctx.copy(out, slotIn, bytes, ctx.ntOutput);
      break;
    case Prim::RecvReduceCopy:
      // In place (out == in) is safe: each element is read before it is written.
      if (step.flags & kOwnFirst) ctx.reduce(out, in, slotIn, step.count);
      else ctx.reduce(out, slotIn, in, step.count);
      if (!(step.flags & kPartial)) finish(out, step.count, ctx);
      break;
    default:
      *error = STRATA_ERROR(STRATA_ERR_INTERNAL, "primitive %s cannot run here", primName(step.prim));
      return StepResult::Failed;
  }
  if (__builtin_expect(ctx.stream != nullptr, 0)) {
    // A refused copy must not be published as if its bytes were there.
    Status refused = takeDeviceError();
    if (!refused.isOk()) {
      *error = refused;
      return StepResult::Failed;
    }
  }
  if (send) send->publish(bytes, msg.tag);
  if (recv) consume(recv, step.recvPeer, msg.tag);
  return StepResult::Ran;
}

PlanExecutor::StepResult PlanExecutor::reduceAll(const Step& step, const Message& msg,
                                                 const OpContext& ctx, const ChannelLinks& links,
                                                 Status* error) {
  const size_t bytes = step.count * ctx.elemSize;
  // Every entry is written below before it is read.
  if (peerSlots_.size() < static_cast<size_t>(ctx.nranks)) peerSlots_.resize(ctx.nranks);
  for (int p = 0; p < ctx.nranks; ++p) {
    if (p == ctx.rank) continue;
    size_t got = 0;
    SlotTag tag;
    peerSlots_[p] = links.recv[p]->peek(&got, &tag);
    if (!peerSlots_[p]) return StepResult::NotReady;
    if (!checkSlot(tag, got, bytes, p, msg.tag, ctx, error)) return StepResult::Failed;
  }
  const char* in = msg.input + step.inOffset * ctx.elemSize;
  char* out = msg.output + step.outOffset * ctx.elemSize;
  peerSlots_[ctx.rank] = in;

  // Every rank computes the same expression: rank 0's op rank 1's op ...
  if (ctx.nranks == 2) {
    // In place (out == in) each element is read before it is written.
    ctx.reduce(out, peerSlots_[0], peerSlots_[1], step.count);
    finish(out, step.count, ctx);
  } else if (!ctx.stream) {
    foldThroughScratch(out, peerSlots_.data(), step.count, ctx);
  } else {
    // Its scratch buffer is host memory: plans for device memory use rings
    // and chains beyond two ranks (Comm's device tuning).
    *error = STRATA_ERROR(STRATA_ERR_INTERNAL, "a %d-rank reduceAll step cannot run on device memory", ctx.nranks);
    return StepResult::Failed;
  }
  for (int p = 0; p < ctx.nranks; ++p)
    if (p != ctx.rank) consume(links.recv[p], p, msg.tag);
  return StepResult::Ran;
}

bool PlanExecutor::waitsOnMemory(const ChannelPlan& plan, size_t cursor, const ChannelLinks& links,
                                 const OpContext& ctx) {
  if (cursor >= plan.steps.size()) return false;  // only bytes left to flush: sockets
  if (closedGate(plan.steps[cursor], ctx)) return true;
  size_t bytes = 0;
  SlotTag tag;
  auto memoryRecv = [&](int peer) {
    RecvConnector* c = links.recv[peer];
    return c && !c->needsProgress() && !c->peek(&bytes, &tag);
  };
  const Step& step = plan.steps[cursor];
  if (step.prim == Prim::ReduceAll) {
    for (size_t p = 0; p < links.recv.size(); ++p)
      if (memoryRecv(static_cast<int>(p))) return true;
    return false;
  }
  if (step.recvPeer >= 0 && memoryRecv(step.recvPeer)) return true;
  SendConnector* send = step.sendPeer >= 0 ? links.send[step.sendPeer] : nullptr;
  return send && !send->needsProgress() && !send->acquire(0);
}

Status PlanExecutor::blockedHealth(const ChannelPlan& plan, size_t cursor,
                                   const ChannelLinks& links) {
  if (cursor >= plan.steps.size()) return Status::ok();
  // Only the connectors the step is actually waiting on: a peer that has
  // finished and left (closed its sockets, or exited) after delivering what
  // this step needs is no failure.
  size_t bytes = 0;
  SlotTag tag;
  auto recvMissing = [&](int peer) { return !links.recv[peer]->peek(&bytes, &tag); };
  const Step& step = plan.steps[cursor];
  if (step.prim == Prim::ReduceAll) {
    for (size_t p = 0; p < links.recv.size(); ++p)
      if (links.recv[p] && recvMissing(static_cast<int>(p))) STRATA_CHECK(links.recv[p]->health());
    return Status::ok();
  }
  if (step.recvPeer >= 0 && recvMissing(step.recvPeer)) STRATA_CHECK(links.recv[step.recvPeer]->health());
  // Whether a slot is free does not depend on the size asked for.
  if (step.sendPeer >= 0 && !links.send[step.sendPeer]->acquire(0))
    STRATA_CHECK(links.send[step.sendPeer]->health());
  return Status::ok();
}

std::string PlanExecutor::lastFromText(int peer, const SlotTag& want) const {
  const std::string who = "rank " + std::to_string(peer);
  const bool any = static_cast<size_t>(peer) < lastFrom_.size() && lastFrom_[peer].seq != 0;
  const OpDesc wanted = OpDesc::unpack(want.desc);
  const char* unit = wanted.coll == Coll::SendRecv ? "message" : "operation";
  if (!any)
    return who + ", which has sent nothing here on this channel yet: it has not reached this " + unit +
           ", or is stuck before it";
  const SlotTag& last = lastFrom_[peer];
  const OpDesc got = OpDesc::unpack(last.desc);
  std::string text = who + ", whose last message here belonged to its " + got.describe() + " #" +
                     std::to_string(last.seq);
  // Sequence numbers count collectives on the communicator, messages per pair.
  if ((got.coll == Coll::SendRecv) != (wanted.coll == Coll::SendRecv)) return text;
  if (last.seq < want.seq)
    return text + ", while this rank is at #" + std::to_string(want.seq) + ": " + who +
           " has not reached it (it is behind, or stuck in between)";
  return text + ": " + who + " is inside this " + unit + " but has not sent this part";
}

std::string PlanExecutor::describeWait(const ChannelPlan& plan, size_t cursor, const ChannelLinks& links,
                                       const OpContext& ctx) {
  if (cursor >= plan.steps.size()) return "flushing its last sends";
  const Step& step = plan.steps[cursor];
  if (InputGate* gate = closedGate(step, ctx)) return "step " + std::string(primName(step.prim)) + "; " + gate->describeWait();
  const SlotTag want = ctx.message(step).tag;
  std::string text = std::string("step ") + primName(step.prim);
  size_t bytes = 0;
  SlotTag tag;
  auto waitFor = [&](int peer) {
    if (peer == ctx.rank || !links.recv[peer] || links.recv[peer]->peek(&bytes, &tag)) return;
    text += "; waiting for " + lastFromText(peer, want);
  };
  if (step.prim == Prim::ReduceAll) {
    for (size_t p = 0; p < links.recv.size(); ++p) waitFor(static_cast<int>(p));
  } else if (step.recvPeer >= 0) {
    waitFor(step.recvPeer);
  }
  if (step.sendPeer >= 0 && !links.send[step.sendPeer]->acquire(0))
    text += "; rank " + std::to_string(step.sendPeer) + " has not taken what this rank sent it";
  return text;
}

}  // namespace strata
