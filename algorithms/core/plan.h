// A plan: per channel, the list of steps one rank executes for one collective.
// Each step is a primitive on connectors (the names follow NCCL's): it moves
// one chunk from a receive connector and/or the user's input to a send
// connector and/or the user's output. Steps run strictly in order; the
// pipelining comes from the connectors' FIFOs, which let a sender run ahead of
// its receiver by up to nslots chunks.
#pragma once

#include <cstdint>
#include <vector>

namespace strata {

enum class Prim : uint8_t {
  Copy,                // out <- in                          (no peers: one rank)
  Send,                // slot(next) <- in
  Recv,                // out <- slot(prev)
  RecvReduceSend,      // slot(next) <- slot(prev) op in
  RecvReduceCopySend,  // out, slot(next) <- finish(slot(prev) op in)
  RecvCopySend,        // out, slot(next) <- slot(prev)
  ReduceAll,           // out <- finish(in_0 op in_1 op ... op in_{n-1}), in rank
                       // order, own input from `in`, the others' from their slots
};

struct Step {
  Prim prim;
  int32_t recvPeer;  // rank to receive from, -1 if none
  int32_t sendPeer;  // rank to send to, -1 if none
  uint64_t offset;   // element offset into the input and output buffers
  uint64_t count;    // elements
};

struct ChannelPlan {
  std::vector<Step> steps;
};

const char* primName(Prim prim);

}  // namespace strata
