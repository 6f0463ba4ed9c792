#include "ib_mr_cache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "log.h"
#include "status.h"

namespace strata::ib {
namespace {

constexpr uint64_t kPresent = 1ull << 63;
constexpr uint64_t kFrameMask = (1ull << 55) - 1;

uintptr_t pageSize() {
  static const uintptr_t size = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

bool MrCache::usable() {
  // Frame numbers read as zero without CAP_SYS_ADMIN: look at one page of
  // our own stack, which is certainly present.
  static const bool ok = [] {
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    volatile char probe = 1;
    uint64_t entry = 0;
    const off_t at = static_cast<off_t>(reinterpret_cast<uintptr_t>(&probe) / pageSize() * sizeof(entry));
    const bool readable = pread(fd, &entry, sizeof(entry), at) == sizeof(entry);
    close(fd);
    const bool frames = readable && (entry & kPresent) && (entry & kFrameMask) != 0;
    if (!frames)
      STRATA_INFO(NET, "ib: /proc/self/pagemap shows no page frames to this process (needs CAP_SYS_ADMIN): "
                  "sends copy through slots instead of registering the caller's buffers");
    return frames;
  }();
  return ok;
}

MrCache::MrCache(ibv_pd* pd, size_t maxEntries) : pd_(pd), maxEntries_(maxEntries) {
  pagemap_ = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
}

MrCache::~MrCache() {
  while (!entries_.empty()) drop(entries_.begin());
  if (pagemap_ >= 0) close(pagemap_);
}

bool MrCache::framesOf(uintptr_t begin, uintptr_t end, std::vector<uint64_t>* frames) const {
  const size_t pages = (end - begin) / pageSize();
  frames->resize(pages);
  const size_t want = pages * sizeof(uint64_t);
  const off_t at = static_cast<off_t>(begin / pageSize() * sizeof(uint64_t));
  if (pagemap_ < 0 || pread(pagemap_, frames->data(), want, at) != static_cast<ssize_t>(want)) return false;
  for (uint64_t& f : *frames) {
    if (!(f & kPresent) || (f & kFrameMask) == 0) return false;
    f &= kFrameMask;
  }
  return true;
}

void MrCache::drop(Entries::iterator it) {
  ibv_dereg_mr(it->second.mr);
  entries_.erase(it);
}

uint32_t MrCache::lookup(const void* addr, size_t bytes, uint64_t epoch, bool idle) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(addr) & ~(pageSize() - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(addr) + bytes + pageSize() - 1) & ~(pageSize() - 1);
  ++lookups_;
  auto it = entries_.lower_bound(end);
  if (it != entries_.end() && it->second.begin <= begin) {
    Entry& e = it->second;
    if (e.epoch != epoch) {
      // Only this operation's pages matter, but a registration is all or
      // nothing: any changed page makes the whole of it stale.
      std::vector<uint64_t> now;
      if (!framesOf(e.begin, it->first, &now) || now != e.frames) {
        STRATA_TRACE(NET, "ib: registration of [%#lx, %#lx) is stale: its pages changed", (unsigned long)e.begin,
                     (unsigned long)it->first);
        if (!idle) return 0;  // an older operation may still read through it
        drop(it);
        it = entries_.end();
      } else {
        e.epoch = epoch;
      }
    }
    if (it != entries_.end()) {
      e.lastUse = lookups_;
      return e.mr->lkey;
    }
  }
  // The new registration takes the place of one ending at the same address
  // (a shorter one), and of the least recently used when the cache is full;
  // either may still be read by an earlier operation's writes unless idle.
  auto same = entries_.find(end);
  const bool full = entries_.size() >= maxEntries_;
  if ((same != entries_.end() || full) && !idle) return 0;
  if (same != entries_.end()) {
    drop(same);
  } else if (full) {
    // A scan, but only when full.
    auto oldest = entries_.begin();
    for (auto i = entries_.begin(); i != entries_.end(); ++i)
      if (i->second.lastUse < oldest->second.lastUse) oldest = i;
    drop(oldest);
  }
  ibv_mr* mr = ibv_reg_mr(pd_, reinterpret_cast<void*>(begin), end - begin, IBV_ACCESS_LOCAL_WRITE);
  if (!mr) {
    STRATA_TRACE(NET, "ib: ibv_reg_mr of %zu bytes failed: %s", static_cast<size_t>(end - begin),
                 strata::errnoText(errno).c_str());
    return 0;
  }
  Entry entry{begin, mr, {}, epoch, lookups_};
  if (!framesOf(begin, end, &entry.frames)) {
    ibv_dereg_mr(mr);
    return 0;
  }
  entries_.emplace(end, std::move(entry));
  return mr->lkey;
}

}  // namespace strata::ib
