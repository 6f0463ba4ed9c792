// When a rank may free the GPU memory its local peers map. CUDA's IPC rules
// make freeing an exported allocation before every importer has closed its
// mapping undefined, and a communicator's ranks are destroyed one by one, in
// any order (one thread destroying several ranks of its process in turn).
// So each importer owns a word in the exporter's shared segment, set once
// it maps the memory and again once it has closed the mapping; the exporter
// frees when every word says closed or never mapped, or the importer's
// process is gone. Nothing here touches CUDA: the caller's release does.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "peer_watch.h"

namespace strata::cuda {

enum MappingState : uint32_t { kNeverMapped = 0, kMapped = 1, kClosed = 2 };

// One importer's word; written by it, read by the exporter.
struct alignas(64) MappingWord {
  std::atomic<uint32_t> state;
  char pad[64 - sizeof(std::atomic<uint32_t>)];
};

// What an exporter leaves when it is done with its memory.
struct DeferredFree {
  std::vector<MappingWord*> words;                 // one per importer
  std::vector<std::shared_ptr<PeerWatch>> owners;  // each word's importer, same order
  std::function<void()> release;                   // frees the memory and unmaps the words
  // Every importer closed, never mapped, or exited.
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
