// Stream-ordered operations: how a collective on a GPU stream runs as a host
// collective without the host ever waiting for the GPU.
//
// For each operation, on its stream (a StreamLane), in order:
//   1. copy the input into pinned host memory chunk by chunk, signalling
//      `landed` = chunks copied after each (the host collective, already
//      queued on its channels, runs each step as soon as the input it reads
//      has landed: InputGate);
//   2. wait until the host signals `released` (the collective ended, well or
//      not: a failure releases the stream too, so a GPU never stays blocked
//      on a dead peer);
//   3. copy the output back, then signal `finished`: the pinned memory may
//      be reused.
// An operation on device memory over the cuda transport stages nothing: its
// channels' streams copy and reduce in place, starting once `landed` >= 1,
// and the caller's stream also waits for each channel's `done` flag.
// Buffers in host memory are not copied (a pre-multiplied host input is
// scaled into pinned memory by the host, never copied by the stream: CUDA
// runs host-to-host copies synchronously, which would hold the caller until
// the stream's earlier work is done). The operation still waits for the
// stream to reach it (landed >= 1) before it touches host buffers.
//
// All of an operation's stream work is enqueued before its collective is
// queued on the channels: a call that fails has not been issued, and a
// collective that runs always has its stream wait released.
//
// Everything here speaks only to StreamLane and a pinned allocator, so the
// tests run the whole state machine on host memory with a host lane.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_seam.h"
#include "input_gate.h"
#include "request.h"
#include "status.h"
#include "stream_lane.h"
#include "strata/strata.h"

namespace strata::streams {

// Where pinned staging memory comes from (gpu::allocPinned in production).
struct PinnedAllocator {
  Status (*alloc)(size_t bytes, void** out);
  void (*free)(void* ptr);
};

// One buffer as the caller gave it.
struct UserBuffer {
  const void* ptr = nullptr;
  size_t bytes = 0;
  bool staged = false;  // device or managed memory: copied through pinned memory
  gpu::MemKind kind = gpu::MemKind::Host;
  int device = -1;      // device memory (not managed): the CUDA device it is on
};

// One message of an operation: a collective has one, a group of sends and
// receives one per send or receive.
struct PartSpec {
  UserBuffer in;   // read by the operation on this rank (bytes 0: nothing)
  UserBuffer out;  // written by it (bytes 0: nothing)
};

// Every input element multiplied by a scalar before the sum
// (strata_call_options_t::premul_scalar).
struct PreMul {
  bool set = false;
  // Device memory: read on the stream, when the operation runs. Host memory
  // is read when the call is made, into `value`.
  const void* onDevice = nullptr;
  alignas(8) unsigned char value[8] = {};
  strata_datatype_t datatype = STRATA_FLOAT32;
};

class StagedOp;
class Stager;

// One message's buffers as the host collective sees them, and its gate.
class StagedPart final : public InputGate {
 public:
  const char* hostInput() const { return hostIn_; }
  char* hostOutput() const { return hostOut_; }
  // Raised by the caller's stream when it reaches the operation (>= 1).
  gpu::Flag* landedFlag() const { return landed_; }

  bool ready(uint64_t endByte) override;
  std::string describeWait() const override;

 private:
  friend class Stager;
  friend class StagedOp;
  StagedOp* op_ = nullptr;
  PartSpec spec_;
  const char* hostIn_ = nullptr;
  char* hostOut_ = nullptr;
  gpu::Flag* landed_ = nullptr;
  uint32_t chunks_ = 1;     // signals the stream sends for this part's input
  size_t chunkBytes_ = 0;   // input bytes per signal (the last may be short); 0: one signal for all
  bool copyIn_ = false;     // the stream copies the input into hostIn_ (device memory)
  // With a PreMul: chunks scaled so far. Several channels' drivers may ask
  // at once, so scaling happens under the operation's lock.
  std::atomic<uint32_t> scaled_{0};
};

// One stream-ordered operation in flight: its pinned memory, its flags, and
// the request of the host collective that runs over its parts.
class StagedOp {
 public:
  Request request;
  std::vector<StagedPart> parts;

  // Whether the stream is done with the operation's pinned memory.
  bool finished() const;
  // An operation on device memory run by `deviceChannels` channels
  // (Stager::reserve): channel ch's stream stores 1 here after its last
  // copy, and the caller's stream waits for every one of them.
  gpu::Flag* deviceDone(int ch) const { return done_ + ch; }

 private:
  friend class Stager;
  friend class StagedPart;
  // The request's end: the host collective is over. A failed one also
  // stands in for its channels' streams, which may never signal.
  static void released(void* self);
  void release() { release_->store(1, std::memory_order_release); }
  // Also lets the channels' streams through their waits for the caller's
  // (their work on the buffers is then undefined, as the output is).
  void releaseAll() {
    for (StagedPart& part : parts) part.landed_->store(part.chunks_, std::memory_order_release);
    for (int ch = 0; ch < ndone_; ++ch) done_[ch].store(1, std::memory_order_release);
    release();
  }
  // Scales the part's chunks that landed since the last call; returns the
  // chunks scaled in all.
  uint32_t scaleLanded(StagedPart& part);

  const Stager* stager_ = nullptr;
  std::string laneName_ = "its stream";
  void* block_ = nullptr;
  size_t blockBytes_ = 0;
  gpu::Flag* release_ = nullptr;
  gpu::Flag* finish_ = nullptr;
  gpu::Flag* done_ = nullptr;
  int ndone_ = 0;
  PreMul premul_;
  const void* scalar_ = nullptr;  // the pre-multiplier's value, in host memory
  std::mutex scaling_;
};

// A communicator's staging: pinned blocks (kept for reuse up to a cache
// limit) and the operations in flight. Used by the thread issuing calls
// (the API's one thread per communicator at a time); completions arrive on
// whichever thread finishes a request, through the flags only.
class Stager {
  friend class StagedOp;  // its end tells ended_

 public:
  Stager(PinnedAllocator allocator, size_t chunkBytes, size_t cacheBytes);
  ~Stager();  // frees what drain() let go; leaks blocks a stream may still use

  // Lays out an operation's pinned memory (from the cache, or allocated):
  // nothing is on any stream yet. The caller checks that its collective can
  // be queued, then enqueue()s it, or cancel()s it. With `deviceChannels`,
  // an operation on device memory that channels' streams run (its parts
  // unstaged): the caller's stream also waits for each one's deviceDone().
  Status reserve(const std::vector<PartSpec>& parts, const PreMul& premul, StagedOp** out, int deviceChannels = 0);
  void cancel(StagedOp* op);
  // Enqueues all of the operation's stream work on `lane`: the input copies
  // and their signals, the wait for the collective, the output copies, the
  // `finished` signal. If the lane fails part-way the operation is released
  // at once (the stream must not wait for a collective that will not run;
  // the output is then undefined) and its block stays with the stream.
  Status enqueue(gpu::StreamLane& lane, StagedOp* op);
  // Frees the operations the stream is done with.
  void reap();
  // Lets every stream still waiting for an operation go on (its output is
  // then undefined): before a communicator's device streams are torn down,
  // none may wait on a flag nobody will raise.
  void releaseAll();
  // releaseAll() from any thread (only stores to flags), for when a thread
  // driving the operations is stuck inside a CUDA call, and from then on
  // frees nothing: that thread still holds their requests when it comes
  // back, so their memory stays, leaked with the failed communicator.
  void abandon();
  // Operations whose host collective has not ended.
  size_t running() const;
  // Waits until every stream is done with its operation's memory, at most
  // until `deadline` (nowSeconds()); false if some were not.
  bool drain(double deadline);

  size_t inFlight() const {
    std::lock_guard<std::mutex> lock(opsMutex_);
    return ops_.size();
  }
  // Told of every operation's end (its request done, well or not), on the
  // thread that ends it, before its stream is released: nobody waits on a
  // stream-ordered request, so this is where its communicator learns of it.
  using Ended = std::function<void(const Request&)>;
  void onEnded(Ended ended) { ended_ = std::move(ended); }
  size_t cachedBytes() const;
  // The pinned memory it holds: the cache, and the operations' blocks.
  size_t pinnedBytes() const;

 private:
  Status takeBlock(size_t bytes, void** block, size_t* got);
  void giveBack(void* block, size_t bytes);
  bool deviceOpsInFlight() const;  // operations whose channels' streams have not finished
  void forget(StagedOp* op);

  PinnedAllocator allocator_;
  Ended ended_;
  size_t chunkBytes_;
  size_t cacheBytes_;
  // abandon() may come from another thread (StuckWatch, while the issuing
  // thread is stuck in CUDA): the list is changed under the lock, and no
  // CUDA call is made while it is held.
  mutable std::mutex opsMutex_;
  std::atomic<bool> abandoned_{false};
  std::vector<std::unique_ptr<StagedOp>> ops_;
  struct Block {
    void* ptr;
    size_t bytes;
  };
  std::vector<Block> free_;
};

}  // namespace strata::streams
