// Registrations of the caller's buffers, so that sends can go out of them
// without a copy into a slot. Each is registered once and reused; before a
// registration serves a new operation, the page frames behind its range are
// compared with the ones pinned when it was made (/proc/self/pagemap). A
// buffer freed and allocated again at the same address is backed by other
// frames (the old ones stay pinned by the registration), so the stale
// registration is dropped and the range registered afresh instead of sending
// the old pages' bytes. Processes that cannot read frame numbers (they need
// CAP_SYS_ADMIN) do not cache at all: every send then goes through a slot.
//
// One cache per link: a link's connectors are driven by one thread at a time,
// and they alone know when a registration is no longer in flight.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <vector>

namespace strata::ib {

class MrCache {
 public:
  MrCache(ibv_pd* pd, size_t maxEntries);
  ~MrCache();
  MrCache(const MrCache&) = delete;
  MrCache& operator=(const MrCache&) = delete;

  // Whether this process can validate registrations (see above).
  static bool usable();

  // The local key of a registration covering [addr, addr + bytes), valid for
  // operation `epoch`, or 0 when there is none to be had (registration failed,
  // or the cache is full of registrations still in flight). `idle` says that
  // no registration is in flight, so any may be dropped.
  uint32_t lookup(const void* addr, size_t bytes, uint64_t epoch, bool idle);

 private:
  struct Entry {
    uintptr_t begin;
    ibv_mr* mr;
    std::vector<uint64_t> frames;  // pagemap frame number of each page
    uint64_t epoch;                // last operation it was validated for
    uint64_t lastUse;              // lookups so far when it last served one
  };
  // Keyed by end address: the first entry ending at or after a range's end
  // is the one to try (registrations of a buffer's chunks do not overlap).
  using Entries = std::map<uintptr_t, Entry>;
  bool framesOf(uintptr_t begin, uintptr_t end, std::vector<uint64_t>* frames) const;
  void drop(Entries::iterator it);

  ibv_pd* pd_;
  size_t maxEntries_;
  int pagemap_ = -1;
  Entries entries_;
  uint64_t lookups_ = 0;
};

}  // namespace strata::ib
