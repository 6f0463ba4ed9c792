// How a thread waits for peers while an operation is in flight: poll, and
// after `spins` fruitless polls give the core away with sched_yield. Never
// sleep while work is queued (a wake-up across cores costs tens of us here).
// With more ranks than cores, spinning only delays the rank we wait for, so
// the default then yields at once (see reference/machine-limits.md).
#pragma once

#include <sched.h>

#include <cstdint>

namespace strata {

class WaitPolicy {
 public:
  explicit WaitPolicy(int64_t spins) : spins_(spins) {}

  // Call after each poll; `progressed` resets the count.
  void afterPoll(bool progressed) {
    if (progressed) {
      idle_ = 0;
    } else if (++idle_ > spins_) {
      sched_yield();
    }
  }

 private:
  int64_t spins_;
  int64_t idle_ = 0;
};

// A thread whose channels wait only on sockets sleeps on them (SleepSet)
// after this many fruitless polls: each poll of a socket is a system call,
// so the memory transports' spin budget would burn milliseconds, and on a
// host with more ranks than cores a sleeping rank leaves the core to the
// one it waits for (and to the kernel's network processing).
constexpr int64_t kSocketSpins = 64;
// How long such a sleep lasts at most, so deadlines and peers' health are
// still checked while an operation waits.
constexpr int kSocketSleepMs = 1;

// STRATA_SPIN, or the automatic choice from the host's load.
int64_t chooseSpins(int64_t configured, int localRanks, int hostCores);

}  // namespace strata
