#include "cuda_seam.h"

namespace strata::gpu {

const char* memKindName(MemKind kind) {
  switch (kind) {
    case MemKind::Host: return "host";
    case MemKind::PinnedHost: return "pinned host";
    case MemKind::Managed: return "managed";
    case MemKind::Device: return "device";
  }
  return "unknown memory kind";
}

}  // namespace strata::gpu
