#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

#include "cuda_seam.h"

namespace strata::gpu {
namespace {

// mincore fails with ENOMEM exactly when part of the range is not mapped;
// other failures (EAGAIN) say nothing about the page, so count it as mapped
// rather than refuse a valid buffer.
bool pageMapped(uintptr_t page) {
  unsigned char resident;
  return mincore(reinterpret_cast<void*>(page), 1, &resident) == 0 || errno != ENOMEM;
}

}  // namespace

bool mapped(const void* ptr, size_t bytes) {
  if (bytes == 0) return true;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(ptr);
  if (bytes - 1 > UINTPTR_MAX - begin) return false;
  static const uintptr_t pageMask = ~(static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) - 1);
  return pageMapped(begin & pageMask) && pageMapped((begin + bytes - 1) & pageMask);
}

}  // namespace strata::gpu
