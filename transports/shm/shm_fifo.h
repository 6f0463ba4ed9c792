// Memory layout of one shared-memory FIFO (one sender, one receiver, one
// channel). It lives in the receiver's segment; the sender writes slots, the
// receiver writes `consumed`. Fields written by different sides sit on
// different cache lines so polling one side does not steal the other's line.
//
// A slot is published by storing its generation (1 + the slot's index in the
// stream) with release order after its payload and tag; the receiver polls
// that word. Payloads up to kInlineBytes ride in the header's own cache line,
// so a tiny message costs one cache-line transfer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace strata::shm {

constexpr size_t kCacheLine = 64;
constexpr size_t kInlineBytes = 32;

// Atomics shared between processes must be the instructions themselves:
// where one fell back to a lock (libatomic's table), each process would
// take a lock of its own.
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free,
              "shared-memory FIFOs need lock-free 32- and 64-bit atomics");

struct alignas(kCacheLine) FifoControl {
  std::atomic<uint64_t> consumed;  // slots released by the receiver
  char pad0[kCacheLine - sizeof(std::atomic<uint64_t>)];
  std::atomic<uint32_t> aborted;  // set by either side, never cleared
  char pad1[kCacheLine - sizeof(std::atomic<uint32_t>)];
};

struct alignas(kCacheLine) SlotHeader {
  std::atomic<uint64_t> generation;
  uint64_t tagSeq;
  uint64_t tagDesc;
  uint64_t bytes;
  unsigned char inlineData[kInlineBytes];
};
static_assert(sizeof(SlotHeader) == kCacheLine, "a slot header is one cache line");

// Offsets of one FIFO's parts, relative to the FIFO's start.
struct FifoLayout {
  size_t slotBytes;  // payload bytes per slot, a multiple of 4 KiB
  int nslots;

  size_t headersOffset() const { return sizeof(FifoControl); }
  size_t payloadOffset() const {
    size_t end = headersOffset() + nslots * sizeof(SlotHeader);
    return (end + 4095) & ~size_t(4095);
  }
  size_t totalBytes() const { return payloadOffset() + slotBytes * nslots; }
};

}  // namespace strata::shm
