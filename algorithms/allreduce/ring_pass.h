// Ring building blocks over any ordered group of ranks. The flat ring is one
// group of every rank; the hierarchical allreduce runs them over a node's
// ranks and over one rank per node.
//
// A slice of `elems` elements splits into n aligned blocks (trailing blocks
// may be empty); block i of the slice is finished by the member at position
// i, as in NCCL's ring.
#pragma once

#include <vector>

#include "plan.h"

namespace strata {

struct RingGroup {
  const int* members;  // ranks in ring order
  int n;
  int pos;             // this rank's index in members
};

// Block b of a slice of `elems` split n ways.
Range ringBlock(uint64_t elems, int n, int b, uint64_t align);

// Allreduce of the slice at `off` (at most n slots' worth): reduce-scatter
// then allgather. `inFlags` say where the slice's input lives (kInFromOutput
// for a phase after another). A group of one copies in to out.
void appendRingAllreduce(std::vector<Step>& steps, const RingGroup& g, uint64_t off, uint64_t elems,
                         uint64_t align, uint8_t inFlags);

// Reduce-scatter only: this member's block of the slice ends in the output,
// reduced over the group but not finished (kPartial). Nothing for one member.
// Blocks may span several slots: the ring goes round once per `stepElems`
// (at most a slot) of a block, each step moving that part of one block.
void appendRingReduceScatter(std::vector<Step>& steps, const RingGroup& g, uint64_t off, uint64_t elems,
                             uint64_t align, uint64_t stepElems);

// Allgather only: this member's block goes from the output to every member's
// output, `stepElems` of each block per round. Nothing for one member.
void appendRingAllgather(std::vector<Step>& steps, const RingGroup& g, uint64_t off, uint64_t elems,
                         uint64_t align, uint64_t stepElems);

}  // namespace strata
