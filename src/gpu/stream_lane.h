// A lane: work enqueued in order on a stream (a CUDA stream in production;
// tests use a host thread that executes the same commands in order), which
// the host never waits for. The staging state machine (staging.h) speaks
// only to this interface, so it runs unchanged on host memory in tests.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "status.h"

namespace strata::gpu {

// A 32-bit word in pinned memory that streams write and wait on and host
// threads read and write. Values only grow within one use.
using Flag = std::atomic<uint32_t>;

class StreamLane {
 public:
  virtual ~StreamLane() = default;
  // Each enqueues one command after everything enqueued before it and
  // returns at once; a Status that is not ok means nothing was enqueued.
  // dst <- src, bytes (device to host, host to device, or host to host).
  virtual Status copy(void* dst, const void* src, size_t bytes) = 0;
  // *flag = value, once the commands before it are done.
  virtual Status signal(Flag* flag, uint32_t value) = 0;
  // The commands after it wait until *flag >= value.
  virtual Status wait(Flag* flag, uint32_t value) = 0;
  // For messages: "stream 0x7f.." or "host lane".
  virtual const char* name() const = 0;
};

}  // namespace strata::gpu
