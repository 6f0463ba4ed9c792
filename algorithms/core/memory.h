// Where an operation's buffers live, and how the executor copies and reduces
// bytes there. The C API tags every call with its buffers' memory type; the
// executor reaches the user's buffers and the slots only through the
// MemoryOps of that type (OpContext's copy, reduce and scaleDown), so device
// memory is one more MemoryOps (copies and kernels enqueued on a stream),
// not a change to any algorithm.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels.h"
#include "status.h"

namespace strata {

enum class MemoryType : uint8_t {
  Host,
  // GPU memory, moved by copies and kernels on the channel's stream over
  // cuda connectors (transports/cuda); the host only enqueues.
  Device,
};

const char* memoryTypeName(MemoryType type);

struct MemoryOps {
  MemoryType type;
  // memcpy; with nonTemporal, stores that bypass the cache where the size
  // makes that pay (for outputs nobody reads soon). `stream`: device only.
  void (*copy)(void* dst, const void* src, size_t bytes, bool nonTemporal, void* stream);
  // Host: dst = a op b by the kernel returned here, called directly (kernels.h
  // has the semantics every memory type keeps). Device: null.
  kernels::ReduceFn (*reduceKernel)(strata_datatype_t datatype, strata_op_t op, kernels::Isa isa);
  // Device: dst = a op b by a kernel enqueued on `stream`. Host: unused.
  void (*reduce)(strata_datatype_t datatype, strata_op_t op, void* dst, const void* a, const void* b, size_t count,
                 void* stream);
  // dst = src / divisor: the average's one division.
  void (*scaleDown)(void* dst, const void* src, size_t count, strata_datatype_t datatype, int divisor, void* stream);
};

extern const MemoryOps kHostMemory;
extern const MemoryOps kDeviceMemory;

// The operations of `type`.
const MemoryOps& memoryOps(MemoryType type);

// The first copy or kernel that device memory failed to enqueue on this
// thread since the last call (ok if none): its operations return nothing, so
// whoever runs them asks, before publishing what they wrote and after each
// operation.
Status takeDeviceError();

}  // namespace strata
