// Layout of one cuda FIFO (one sender, one receiver, one channel). Its slots
// are device memory of the receiver's GPU, which the sender maps through
// CUDA IPC; its control words and slot headers live in the receiver's shared
// host segment, registered with CUDA in both processes so that their streams
// can store the counters (StreamLane::signal) and both hosts can read them.
//
// The counters count messages modulo 2^32 (what a stream stores is 32 bits);
// at most nslots <= 64 are ever in flight, so differences stay exact.
// `published` is stored by the sender's stream after the slot's bytes (the
// store carries a system-wide fence), `consumed` by the receiver's stream
// after its last read of the slot. Written by different sides, they sit on
// different cache lines.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "stream_lane.h"

namespace strata::cuda {

constexpr size_t kCacheLine = 64;

struct alignas(kCacheLine) FifoControl {
  gpu::Flag published;
  char pad0[kCacheLine - sizeof(gpu::Flag)];
  gpu::Flag consumed;
  char pad1[kCacheLine - sizeof(gpu::Flag)];
  std::atomic<uint32_t> aborted;  // set by either host, never cleared
  char pad2[kCacheLine - sizeof(std::atomic<uint32_t>)];
};

// Written by the sender's host before it enqueues the store of `published`:
// by the time the receiver sees that store, these are in place.
struct alignas(kCacheLine) SlotHeader {
  uint64_t tagSeq;
  uint64_t tagDesc;
  uint64_t bytes;
};

// One FIFO's control and headers in the host segment.
inline size_t fifoHostBytes(int nslots) { return sizeof(FifoControl) + nslots * sizeof(SlotHeader); }

}  // namespace strata::cuda
