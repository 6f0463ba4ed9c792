#include "shm_connector.h"

namespace strata::shm {

FifoEnd::FifoEnd(char* fifo, const FifoLayout& layout, std::shared_ptr<PeerWatch> peer)
    : control_(reinterpret_cast<FifoControl*>(fifo)),
      headers_(reinterpret_cast<SlotHeader*>(fifo + layout.headersOffset())),
      payload_(fifo + layout.payloadOffset()),
      layout_(layout),
      peer_(std::move(peer)) {}

Status FifoEnd::health() {
  if (control_->aborted.load(std::memory_order_acquire))
    return makeErrorQuiet(STRATA_ERR_REMOTE, "rank %d failed or aborted the communicator", peer_->rank());
  return peer_->check();
}

void FifoEnd::abort() { control_->aborted.store(1, std::memory_order_release); }

void* ShmSendConnector::acquire(size_t bytes) {
  const uint64_t nslots = static_cast<uint64_t>(layout_.nslots);
  if (tail_ - knownConsumed_ >= nslots) {
    knownConsumed_ = control_->consumed.load(std::memory_order_acquire);
    if (tail_ - knownConsumed_ >= nslots) return nullptr;
  }
  if (bytes <= kInlineBytes) return header(tail_).inlineData;
  return payload(tail_);
}

void ShmSendConnector::publish(size_t bytes, const SlotTag& tag) {
  SlotHeader& h = header(tail_);
  h.tagSeq = tag.seq;
  h.tagDesc = tag.desc;
  h.bytes = bytes;
  ++tail_;
  h.generation.store(tail_, std::memory_order_release);
  stores_.published(tag, bytes);
}

const void* ShmRecvConnector::peek(size_t* bytes, SlotTag* tag) {
  const SlotHeader& h = header(head_);
  if (h.generation.load(std::memory_order_acquire) != head_ + 1) return nullptr;
  *bytes = h.bytes;
  tag->seq = h.tagSeq;
  tag->desc = h.tagDesc;
  if (h.bytes <= kInlineBytes) return h.inlineData;
  return payload(head_);
}

void ShmRecvConnector::release() {
  ++head_;
  control_->consumed.store(head_, std::memory_order_release);
}

}  // namespace strata::shm
