// How a thread waits for peers while an operation is in flight: poll, and
// after `spins` fruitless polls give the core away with sched_yield. Never
// sleep while work is queued (a wake-up across cores costs tens of us here).
// With more ranks than cores, spinning only delays the rank we wait for, so
// the default then yields at once (see reference/machine-limits.md).
#pragma once

#include <sched.h>

#include <algorithm>
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
// once this many polls in a row found nothing to do. Each poll of a socket
// is a system call, so a thread with a core to itself spins only
// kSocketSpins of them, not the memory transports' budget.
constexpr int64_t kSocketSpins = 64;
// With more ranks than cores (spins == 0: a waiter yields after every poll)
// a waiter keeps polling and yielding this much longer before it sleeps.
// Sleeping there costs more than it saves: when every rank of a core sleeps,
// the core halts, and the peer's message must then wake a halted virtual
// core (tens of us here), while a yielding waiter keeps its core awake and
// hands it to the rank it waits for at once. Measured on 2 cores, 8-byte
// allreduce over TCP: 4 local ranks, rd 72 -> 34 us and ring 135 -> 44 us;
// 2 namespaces x 2 ranks, tree 63 -> 23 us.
constexpr int64_t kOversubscribedSocketPolls = 256;

// Fruitless polls in a row after which a thread waiting only on sockets
// sleeps on them; `spins` is the communicator's spin budget.
inline int64_t socketPollsBeforeSleep(int64_t spins) {
  return spins == 0 ? kOversubscribedSocketPolls : std::min(spins, kSocketSpins);
}
// How long such a sleep lasts at most, so deadlines and peers' health are
// still checked while an operation waits.
constexpr int kSocketSleepMs = 1;

// STRATA_SPIN, or the automatic choice from the host's load.
int64_t chooseSpins(int64_t configured, int localRanks, int hostCores);

}  // namespace strata
