#include "cuda_connector.h"

#include "cuda_seam.h"
#include "log.h"

namespace strata::cuda {
namespace {

// Messages from count `earlier` to count `later`, modulo 2^32 (the width of
// the shared counters).
uint32_t between(uint64_t later, uint64_t earlier) { return static_cast<uint32_t>(later - earlier); }

}  // namespace

ChannelStream::~ChannelStream() {
  lane.reset();
  if (stream && finished) gpu::destroyStream(stream);
}

bool ChannelStream::finish() {
  if (!stream || finished) return true;
  Status s = gpu::finishWithin(stream, kFinishSeconds);
  // A stream that failed has finished too; one still waiting may write the
  // memory it reaches: that stays mapped (leaked).
  finished = s.code() != STRATA_ERR_TIMEOUT;
  if (!s.isOk()) STRATA_WARN(NET, "finishing a cuda channel's stream: %s%s", s.message().c_str(),
                             finished ? "" : "; its memory is left mapped");
  return finished;
}

FifoEnd::FifoEnd(char* host, char* slots, size_t slotBytes, int nslots, std::shared_ptr<PeerWatch> peer,
                 std::shared_ptr<ChannelStream> stream)
    : control_(reinterpret_cast<FifoControl*>(host)),
      headers_(reinterpret_cast<SlotHeader*>(host + sizeof(FifoControl))),
      slots_(slots),
      slotBytes_(slotBytes),
      nslots_(nslots),
      peer_(std::move(peer)),
      stream_(std::move(stream)) {}

Status FifoEnd::health() {
  // A copy that faulted on the GPU never reaches the counter store behind
  // it: the peer would wait for it until its deadline.
  if (failed_.isOk()) failed_ = gpu::streamError(stream_->stream);
  if (!failed_.isOk()) return failed_;
  if (control_->aborted.load(std::memory_order_acquire))
    return makeErrorQuiet(STRATA_ERR_REMOTE, "rank %d failed or aborted the communicator", peer_->rank());
  return peer_->check();
}

void FifoEnd::abort() { control_->aborted.store(1, std::memory_order_release); }

void FifoEnd::store(gpu::Flag* flag, uint64_t count) {
  Status s = stream_->lane->signal(flag, static_cast<uint32_t>(count));
  if (!s.isOk() && failed_.isOk()) failed_ = s;
}

void* CudaSendConnector::acquire(size_t /*bytes*/) {
  // Once the communicator failed, no more work goes on the stream: a thread
  // that was stuck in CUDA comes back to a step that is never ready, and
  // finds the failure (health()).
  if (control_->aborted.load(std::memory_order_acquire)) return nullptr;
  const uint32_t consumed = control_->consumed.load(std::memory_order_acquire);
  if (between(tail_, consumed) >= static_cast<uint32_t>(nslots_)) return nullptr;
  return slot(tail_);
}

void CudaSendConnector::publish(size_t bytes, const SlotTag& tag) {
  SlotHeader& h = header(tail_);
  h.tagSeq = tag.seq;
  h.tagDesc = tag.desc;
  h.bytes = bytes;
  ++tail_;
  // The header's stores must be visible before the GPU's store of
  // `published`, which comes after the enqueue below. The fence orders them
  // before the enqueue's own stores. That they reach memory before the GPU
  // is told to go rests on the driver: it must fence its own command stores
  // before its doorbell write (on aarch64 a barrier for outer-shareable
  // observers, dmb oshst, as Linux's writel), and this thread issues both,
  // so that fence orders the header too. x86 keeps stores in order anyway.
  std::atomic_thread_fence(std::memory_order_release);
  store(&control_->published, tail_);
}

const void* CudaRecvConnector::peek(size_t* bytes, SlotTag* tag) {
  if (control_->aborted.load(std::memory_order_acquire)) return nullptr;  // as acquire()
  const uint32_t published = control_->published.load(std::memory_order_acquire);
  if (between(published, head_) == 0) return nullptr;
  const SlotHeader& h = header(head_);
  *bytes = h.bytes;
  tag->seq = h.tagSeq;
  tag->desc = h.tagDesc;
  return slot(head_);
}

void CudaRecvConnector::release() {
  ++head_;
  store(&control_->consumed, head_);
}

}  // namespace strata::cuda
