// Allreduce algorithms. Each one's file defines its descriptor: its name, how
// it builds a rank's per-channel plans, what the cost model charges for it,
// and what it supports. registry.def lists them; selection, STRATA_ALGO and
// strata-info --algorithms read that list, and the build compiles the files
// it names. Every algorithm serves allreduce and barrier (an allreduce of one
// byte); its traits say what forcing it does to the other collectives.
//
// Plans depend only on (shape, count) and the layout every rank shares, so
// every rank builds matching plans without talking to the others.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "plan.h"

namespace strata {

struct CostView;

enum AllreduceTraits : uint32_t {
  // Connectors may send from the caller's memory (OpContext::sendFromCaller):
  // no step writes memory an earlier step sent from before the operation
  // ends. kInputStable says so for calls out of place, kInputStableInPlace
  // for calls in place, whose input is the output.
  kInputStable = 1,
  kInputStableInPlace = 2,
  // Each element's result is the same bits whatever the slot size and the
  // channel count: every element is folded in one fixed order of operands,
  // which the chunking does not move. (Every algorithm gives every rank the
  // same bits for one configuration.)
  kSameBitsAnyChunking = 4,
  // The whole buffer travels in one slot, on one channel; STRATA_ALGO
  // forcing it fails for a larger buffer.
  kOneSlot = 8,
  // The cost model picks it only up to STRATA_ONESHOT_BYTES.
  kUpToOneshotBytes = 16,
  // STRATA_ALGO forcing it also forces broadcast, reduce and reduce_scatter
  // to their direct (one-hop) or pipelined (chain, ring) form; otherwise
  // their size chooses (STRATA_ONESHOT_BYTES).
  kForcesDirect = 32,
  kForcesPipelined = 64,
  // Every element is in_0 op in_1 op ... op in_{n-1}, in rank order, on every
  // rank, at any chunking: the algorithms with it give each other's bits, so
  // reproducible mode (STRATA_REPRODUCIBLE) chooses among them alone.
  kRankOrder = 128,
  // The cost model considers it only in reproducible mode.
  kReproducibleOnly = 256,
};

struct AllreduceAlgorithm {
  const char* name;     // as STRATA_ALGO spells it
  const char* summary;  // what it does, for strata-info --algorithms
  // This rank's plans on `nchannels` channels (1 with kOneSlot).
  void (*build)(const PlanShape& shape, uint64_t count, int nchannels, std::vector<ChannelPlan>& plans);
  // The model's estimate of one allreduce of `bytes`, in microseconds, for
  // sizes within the limits (kOneSlot, kUpToOneshotBytes).
  double (*costUs)(const CostView& v, double bytes);
  uint32_t traits;  // AllreduceTraits

  bool has(uint32_t trait) const { return (traits & trait) == trait; }
  // Whether connectors may send from the caller's memory for this call.
  bool inputStable(bool inPlace) const { return has(inPlace ? kInputStableInPlace : kInputStable); }
};

// Every descriptor, declared from the registry; each is defined in its file.
#define STRATA_ALLREDUCE(descriptor, file) extern const AllreduceAlgorithm descriptor;
#include "registry.def"
#undef STRATA_ALLREDUCE

// In registry.def's order, which breaks the cost model's ties.
const std::vector<const AllreduceAlgorithm*>& allreduceAlgorithms();
// The algorithm STRATA_ALGO calls `name`, null if none.
const AllreduceAlgorithm* findAllreduce(const std::string& name);

}  // namespace strata
