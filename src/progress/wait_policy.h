// How a thread waits for peers while an operation is in flight: poll, and
// after `spins` fruitless polls give the core away with sched_yield. Sleep
// only once a wait has gone on for milliseconds (kYieldsBeforeNap): a
// wake-up across cores costs tens of us here, next to which a wait that
// long has room to spare. With more ranks than cores, spinning only delays
// the rank we wait for, so the default then yields at once (see
// reference/machine-limits.md).
#pragma once

#include <sched.h>
#include <time.h>

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
      napNs_ = kFirstNapNs;
      return;
    }
    if (++idle_ <= spins_) return;
    if (idle_ - spins_ <= kYieldsBeforeNap) sched_yield();
    else nap();
  }

  // Fruitless polls past the spin budget after which a waiter naps rather
  // than yields: a yield that finds no other thread to run returns at once,
  // so a waiter alone on its core (a peer still computing, a deadline
  // running out) would keep the core busy for nothing, and beside other
  // jobs or test programs take it from them. A few milliseconds' worth.
  static constexpr int64_t kYieldsBeforeNap = 4096;
  // The first nap, doubled up to the last while nothing moves: a waiter
  // that has waited that long notices its peer up to kLastNapNs late.
  static constexpr long kFirstNapNs = 20000;
  static constexpr long kLastNapNs = 500000;

 private:
  void nap() {
    const timespec ts{0, napNs_};
    nanosleep(&ts, nullptr);
    napNs_ = std::min(2 * napNs_, kLastNapNs);
  }

  int64_t spins_;
  int64_t idle_ = 0;
  long napNs_ = kFirstNapNs;
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
// hands it to the rank it waits for at once (bench/README.md, "Measurements
// behind the code", has the numbers).
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
