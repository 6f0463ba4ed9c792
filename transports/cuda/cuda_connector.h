// Connectors whose slots are GPU memory. The host decides, as with every
// connector (a free slot, a published one); the bytes are moved by work on
// the channel's CUDA stream (deviceStream()): whoever fills an acquired slot
// or reads a peeked one enqueues that on the stream before publish() or
// release(), which enqueue the counter stores behind it. Nothing here waits
// for the GPU. Peer death is noticed through a pidfd (PeerWatch), abort
// through the FIFO's `aborted` word, a failed enqueue through health().
#pragma once

#include <memory>

#include "connector.h"
#include "cuda_fifo.h"
#include "peer_watch.h"
#include "stream_lane.h"

namespace strata::cuda {

// A stream of the transport's own for one channel, shared by the channel's
// connectors, and the lane that enqueues their counter stores on it.
struct ChannelStream {
  // How long teardown waits for a stream's work: one may wait on a flag
  // nobody will raise (a caller's stream that never reached its call).
  static constexpr double kFinishSeconds = 10;

  ChannelStream() = default;
  ~ChannelStream();  // destroys the stream if finish() saw it done
  ChannelStream(const ChannelStream&) = delete;
  ChannelStream& operator=(const ChannelStream&) = delete;
  // Waits (at most kFinishSeconds) for everything on the stream to run;
  // false if it has not.
  bool finish();

  void* stream = nullptr;
  std::unique_ptr<gpu::StreamLane> lane;
  bool finished = false;
};

// One end's view of a FIFO, and what both ends share.
class FifoEnd {
 public:
  FifoEnd(char* host, char* slots, size_t slotBytes, int nslots, std::shared_ptr<PeerWatch> peer,
          std::shared_ptr<ChannelStream> stream);
  Status health();
  void abort();

 protected:
  SlotHeader& header(uint64_t index) { return headers_[index % static_cast<uint64_t>(nslots_)]; }
  char* slot(uint64_t index) { return slots_ + (index % static_cast<uint64_t>(nslots_)) * slotBytes_; }
  // Enqueues *flag = count (mod 2^32) on the stream; a failure is kept for health().
  void store(gpu::Flag* flag, uint64_t count);

  FifoControl* control_;
  SlotHeader* headers_;
  char* slots_;  // device memory: the receiver's own, or the sender's mapping of it
  size_t slotBytes_;
  int nslots_;
  std::shared_ptr<PeerWatch> peer_;
  std::shared_ptr<ChannelStream> stream_;
  Status failed_;
};

class CudaSendConnector final : public SendConnector, private FifoEnd {
 public:
  using FifoEnd::FifoEnd;
  void* acquire(size_t bytes) override;
  void publish(size_t bytes, const SlotTag& tag) override;
  size_t slotBytes() const override { return slotBytes_; }
  void* deviceStream() const override { return stream_->stream; }
  Status health() override { return FifoEnd::health(); }
  void abort() override { FifoEnd::abort(); }

 private:
  uint64_t tail_ = 0;  // messages published
};

class CudaRecvConnector final : public RecvConnector, private FifoEnd {
 public:
  using FifoEnd::FifoEnd;
  const void* peek(size_t* bytes, SlotTag* tag) override;
  void release() override;
  void* deviceStream() const override { return stream_->stream; }
  Status health() override { return FifoEnd::health(); }
  void abort() override { FifoEnd::abort(); }

 private:
  uint64_t head_ = 0;  // messages released
};

}  // namespace strata::cuda
