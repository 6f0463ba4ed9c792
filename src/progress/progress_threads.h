// Progress threads (STRATA_NTHREADS): each drives the channels whose index
// modulo the thread count is its own, for operations nobody is waiting on
// (non-blocking calls, and the extra channels of large blocking ones). When no
// such work is queued a thread sleeps on a futex, so an idle communicator
// costs no CPU; wake() is only called by submissions that want the threads.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "channel.h"

namespace strata {

class ProgressThreads {
 public:
  ProgressThreads(std::vector<Channel>& channels, FailureSink& comm, int nthreads, int64_t spins,
                  int rank);
  ~ProgressThreads();  // stops and joins
  void wake();

 private:
  void run(int index);

  std::vector<Channel>& channels_;
  FailureSink& comm_;
  int nthreads_;
  int64_t spins_;
  int rank_;
  std::atomic<uint32_t> wakeSeq_{0};  // futex word
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace strata
