// Out-of-band exchange used while connecting: the bootstrap network, seen by
// transports only through this interface (transports know nothing of src/).
#pragma once

#include <cstddef>

#include "status.h"

namespace strata {

class OutOfBand {
 public:
  virtual ~OutOfBand() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // out[r * bytes .. (r + 1) * bytes) receives rank r's `in`.
  virtual Status allgather(const void* in, void* out, size_t bytes) = 0;
  virtual Status barrier() = 0;
  // Whether another rank of the exchange gave up on it (a pair whose other
  // rank failed its half): a transport waiting for that rank's connections
  // stops waiting. Checked now and then while it waits.
  virtual bool abandoned() { return false; }
};

}  // namespace strata
