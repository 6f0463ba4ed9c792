#include "stream_wait.h"

namespace strata::gpu {
namespace {

// Each poll is a read across PCIe to host memory; a short sleep between them
// keeps one waiting stream from occupying the bus and an SM's issue slots
// while adding little to the wake-up latency (itself about a microsecond).
constexpr unsigned kPollSleepNs = 200;

// volatile: every iteration reads host memory again instead of a cached or
// hoisted copy. The work after this kernel on the stream starts only once it
// has returned, so it sees whatever the host wrote before raising the flag.
__global__ void waitFlag(const volatile uint32_t* flag, uint32_t value) {
  while (static_cast<int32_t>(*flag - value) < 0) __nanosleep(kPollSleepNs);
}

}  // namespace

cudaError_t launchStreamWait(cudaStream_t stream, const uint32_t* flag, uint32_t value) {
  const volatile uint32_t* polled = flag;
  void* args[] = {&polled, &value};
  return cudaLaunchKernel(reinterpret_cast<const void*>(&waitFlag), dim3(1), dim3(1), args, 0, stream);
}

}  // namespace strata::gpu
