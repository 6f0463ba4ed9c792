// Where an operation's buffers live, and how the executor copies and reduces
// bytes there. The C API tags every call with its buffers' memory type; the
// executor reaches the user's buffers only through the MemoryOps of that type,
// so device memory arrives as one more MemoryOps (copies and kernels on a
// stream), not as a change to any algorithm.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels.h"

namespace strata {

enum class MemoryType : uint8_t {
  Host,
};

const char* memoryTypeName(MemoryType type);

struct MemoryOps {
  MemoryType type;
  // memcpy; with nonTemporal, stores that bypass the cache where the size
  // makes that pay (for outputs nobody reads soon).
  void (*copy)(void* dst, const void* src, size_t bytes, bool nonTemporal);
  // dst = a op b, element-wise (kernels.h has the semantics every memory type keeps).
  kernels::ReduceFn (*reduceKernel)(strata_datatype_t datatype, strata_op_t op, kernels::Isa isa);
  // dst = src / divisor: the average's one division.
  void (*scaleDown)(void* dst, const void* src, size_t count, strata_datatype_t datatype, int divisor);
};

extern const MemoryOps kHostMemory;

// The operations of `type`.
const MemoryOps& memoryOps(MemoryType type);

}  // namespace strata
