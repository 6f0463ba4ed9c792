#include "hardware_queues.h"

#include <cerrno>
#include <cstdlib>

namespace strata::gpu {

namespace {
constexpr int kDefaultQueues = 8;
constexpr int kMostQueues = 32;
}  // namespace

int hardwareQueues(const char* setting) {
  if (!setting || !*setting) return kDefaultQueues;
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(setting, &end, 10);
  if (*end != '\0' || errno == ERANGE || n < 1) return kDefaultQueues;
  return n > kMostQueues ? kMostQueues : static_cast<int>(n);
}

int hardwareQueues() { return hardwareQueues(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")); }

}  // namespace strata::gpu
