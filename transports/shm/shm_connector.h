// Connectors over a shared-memory FIFO (shm_fifo.h). The receiver reads and
// reduces straight out of the slots in its own segment; the sender writes
// into them through its mapping of that segment. Peer death is noticed through
// a pidfd (PeerWatch), abort through the FIFO's `aborted` word.
#pragma once

#include <memory>

#include "connector.h"
#include "peer_watch.h"
#include "shm_fifo.h"
#include "shm_slot_stores.h"

namespace strata::shm {

// One end's view of a FIFO in a mapped segment, and the health and abort
// handling both ends share.
class FifoEnd {
 public:
  FifoEnd(char* fifo, const FifoLayout& layout, std::shared_ptr<PeerWatch> peer);
  Status health();
  void abort();

 protected:
  SlotHeader& header(uint64_t index) { return headers_[index % static_cast<uint64_t>(layout_.nslots)]; }
  char* payload(uint64_t index) {
    return payload_ + (index % static_cast<uint64_t>(layout_.nslots)) * layout_.slotBytes;
  }

  FifoControl* control_;
  SlotHeader* headers_;
  char* payload_;
  FifoLayout layout_;
  std::shared_ptr<PeerWatch> peer_;
};

class ShmSendConnector final : public SendConnector, private FifoEnd {
 public:
  // ntMinBytes: STRATA_SHM_NT_BYTES (see shm_slot_stores.h).
  ShmSendConnector(char* fifo, const FifoLayout& layout, std::shared_ptr<PeerWatch> peer, uint64_t ntMinBytes)
      : FifoEnd(fifo, layout, std::move(peer)), stores_(layout.slotBytes, ntMinBytes) {
    // Only full slots are ever filled with non-temporal stores.
    if (ntMinBytes > 0) declareNonTemporalFrom(layout.slotBytes);
  }
  void* acquire(size_t bytes) override;
  void publish(size_t bytes, const SlotTag& tag) override;
  size_t slotBytes() const override { return layout_.slotBytes; }
  Status health() override { return FifoEnd::health(); }
  void abort() override { FifoEnd::abort(); }

 private:
  bool chooseNonTemporal(const SlotTag& tag, size_t bytes) override { return stores_.nonTemporal(tag, bytes); }

  uint64_t tail_ = 0;           // slots published
  uint64_t knownConsumed_ = 0;  // cached copy of control_->consumed
  SlotStores stores_;
};

class ShmRecvConnector final : public RecvConnector, private FifoEnd {
 public:
  using FifoEnd::FifoEnd;
  const void* peek(size_t* bytes, SlotTag* tag) override;
  void release() override;
  Status health() override { return FifoEnd::health(); }
  void abort() override { FifoEnd::abort(); }

 private:
  uint64_t head_ = 0;  // slots released
};

}  // namespace strata::shm
