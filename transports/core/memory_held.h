// Memory a transport or connector holds for a communicator's transfers, by
// where it lives; strata_comm_memory adds them up. The caller's buffers,
// and memory registered for them (ib's registration cache), are the
// caller's and not counted.
#pragma once

#include <cstdint>

namespace strata {

struct MemoryHeld {
  uint64_t shared = 0;  // shared-memory segments this process created (/dev/shm)
  uint64_t host = 0;    // private host memory
  uint64_t pinned = 0;  // host memory pinned for a device (RDMA-registered, or CUDA's)
  uint64_t device = 0;  // GPU memory

  MemoryHeld& operator+=(const MemoryHeld& o) {
    shared += o.shared;
    host += o.host;
    pinned += o.pinned;
    device += o.device;
    return *this;
  }
};

}  // namespace strata
