#include "deferred_free.h"

#include <time.h>

#include <algorithm>
#include <mutex>

#include "clock.h"

namespace strata::cuda {
namespace {

std::mutex& keptMutex() {
  static auto* m = new std::mutex;
  return *m;
}

// Never destroyed: what is still kept at exit stays (the process's end
// frees it), rather than being released by a static destructor after CUDA
// may have shut down.
std::vector<DeferredFree>& kept() {
  static auto* items = new std::vector<DeferredFree>;
  return *items;
}

}  // namespace

bool claimMapping(MappingWord* word) {
  uint32_t expected = kNeverMapped;
  return word->state.compare_exchange_strong(expected, kMapped, std::memory_order_acq_rel);
}

bool DeferredFree::ready() const {
  for (size_t i = 0; i < words.size(); ++i) {
    uint32_t state = kNeverMapped;
    if (words[i]->state.compare_exchange_strong(state, kWithdrawn, std::memory_order_acq_rel)) continue;
    if (state == kMapped && owners[i]->check().isOk()) return false;
  }
  return true;
}

void freeWhenUnmapped(DeferredFree item, double seconds) {
  const double deadline = nowSeconds() + seconds;
  long napNs = 100000;
  while (!item.ready() && nowSeconds() < deadline) {
    const timespec nap{0, napNs};
    nanosleep(&nap, nullptr);
    napNs = std::min(napNs * 2, 10000000L);
  }
  if (item.ready()) {
    item.release();
    return;
  }
  std::lock_guard<std::mutex> lock(keptMutex());
  kept().push_back(std::move(item));
}

void sweepDeferredFrees() {
  std::vector<DeferredFree> due;
  {
    std::lock_guard<std::mutex> lock(keptMutex());
    auto& items = kept();
    for (size_t i = 0; i < items.size();) {
      if (items[i].ready()) {
        due.push_back(std::move(items[i]));
        items.erase(items.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }
  // Outside the lock: a release calls CUDA, which may take a while.
  for (DeferredFree& item : due) item.release();
}

size_t deferredFrees() {
  std::lock_guard<std::mutex> lock(keptMutex());
  return kept().size();
}

}  // namespace strata::cuda
