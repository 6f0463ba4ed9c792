// The one loop in which a thread waits: a blocking call for its operation, a
// group for its calls on several communicators, an issuer for a free queue
// entry. It drives the channels it is given until done() holds, gives its
// core away after `spins` fruitless polls (WaitPolicy), and when every
// channel that has work waits only on sockets, sleeps on them once
// socketPollsBeforeSleep() polls in a row found nothing to do.
#pragma once

#include <poll.h>

#include <cstdint>

#include "channel.h"
#include "wait_policy.h"

namespace strata {

// forEachChannel(fn) calls fn(channel, its communicator) for every channel
// to drive. `sockets`: whether any of them has connectors that need
// progress() calls (without, there is nothing to sleep on, and the smallest
// operations skip the bookkeeping).
template <typename Done, typename ForEachChannel>
void driveUntil(int64_t spins, bool sockets, Done done, ForEachChannel forEachChannel) {
  WaitPolicy wait(spins);
  SleepSet sleep;
  SleepSet* sleepSet = sockets ? &sleep : nullptr;
  // Fruitless polls since anything moved: once past the budget the thread
  // sleeps on every fruitless poll, until something moves again.
  int64_t idlePolls = 0;
  const int64_t socketPolls = socketPollsBeforeSleep(spins);
  while (!done()) {
    bool progressed = false;
    sleep.fds.clear();
    sleep.memoryWait = false;
    forEachChannel([&](Channel& ch, FailureSink& comm) {
      if (ch.hasWork()) progressed |= ch.drive(comm, sleepSet);
    });
    if (progressed) {
      idlePolls = 0;
    } else if (sleep.canSleep() && ++idlePolls > socketPolls) {
      (void)!::poll(sleep.fds.data(), sleep.fds.size(), kSocketSleepMs);
      continue;
    }
    wait.afterPoll(progressed);
  }
}

}  // namespace strata
