// What a rank has been doing on a communicator, kept always: the collectives
// it issued (sequence number, what they were, when) and which of them its
// caller saw complete. Written by the thread that calls the communicator, a
// few relaxed stores and one coarse clock read per call (a second read at
// completion cost 2% of an 8-byte allreduce), or by the progress thread
// that ends a stream-ordered operation (doneOffThread); read by another
// thread (the control plane's, answering a stall report) through atomics
// alone, so that a rank stuck in its own code, or in a call, still answers.
// Each slot is a sequence lock: the writer zeroes its key (a collective's
// seq, a message's write number), fences, writes the fields and stores the
// key; the reader keeps a slot only if the key reads the same before and
// after its fields. The fences are no instructions on x86-64, whose stores
// stay in order anyway; aarch64's do not, and without them a reader could
// take new fields under an old key.
// Sends and receives are logged apart, each with its peer: collectives carry
// the order every rank must follow, sends and receives only their pairs'.
#pragma once

#include <time.h>

#include <algorithm>
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
  static constexpr int kRecentP2p = 8;
  struct P2p {
    uint64_t group;  // 0: none; sends and receives issued together share one
    uint64_t bytes;
    int32_t peer;
    uint32_t send;   // 1: a send to peer, 0: a receive from it
    float issuedAgo;
    uint32_t done;
  };
  int32_t rank;
  uint32_t reserved;
  uint64_t issued;     // the last collective issued (0: none yet)
  uint64_t completed;  // the last one whose completion the caller saw
  Op recent[kRecent];  // the last kRecent issued, oldest first
  P2p p2p[kRecentP2p];  // the last sends and receives, oldest first
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
    std::atomic_thread_fence(std::memory_order_release);
    s.desc.store(desc, std::memory_order_relaxed);
    s.issuedAt.store(coarseNow(), std::memory_order_relaxed);
    s.seq.store(seq, std::memory_order_release);
    issued_.store(seq, std::memory_order_release);
  }
  // The calling thread's: plain stores, no read-modify-write (a locked
  // instruction would cost a few percent of an 8-byte allreduce).
  void done(uint64_t seq) {
    if (seq > completed_.load(std::memory_order_relaxed)) completed_.store(seq, std::memory_order_release);
  }
  // A progress thread's, ending a stream-ordered operation that nobody waits
  // on (several threads may at once).
  void doneOffThread(uint64_t seq) {
    uint64_t seen = completedOffThread_.load(std::memory_order_relaxed);
    while (seq > seen && !completedOffThread_.compare_exchange_weak(seen, seq, std::memory_order_release,
                                                                    std::memory_order_relaxed)) {
    }
  }

  // A group of sends and receives (one, or those of a strata_group): its
  // id, then each of its messages.
  uint64_t p2pGroup() { return ++p2pGroups_; }
  // The key is the write's own number, not the group: a group may hold more
  // messages than there are slots, and one of its messages rewriting
  // another's slot must change the key.
  void p2pIssued(uint64_t group, int peer, uint64_t bytes, bool send) {
    const uint64_t write = p2pNext_++;
    P2pSlot& s = p2p_[write % OpSnapshot::kRecentP2p];
    s.key.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.group.store(group, std::memory_order_relaxed);
    s.peer.store(peer, std::memory_order_relaxed);
    s.bytes.store(bytes, std::memory_order_relaxed);
    s.send.store(send, std::memory_order_relaxed);
    s.doneGroup.store(0, std::memory_order_relaxed);
    s.issuedAt.store(coarseNow(), std::memory_order_relaxed);
    s.key.store(write + 1, std::memory_order_release);
  }
  // May run on a progress thread while the caller's thread issues: a slot
  // found holding `group` may hold another message by the time of the
  // store, so the store names the group, and a message counts as done only
  // where it names the message's own.
  void p2pDone(uint64_t group) {
    if (group == 0) return;
    for (P2pSlot& s : p2p_)
      if (s.group.load(std::memory_order_relaxed) == group) s.doneGroup.store(group, std::memory_order_release);
  }

  OpSnapshot snapshot(int rank) const {
    OpSnapshot out{};
    const double now = coarseNow();
    out.rank = rank;
    out.issued = issued_.load(std::memory_order_acquire);
    out.completed = std::max(completed_.load(std::memory_order_acquire),
                             completedOffThread_.load(std::memory_order_acquire));
    int n = 0;
    const uint64_t first = out.issued >= OpSnapshot::kRecent ? out.issued - OpSnapshot::kRecent + 1 : 1;
    for (uint64_t seq = first; seq <= out.issued && seq != 0; ++seq) {
      const Slot& s = slots_[seq % OpSnapshot::kRecent];
      if (s.seq.load(std::memory_order_acquire) != seq) continue;
      const OpSnapshot::Op op{seq, s.desc.load(std::memory_order_relaxed),
                              static_cast<float>(now - s.issuedAt.load(std::memory_order_relaxed)),
                              seq <= out.completed};
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s.seq.load(std::memory_order_relaxed) != seq) continue;  // rewritten while read
      out.recent[n++] = op;
    }
    const uint64_t next = p2pNext_;  // read racily: at worst a message shows in the wrong place
    for (int k = 0; k < OpSnapshot::kRecentP2p; ++k) {
      const P2pSlot& s = p2p_[(next + k) % OpSnapshot::kRecentP2p];
      const uint64_t key = s.key.load(std::memory_order_acquire);
      if (key == 0) continue;
      const uint64_t group = s.group.load(std::memory_order_relaxed);
      const OpSnapshot::P2p msg{group, s.bytes.load(std::memory_order_relaxed), s.peer.load(std::memory_order_relaxed),
                                s.send.load(std::memory_order_relaxed),
                                static_cast<float>(now - s.issuedAt.load(std::memory_order_relaxed)),
                                s.doneGroup.load(std::memory_order_acquire) == group};
      std::atomic_thread_fence(std::memory_order_acquire);
      if (s.key.load(std::memory_order_relaxed) != key || group == 0) continue;  // rewritten while read
      out.p2p[k] = msg;
    }
    return out;
  }

 private:
  struct Slot {
    std::atomic<uint64_t> seq{0};
    std::atomic<uint64_t> desc{0};
    std::atomic<double> issuedAt{0};
  };
  struct P2pSlot {
    std::atomic<uint64_t> key{0};  // 1 + the write's number; 0: being written or never
    std::atomic<uint64_t> group{0};
    std::atomic<uint64_t> bytes{0};
    std::atomic<int32_t> peer{0};
    std::atomic<bool> send{false};
    std::atomic<uint64_t> doneGroup{0};  // the group p2pDone last named here
    std::atomic<double> issuedAt{0};
  };
  Slot slots_[OpSnapshot::kRecent];
  std::atomic<uint64_t> issued_{0};
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> completedOffThread_{0};
  P2pSlot p2p_[OpSnapshot::kRecentP2p];
  uint64_t p2pGroups_ = 0;  // the calling thread's alone
  std::atomic<uint64_t> p2pNext_{0};
};

}  // namespace strata::fault
