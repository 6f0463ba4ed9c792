#include "progress_threads.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

#include "log.h"
#include "wait_policy.h"

namespace strata {
namespace {

void futexWait(std::atomic<uint32_t>* word, uint32_t seen) {
  // The timeout only bounds the cost of a lost wake-up; wakes are not lost.
  timespec timeout{0, 200 * 1000 * 1000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, seen, &timeout,
          nullptr, 0);
}

void futexWakeAll(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

}  // namespace

int64_t chooseSpins(int64_t configured, int localRanks, int cpusAllowed) {
  if (configured >= 0) return configured;
  return localRanks > cpusAllowed ? 0 : 20000;
}

ProgressThreads::ProgressThreads(std::vector<Channel>& channels, FailureSink& comm, int nthreads,
                                 int64_t spins, int rank)
    : channels_(channels), comm_(comm), nthreads_(nthreads), spins_(spins), rank_(rank) {
  for (int i = 0; i < nthreads; ++i) threads_.emplace_back([this, i] {
    log::setThreadRank(rank_);
    run(i);
  });
}

ProgressThreads::~ProgressThreads() {
  stop_.store(true, std::memory_order_release);
  wake();
  for (auto& t : threads_) t.join();
}

void ProgressThreads::wake() {
  wakeSeq_.fetch_add(1, std::memory_order_acq_rel);
  futexWakeAll(&wakeSeq_);
}

void ProgressThreads::run(int index) {
  WaitPolicy wait(spins_);
  while (!stop_.load(std::memory_order_acquire)) {
    uint32_t seen = wakeSeq_.load(std::memory_order_acquire);
    bool pending = false;
    bool progressed = false;
    for (size_t c = index; c < channels_.size(); c += nthreads_) {
      if (!channels_[c].hasThreadWork()) continue;
      pending = true;
      progressed |= channels_[c].drive(comm_);
    }
    if (pending) {
      wait.afterPoll(progressed);
      continue;
    }
    futexWait(&wakeSeq_, seen);
  }
}

}  // namespace strata
