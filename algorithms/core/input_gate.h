// Input that arrives while the operation already runs: a stream-ordered
// operation's input is copied from the GPU chunk by chunk, and the plan may
// start on the first chunk while the stream copies the next. The executor
// asks the gate before a step reads input; nothing of the operation runs
// before ready(0) (the stream has reached the operation), so its output is
// not touched before the stream's earlier work is done either.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

class InputGate {
 public:
  virtual ~InputGate() = default;
  // Whether the input's bytes [0, endByte) have arrived. Called only by the
  // thread driving the operation; cheap once everything has arrived.
  virtual bool ready(uint64_t endByte) = 0;
  // What it waits for, for timeout messages ("its CUDA stream 0x.. has not
  // reached the operation", "chunk 3 of 8 not yet copied from the GPU").
  virtual std::string describeWait() const = 0;
};

}  // namespace strata
