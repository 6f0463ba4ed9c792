// A plan: per channel, the list of steps one rank executes for one operation.
// Each step is a primitive on connectors (the names follow NCCL's): it moves
// one chunk from a receive connector and/or the user's input to a send
// connector and/or the user's output. Steps run strictly in order; the
// pipelining comes from the connectors' FIFOs, which let a sender run ahead of
// its receiver by up to nslots chunks.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "layout.h"

namespace strata {

enum class Prim : uint8_t {
  Copy,                // out <- in                          (no peers: one rank)
  Send,                // slot(next) <- in
  CopySend,            // out, slot(next) <- in   (one read of in for both)
  Recv,                // out <- slot(prev)
  RecvReduceSend,      // slot(next) <- slot(prev) op in
  RecvReduceCopySend,  // out, slot(next) <- finish(slot(prev) op in)
  RecvCopySend,        // out, slot(next) <- slot(prev)
  RecvReduceCopy,      // out <- finish(slot(prev) op in)
  ReduceAll,           // out <- finish(in_0 op in_1 op ... op in_{n-1}), in rank
                       // order, own input from `in`, the others' from their slots
};

struct Step {
  Prim prim;
  uint16_t msg;        // which message of the operation (0 unless it has several)
  int32_t recvPeer;    // rank to receive from, -1 if none
  int32_t sendPeer;    // rank to send to, -1 if none
  uint64_t inOffset;   // element offset into the message's input
  uint64_t outOffset;  // element offset into the message's output
  uint64_t count;      // elements
  uint8_t flags = 0;   // StepFlags
};

// Modifiers of a step, for algorithms in several phases that keep partial
// results in the output, or in the operation's scratch region, between phases.
enum StepFlags : uint8_t {
  kInFromOutput = 1,  // `in` is the message's output, not its input
  kPartial = 2,       // a reduced result that is not final: no finishing (avg's division)
  kOwnFirst = 4,      // reduce as `in op slot` rather than `slot op in`, so two ranks
                      // folding each other's values evaluate the same expression
  kInFromScratch = 8,   // `in` is OpContext::scratch at inOffset (host memory only)
  kOutToScratch = 16,   // `out` is OpContext::scratch at outOffset (host memory only)
  kScratch = kInFromScratch | kOutToScratch,
  // A Recv whose bytes may be written into the output as soon as they
  // arrive, before the steps ahead of it run (RecvConnector::post): every
  // earlier step that reads or writes that range does so before this rank
  // sends what the peer needs to send these bytes (causally before them),
  // or none does.
  kLandsEarly = 32,
};

struct ChannelPlan {
  std::vector<Step> steps;
};
using PlanSet = std::vector<ChannelPlan>;  // an operation's plans, one per channel

// What every builder needs to know about the communicator and the datatype.
struct PlanShape {
  int rank;
  int nranks;
  int nchannels;
  size_t slotBytes;
  size_t elemSize;
  // Which ranks share a node, and the order rings and trees walk; null:
  // all ranks on one node, in rank order. Owned by the communicator.
  const Layout* layout = nullptr;

  // The rank at position i of the walking order, and a rank's position.
  int rankAt(int i) const { return layout ? layout->order[i] : i; }
  int posOf(int r) const { return layout ? layout->posOf[r] : r; }

  // Chunk boundaries fall on multiples of this many elements (64 bytes), so
  // kernels see vector-aligned blocks.
  uint64_t alignElems() const { return std::max<uint64_t>(1, 64 / elemSize); }
  // The most elements one slot carries, aligned.
  uint64_t slotElems() const { return slotBytes / elemSize / alignElems() * alignElems(); }
  // Channels for an operation moving `totalBytes` (all ranks' blocks): one
  // per slot's worth of data per rank, at most nchannels, so small
  // operations stay on one.
  int channelsFor(uint64_t totalBytes) const {
    uint64_t perRankSlots = totalBytes / (slotBytes * std::max(1, nranks));
    return static_cast<int>(std::clamp<uint64_t>(perRankSlots, 1, nchannels));
  }
};

// Channel `ch`'s share [begin, end) of `count` elements split over `nch`
// channels in aligned contiguous ranges (empty for trailing channels when
// there is little data). Every rank computes the same split from count.
struct Range {
  uint64_t begin, end;
};
inline Range channelRange(uint64_t count, int nch, int ch, uint64_t align) {
  uint64_t per = (count + nch - 1) / nch;
  per = (per + align - 1) / align * align;
  uint64_t begin = std::min<uint64_t>(count, uint64_t(ch) * per);
  return {begin, std::min<uint64_t>(count, begin + per)};
}

// Clears plans[0..nchannels) and calls fn(steps, offset, len) for each
// slot-sized chunk of every channel's share of `count` elements, in order.
template <typename Fn>
void forEachChunk(const PlanShape& shape, uint64_t count, int nchannels, std::vector<ChannelPlan>& plans,
                  Fn fn) {
  const uint64_t slotElems = shape.slotElems();
  for (int ch = 0; ch < nchannels; ++ch) {
    auto& steps = plans[ch].steps;
    steps.clear();
    auto [begin, end] = channelRange(count, nchannels, ch, shape.alignElems());
    for (uint64_t off = begin; off < end; off += slotElems) fn(steps, off, std::min(slotElems, end - off));
  }
}

// Clears plans[0..nchannels) and calls fn(steps, range) with each channel's
// non-empty share of `count` elements; a single rank only copies its share.
template <typename Fn>
void forEachChannel(const PlanShape& shape, uint64_t count, int nchannels, std::vector<ChannelPlan>& plans,
                    Fn fn) {
  for (int ch = 0; ch < nchannels; ++ch) {
    auto& steps = plans[ch].steps;
    steps.clear();
    const Range all = channelRange(count, nchannels, ch, shape.alignElems());
    if (all.end <= all.begin) continue;
    if (shape.nranks == 1) steps.push_back({Prim::Copy, 0, -1, -1, all.begin, all.begin, all.end - all.begin});
    else fn(steps, all);
  }
}

const char* primName(Prim prim);

// The ranks other than `self` that `plans` send to or receive from, ascending:
// what the operation needs connected.
std::vector<int> peersOf(const PlanSet& plans, int self, int nranks);

}  // namespace strata
