// The stream-side wait where the driver offers no stream memory operations
// (cuStreamWaitValue32): a one-thread kernel that polls the flag. Internal to
// cuda_seam.cc; the kernel lives in stream_wait.cu because only nvcc
// compiles device code.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace strata::gpu {

// Enqueues on `stream` a kernel that returns once *flag >= value (compared
// as CU_STREAM_WAIT_VALUE_GEQ does: (int32_t)(*flag - value) >= 0). `flag`
// is mapped pinned memory that host threads write; a device address.
cudaError_t launchStreamWait(cudaStream_t stream, const uint32_t* flag, uint32_t value);

}  // namespace strata::gpu
