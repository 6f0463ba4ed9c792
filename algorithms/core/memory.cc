#include "memory.h"

namespace strata {

const MemoryOps kHostMemory = {MemoryType::Host, kernels::copy, kernels::kernel, kernels::scaleDown};

const char* memoryTypeName(MemoryType type) {
  switch (type) {
    case MemoryType::Host: return "host";
  }
  return "?";
}

const MemoryOps& memoryOps(MemoryType type) {
  switch (type) {
    case MemoryType::Host: return kHostMemory;
  }
  return kHostMemory;
}

}  // namespace strata
