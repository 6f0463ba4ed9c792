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

void MrCache::drop(std::list<Entry>::iterator it) {
  ibv_dereg_mr(it->mr);
  entries_.erase(it);
}

uint32_t MrCache::lookup(const void* addr, size_t bytes, uint64_t epoch, bool idle) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(addr) & ~(pageSize() - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(addr) + bytes + pageSize() - 1) & ~(pageSize() - 1);
  std::vector<uint64_t> now;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->begin > begin || it->end < end) continue;
    if (it->epoch != epoch) {
      // Only this operation's pages matter, but a registration is all or
      // nothing: any changed page makes the whole of it stale.
      if (!framesOf(it->begin, it->end, &now) || now != it->frames) {
        ++stale_;
        STRATA_TRACE(NET, "ib: registration of [%#lx, %#lx) is stale: its pages changed", (unsigned long)it->begin,
                     (unsigned long)it->end);
        if (!idle) return 0;  // an older operation may still read through it
        drop(it);
        break;
      }
      it->epoch = epoch;
    }
    entries_.splice(entries_.begin(), entries_, it);
    return it->mr->lkey;
  }
  if (entries_.size() >= maxEntries_) {
    if (!idle) return 0;
    drop(std::prev(entries_.end()));
  }
  ibv_mr* mr = ibv_reg_mr(pd_, reinterpret_cast<void*>(begin), end - begin, IBV_ACCESS_LOCAL_WRITE);
  if (!mr) {
    STRATA_TRACE(NET, "ib: ibv_reg_mr of %zu bytes failed: %s", static_cast<size_t>(end - begin),
                 strata::errnoText(errno).c_str());
    return 0;
  }
  Entry entry{begin, end, mr, {}, epoch};
  if (!framesOf(begin, end, &entry.frames)) {
    ibv_dereg_mr(mr);
    return 0;
  }
  entries_.push_front(std::move(entry));
  return mr->lkey;
}

}  // namespace strata::ib
