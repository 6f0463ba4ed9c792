#include "fusion.h"

#include <algorithm>
#include <cstring>

#include "params.h"

namespace strata {
namespace {

uint64_t bytesOf(const CollCall& call) { return call.count * strata_datatype_size(call.datatype); }

}  // namespace

FusionLimits FusionLimits::fromParams() {
  FusionLimits l;
  l.total = static_cast<uint64_t>(std::max<int64_t>(0, params::fusionBytes()));
  // A call joins only while its own latency outweighs copying it in and out:
  // up to half the one-shot size (bench/README.md has the measurements).
  l.call = std::min<uint64_t>(l.total, static_cast<uint64_t>(std::max<int64_t>(0, params::oneshotBytes())) / 2);
  return l;
}

bool Fusion::accepts(const CollCall& call, const FusionLimits& limits) const {
  const uint64_t bytes = bytesOf(call);
  // A call with its own algorithm, channels or chunk runs as the caller chose.
  return call.coll == Coll::Allreduce && call.memory == MemoryType::Host && !call.pick.any() && bytes <= limits.call &&
         (calls_.empty() || (call.datatype == calls_[0].datatype && call.op == calls_[0].op &&
                             bytes_ + bytes <= limits.total));
}

void Fusion::add(const CollCall& call) {
  calls_.push_back(call);
  bytes_ += bytesOf(call);
}

CollCall Fusion::pack(char* buffer) {
  buffer_ = buffer;
  walk([&](const CollCall& c, uint64_t off, uint64_t n) { std::memcpy(buffer_ + off, c.sendbuf, n); });
  CollCall fused = calls_[0];
  fused.sendbuf = fused.recvbuf = buffer_;
  fused.count = bytes_ / strata_datatype_size(fused.datatype);
  return fused;
}

void Fusion::unpack() const {
  walk([&](const CollCall& c, uint64_t off, uint64_t n) { std::memcpy(c.recvbuf, buffer_ + off, n); });
}

char* FusionBuffers::get(size_t index, size_t bytes) {
  if (index >= buffers_.size()) buffers_.resize(index + 1);
  Buffer& b = buffers_[index];
  if (b.bytes < bytes) {
    b.data.reset(new char[bytes]);  // not zero-filled: the inputs are copied in
    b.bytes = bytes;
  }
  return b.data.get();
}

}  // namespace strata
