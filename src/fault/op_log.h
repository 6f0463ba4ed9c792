// What a rank has been doing on a communicator, kept always: the collectives
// it issued (sequence number, what they were, when) and which of them its
// caller saw complete. Written by the thread that calls the communicator, a
// few relaxed stores and one coarse clock read per call (a second read at
// completion cost 2% of an 8-byte allreduce); read by another
// thread (the control plane's, answering a stall report) through atomics
// alone, so that a rank stuck in its own code, or in a call, still answers.
// Sends and receives are not logged: the report is about collectives, which
// every rank must issue in the same order.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>

namespace strata::fault {

// A rank's log as it crosses the wire: plain data, times as ages in seconds
// (each rank's clock is its own).
struct OpSnapshot {
  static constexpr int kRecent = 8;
  struct Op {
    uint64_t seq;   // 0: no operation
    uint64_t desc;  // OpDesc::pack()
    float issuedAgo;
    uint32_t done;  // its caller saw it complete
  };
  int32_t rank;
  uint32_t reserved;
  uint64_t issued;     // the last collective issued (0: none yet)
  uint64_t completed;  // the last one whose completion the caller saw
  Op recent[kRecent];  // the last kRecent issued, oldest first
};

class OpLog {
 public:
  // A second resolution is plenty for a stall; the coarse clock costs a few
  // nanoseconds where the precise one costs tens, on every call.
  static double coarseNow() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }

  void issued(uint64_t seq, uint64_t desc) {
    Slot& s = slots_[seq % OpSnapshot::kRecent];
    s.seq.store(0, std::memory_order_relaxed);  // a reader skips the slot while it changes
    s.desc.store(desc, std::memory_order_relaxed);
    s.issuedAt.store(coarseNow(), std::memory_order_relaxed);
    s.seq.store(seq, std::memory_order_release);
    issued_.store(seq, std::memory_order_release);
  }
  void done(uint64_t seq) {
    if (seq > completed_.load(std::memory_order_relaxed)) completed_.store(seq, std::memory_order_release);
  }

  OpSnapshot snapshot(int rank) const {
    OpSnapshot out{};
    const double now = coarseNow();
    out.rank = rank;
    out.issued = issued_.load(std::memory_order_acquire);
    out.completed = completed_.load(std::memory_order_acquire);
    int n = 0;
    const uint64_t first = out.issued >= OpSnapshot::kRecent ? out.issued - OpSnapshot::kRecent + 1 : 1;
    for (uint64_t seq = first; seq <= out.issued && seq != 0; ++seq) {
      const Slot& s = slots_[seq % OpSnapshot::kRecent];
      if (s.seq.load(std::memory_order_acquire) != seq) continue;
      out.recent[n++] = {seq, s.desc.load(std::memory_order_relaxed),
                         static_cast<float>(now - s.issuedAt.load(std::memory_order_relaxed)), seq <= out.completed};
    }
    return out;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> seq{0};
    std::atomic<uint64_t> desc{0};
    std::atomic<double> issuedAt{0};
  };
  Slot slots_[OpSnapshot::kRecent];
  std::atomic<uint64_t> issued_{0};
  std::atomic<uint64_t> completed_{0};
};

}  // namespace strata::fault
