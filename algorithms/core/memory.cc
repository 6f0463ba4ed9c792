#include "memory.h"

namespace strata {
namespace {

void hostCopy(void* dst, const void* src, size_t bytes, bool nonTemporal, void*) {
  kernels::copy(dst, src, bytes, nonTemporal);
}

void hostScaleDown(void* dst, const void* src, size_t count, strata_datatype_t datatype, int divisor, void*) {
  kernels::scaleDown(dst, src, count, datatype, divisor);
}

}  // namespace

const MemoryOps kHostMemory = {MemoryType::Host, hostCopy, kernels::kernel, nullptr, hostScaleDown};

const char* memoryTypeName(MemoryType type) {
  switch (type) {
    case MemoryType::Host: return "host";
    case MemoryType::Device: return "device";
  }
  return "?";
}

const MemoryOps& memoryOps(MemoryType type) {
  switch (type) {
    case MemoryType::Host: return kHostMemory;
    case MemoryType::Device: return kDeviceMemory;
  }
  return kHostMemory;
}

}  // namespace strata
