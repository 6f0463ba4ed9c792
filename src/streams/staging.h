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
// Buffers in host memory are not copied (but for a pre-multiplied input,
// scaled into pinned memory): the operation still waits for the stream to
// reach it (landed >= 1) before it touches them.
//
// Everything here speaks only to StreamLane and a pinned allocator, so the
// tests run the whole state machine on host memory with a host lane.
#pragma once

#include <cstddef>
#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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
  const void* scalar = nullptr;  // null: none
  bool onDevice = false;         // read on the stream, when the operation runs
  strata_datatype_t datatype = STRATA_FLOAT32;
};

class StagedOp;

// One message's buffers as the host collective sees them, and its gate.
class StagedPart final : public InputGate {
 public:
  const char* hostInput() const { return hostIn_; }
  char* hostOutput() const { return hostOut_; }

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

 private:
  friend class Stager;
  friend class StagedPart;
  static void released(void* self);
  // Scales the part's chunks that landed since the last call; returns the
  // chunks scaled in all.
  uint32_t scaleLanded(StagedPart& part);

  std::string laneName_;
  void* block_ = nullptr;
  size_t blockBytes_ = 0;
  gpu::Flag* release_ = nullptr;
  gpu::Flag* finish_ = nullptr;
  PreMul premul_;
  const void* scalar_ = nullptr;  // the pre-multiplier's value, in host memory
  std::mutex scaling_;
};

// A communicator's staging: pinned blocks (kept for reuse up to a cache
// limit) and the operations in flight. Used by the thread issuing calls
// (the API's one thread per communicator at a time); completions arrive on
// whichever thread finishes a request, through the flags only.
class Stager {
 public:
  Stager(PinnedAllocator allocator, size_t chunkBytes, size_t cacheBytes);
  ~Stager();  // frees what drain() let go; leaks blocks a stream may still use

  // Prepares an operation: its pinned memory, and on `lane` the input
  // copies and their signals. The caller then submits the host collective
  // over op->parts (with op->request and the parts as gates) and calls
  // finishStaging, whatever the submission's outcome.
  Status stage(gpu::StreamLane& lane, const std::vector<PartSpec>& parts, const PreMul& premul, StagedOp** out);
  // Enqueues the wait for the host collective and the output copies. If
  // `submitted` is not ok the collective never started: the stream is
  // released at once and the output left alone.
  Status finishStaging(gpu::StreamLane& lane, StagedOp* op, const Status& submitted);

  // Frees the operations the stream is done with.
  void reap();
  // Operations whose host collective has not ended.
  size_t running() const;
  // Waits until every stream is done with its operation's memory, at most
  // until `deadline` (nowSeconds()); false if some were not.
  bool drain(double deadline);

  size_t inFlight() const { return ops_.size(); }
  size_t cachedBytes() const;

 private:
  Status takeBlock(size_t bytes, void** block, size_t* got);
  void giveBack(void* block, size_t bytes);

  PinnedAllocator allocator_;
  size_t chunkBytes_;
  size_t cacheBytes_;
  std::vector<std::unique_ptr<StagedOp>> ops_;
  struct Block {
    void* ptr;
    size_t bytes;
  };
  std::vector<Block> free_;
};

}  // namespace strata::streams
