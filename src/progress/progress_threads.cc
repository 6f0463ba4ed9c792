#include "progress_threads.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "log.h"
#include "wait_policy.h"

namespace strata {
namespace {

// How long an idle progress thread sleeps before looking again without being
// woken: it only bounds the cost of a lost wake-up (there are none).
constexpr int kIdleSleepMs = 200;

}  // namespace

int64_t chooseSpins(int64_t configured, int localRanks, int hostCores) {
  if (configured >= 0) return configured;
  return localRanks > hostCores ? 0 : 20000;
}

ProgressThreads::ProgressThreads(std::vector<Channel>& channels, FailureSink& comm, int nthreads,
                                 int64_t spins, int rank)
    : channels_(channels),
      comm_(comm),
      nthreads_(nthreads),
      spins_(spins),
      rank_(rank) {}

Status ProgressThreads::start(std::vector<Channel>& channels, FailureSink& comm, int nthreads, int64_t spins,
                              int rank, std::unique_ptr<ProgressThreads>* out) {
  std::unique_ptr<ProgressThreads> threads(new ProgressThreads(channels, comm, nthreads, spins, rank));
  STRATA_CHECK(threads->openDescriptors());
  for (int i = 0; i < nthreads; ++i) threads->threads_.emplace_back([t = threads.get(), i] {
    log::setThreadRank(t->rank_);
    t->run(i);
  });
  *out = std::move(threads);
  return Status::ok();
}

Status ProgressThreads::openDescriptors() {
  for (int i = 0; i < nthreads_; ++i) {
    const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "eventfd() for progress thread %d of %d failed: %s", i, nthreads_,
                          errnoText(err).c_str());
    }
    wakeFds_.push_back(fd);
    sleepers_.push_back(std::make_unique<EpollSet>());
    STRATA_CHECK(sleepers_.back()->open());
  }
  return Status::ok();
}

ProgressThreads::~ProgressThreads() {
  stop_.store(true, std::memory_order_release);
  wake();
  for (auto& t : threads_) t.join();
  for (int fd : wakeFds_)
    if (fd >= 0) close(fd);
}

void ProgressThreads::wake() {
  uint64_t one = 1;
  for (int fd : wakeFds_)
    if (fd >= 0) (void)!write(fd, &one, sizeof(one));
}

void ProgressThreads::run(int index) {
  WaitPolicy wait(spins_);
  const int wakeFd = wakeFds_[index];
  int64_t idlePolls = 0;
  SleepSet sleep;
  EpollSet& sleeper = *sleepers_[index];
  while (!stop_.load(std::memory_order_acquire)) {
    bool pending = false;
    bool progressed = false;
    sleep.fds.clear();
    sleep.memoryWait = false;
    for (size_t c = index; c < channels_.size(); c += nthreads_) {
      if (!channels_[c].hasThreadWork()) continue;
      pending = true;
      progressed |= channels_[c].drive(comm_, &sleep);
    }
    const int64_t budget = sleep.canSleep() ? socketPollsBeforeSleep(spins_) : spins_;
    if (progressed) idlePolls = 0;
    if (pending && (progressed || ++idlePolls <= budget || !sleep.canSleep())) {
      // Moving, still in the spin budget, or nothing to sleep on (memory).
      wait.afterPoll(progressed);
      continue;
    }
    // Idle, or past the budget: sleep, and again on every fruitless poll
    // until something moves; an idle thread starts its budget afresh.
    if (!pending) idlePolls = 0;
    sleep.fds.push_back(pollfd{wakeFd, POLLIN, 0});
    sleeper.update(sleep.fds);
    if (sleeper.wait(pending ? kSocketSleepMs : kIdleSleepMs, wakeFd)) {
      uint64_t drained;
      (void)!read(wakeFd, &drained, sizeof(drained));
    }
  }
}

}  // namespace strata
