// When a rank may free the GPU memory its local peers map. CUDA's IPC rules
// make freeing an exported allocation before every importer has closed its
// mapping undefined, and a communicator's ranks are destroyed one by one, in
// any order (one thread destroying several ranks of its process in turn).
// So each importer owns a word in the exporter's shared segment, claimed
// before it maps the memory and set again once it has closed the mapping;
// the exporter frees when every word says closed, or never mapped (which it
// then withdraws, so that a late importer cannot map what is being freed),
// or the importer's process is gone. Nothing here touches CUDA: the
// caller's release does.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "peer_watch.h"

namespace strata::cuda {

enum MappingState : uint32_t { kNeverMapped = 0, kMapped = 1, kClosed = 2, kWithdrawn = 3 };

// One importer's word, in the exporter's segment.
struct alignas(64) MappingWord {
  std::atomic<uint32_t> state;
  char pad[64 - sizeof(std::atomic<uint32_t>)];
};

// The importer's step before it maps the memory (then kClosed once it has
// closed it, or failed to map it). False where the exporter has withdrawn
// it: the memory is being freed.
bool claimMapping(MappingWord* word);

// What an exporter leaves when it is done with its memory.
struct DeferredFree {
  std::vector<MappingWord*> words;                 // one per importer
  std::vector<std::shared_ptr<PeerWatch>> owners;  // each word's importer, same order
  std::function<void()> release;                   // frees the memory and unmaps the words
  // Every importer closed, never mapped (withdrawn from then on), or exited.
  bool ready() const;
};

// Runs `item.release` once it is ready, waiting for that at most `seconds`;
// past that keeps it for a later sweep.
void freeWhenUnmapped(DeferredFree item, double seconds);

// Releases every kept item that has become ready. Each connect and teardown
// of the transport calls it.
void sweepDeferredFrees();

// Items kept and not yet released (for tests and the teardown's log line).
size_t deferredFrees();

}  // namespace strata::cuda
