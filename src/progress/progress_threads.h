// Progress threads (STRATA_NTHREADS): each drives the channels whose index
// modulo the thread count is its own, for operations nobody is waiting on
// (non-blocking calls, and the extra channels of large blocking ones).
// A thread sleeps in epoll (epoll_set.h): on an eventfd alone when no such
// work is queued (an idle communicator costs no CPU), and on the eventfd plus
// its channels' sockets when work waits on the network. Channels on memory transports have
// no descriptor to sleep on, so there it polls and yields. wake() is only
// called by submissions that want the threads.
#pragma once

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "channel.h"
#include "epoll_set.h"
#include "status.h"

namespace strata {

class ProgressThreads {
 public:
  // Opens every thread's descriptors, then starts the threads: a process
  // out of descriptors gets an error from communicator creation, not a
  // thread that cannot sleep or be woken.
  static Status start(std::vector<Channel>& channels, FailureSink& comm, int nthreads, int64_t spins, int rank,
                      std::unique_ptr<ProgressThreads>* out);
  ~ProgressThreads();  // stops and joins
  void wake();

 private:
  ProgressThreads(std::vector<Channel>& channels, FailureSink& comm, int nthreads, int64_t spins, int rank);
  Status openDescriptors();
  void run(int index);

  std::vector<Channel>& channels_;
  FailureSink& comm_;
  int nthreads_;
  int64_t spins_;
  int rank_;
  std::vector<int> wakeFds_;  // one eventfd per thread: submissions and shutdown
  std::vector<std::unique_ptr<EpollSet>> sleepers_;  // one per thread: what it sleeps on
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace strata
