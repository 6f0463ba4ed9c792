// How a shared-memory send connector writes the slots it fills with plain
// copies: regular or non-temporal stores, chosen per kind of operation by
// timing both.
//
// With regular stores a slot's bytes sit in the sender's cache and the
// receiver pulls them from there line by line; with non-temporal stores they
// go to memory and the receiver reads them from DRAM. Which is faster
// depends on how far apart the two cores are: on one core complex cache to
// cache wins, across sockets (or in a VM whose vCPUs the host places apart)
// it collapses and memory wins, and a VM's placement changes while a job
// runs. So each connector times the operations that move at least
// STRATA_SHM_NT_BYTES through it, both ways, keeps the faster and tries the
// other again now and then (bench/README.md has the measurements). The
// choice is the sender's alone: the receiver reads a slot the same way
// whichever stores filled it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "clock.h"
#include "connector.h"

namespace strata::shm {

// Regular against non-temporal stores for one kind of operation.
class StoreChoice {
 public:
  // Whether the next timed operation uses non-temporal stores (now and then
  // the way that is not the best, a look, to measure it again).
  bool next();
  // The best way measured so far.
  bool best() const;
  // An operation run with `nonTemporal` moved `bytes` in `seconds`.
  void record(bool nonTemporal, uint64_t bytes, double seconds);

 private:
  // A look costs its operation the difference between the ways (twice the
  // time or more where the other loses), and a VM's placement holds for
  // seconds to minutes: the first look comes after kLookMin operations, and
  // each that finds the best unchanged doubles the wait, up to kLookMax
  // operations; a change of the best, by a look or not, shortens it to
  // kLookMin again. A short first wait matters: the alternating operations
  // can still pay for first touches (2 ranks at 512 KiB, cores close: the
  // fourth, regular, took 0.25 ms, then 0.03 once warm, while non-temporal
  // ones took 0.05), and until the next look such a misjudgment stands.
  static constexpr uint64_t kLookMin = 8;
  static constexpr uint64_t kLookMax = 512;
  // The first operations alternate, so that each way is measured twice
  // before one is picked (the first operation on a buffer also pays for
  // touching its pages).
  static constexpr uint64_t kAlternate = 4;
  // Non-temporal stores must be this much faster to be kept: one
  // operation's time varies by more than the small difference there is when
  // the cores are close (more so with more ranks than cores), while far
  // apart they win by several times.
  static constexpr double kMargin = 1.25;
  // Seconds per byte of each way's last operation (0: none yet).
  double secondsPerByte_[2] = {0, 0};
  uint64_t ops_ = 0;
  uint64_t wait_ = kLookMin;      // operations from one look to the next
  uint64_t nextLook_ = kLookMin;  // the operation that looks next
  bool looking_ = false;          // the operation under way is a look
};

// One connector's operations, told apart by their slot tags. An operation's
// time runs from its first full slot to its last publish; the sender is held
// back by the receiver through the FIFO, so that is the pace of the pair.
class SlotStores {
 public:
  // minOpBytes: operations moving fewer bytes through this connector are
  // never timed and use regular stores (0: none is).
  SlotStores(size_t slotBytes, uint64_t minOpBytes) : slotBytes_(slotBytes), minOpBytes_(minOpBytes) {}

  // Whether a plain copy of `bytes` into a slot of operation `tag` uses
  // non-temporal stores.
  bool nonTemporal(const SlotTag& tag, size_t bytes) {
    if (bytes != slotBytes_ || minOpBytes_ == 0) return false;
    if (!isCurrent(tag)) begin(tag);
    return current_.nonTemporal;
  }
  // A slot of `bytes` of operation `tag` was published.
  void published(const SlotTag& tag, size_t bytes) {
    if (!isCurrent(tag)) {
      // Only operations with full slots can be large enough to time.
      if (bytes != slotBytes_ || minOpBytes_ == 0) return;
      begin(tag);
    }
    current_.bytes += bytes;
    if (current_.timed) current_.lastPublish = nowSeconds();
  }

 private:
  // What is remembered of one kind of operation (its packed description:
  // collective, datatype, op and count).
  struct Kind {
    uint64_t desc = 0;
    uint64_t bytes = 0;  // through this connector, last time
    StoreChoice choice;
  };
  struct Current {
    SlotTag tag{0, 0};
    Kind* kind = nullptr;
    bool nonTemporal = false;
    bool timed = false;
    uint64_t bytes = 0;
    double start = 0;
    double lastPublish = 0;
  };
  static constexpr size_t kKinds = 8;

  bool isCurrent(const SlotTag& tag) const {
    return tag.seq == current_.tag.seq && tag.desc == current_.tag.desc;
  }
  // Closes the operation before (recording its time) and picks this one's stores.
  void begin(const SlotTag& tag);

  // What every publish reads first, together.
  size_t slotBytes_;
  uint64_t minOpBytes_;
  Current current_;
  std::array<Kind, kKinds> kinds_{};
  size_t nextKind_ = 0;  // the entry a new kind replaces
};

}  // namespace strata::shm
