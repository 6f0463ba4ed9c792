// Monotonic time for deadlines. Every wait in strata compares against one.
#pragma once

#include <time.h>

namespace strata {

inline double nowSeconds() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace strata
