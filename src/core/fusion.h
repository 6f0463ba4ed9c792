// Tensor fusion: small allreduces issued together (one group) with the same
// datatype and op are packed into one buffer and reduced as one call, one
// pass over the network instead of one per call, then unpacked. Every rank
// sees the same calls in the same order, so every rank packs them alike.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "planner.h"

namespace strata {

// The fusion limits, from STRATA_FUSION_BYTES and STRATA_ONESHOT_BYTES.
struct FusionLimits {
  uint64_t call = 0;   // the largest call that joins a fusion
  uint64_t total = 0;  // the largest fused buffer
  static FusionLimits fromParams();
};

// One fused allreduce in the making.
class Fusion {
 public:
  bool empty() const { return calls_.empty(); }
  size_t size() const { return calls_.size(); }
  const CollCall& first() const { return calls_[0]; }
  uint64_t bytes() const { return bytes_; }
  // Whether `call` can join, within `limits`.
  bool accepts(const CollCall& call, const FusionLimits& limits) const;
  void add(const CollCall& call);
  // The call that reduces every input at once in `buffer` (bytes() long):
  // the inputs are copied in.
  CollCall pack(char* buffer);
  // The results back into each call's output; after the packed call succeeded.
  void unpack() const;

 private:
  // fn(call, its offset in the buffer, its bytes) for each call, in order.
  template <typename Fn>
  void walk(Fn fn) const {
    uint64_t off = 0;
    for (const CollCall& c : calls_) {
      const uint64_t n = c.count * strata_datatype_size(c.datatype);
      fn(c, off, n);
      off += n;
    }
  }

  std::vector<CollCall> calls_;
  uint64_t bytes_ = 0;
  char* buffer_ = nullptr;
};

// Fusion buffers, kept from group to group: fresh memory would cost a page
// fault per 4 KiB on every group, more than the fused allreduce itself.
class FusionBuffers {
 public:
  // The index-th buffer of the current group, with room for `bytes`.
  char* get(size_t index, size_t bytes);

 private:
  struct Buffer {
    std::unique_ptr<char[]> data;
    size_t bytes = 0;
  };
  std::vector<Buffer> buffers_;
};

}  // namespace strata
