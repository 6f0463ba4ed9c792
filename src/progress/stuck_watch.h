// A thread that makes no CUDA call and watches the threads that do. Host
// waits have deadlines, checked by the thread that waits; a thread stuck
// inside a CUDA call checks nothing. On a GPU such a call can wait for the
// very stream strata has parked on a flag only that thread would raise (a
// kernel's module loaded at its first launch, a cudaFree that waits for
// the device), and then the process hangs with no error. StuckWatch reads,
// for each channel, since when its driving thread has been inside its
// GPU-to-GPU step (Channel::deviceCallSince), and calls onStuck once for
// the first that passes the timeout: the communicator fails and lets every
// parked stream go, which is what the stuck call waits for.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace strata {

class StuckWatch {
 public:
  // Called on the watch's thread with the channel's index and how long its
  // thread has been inside the call; it must make no CUDA call either.
  using OnStuck = std::function<void(int channel, double seconds)>;

  // `since[i]`: nowSeconds() when channel i's thread entered the call, 0
  // while it is outside; they outlive the watch. Looks every `period`
  // seconds (a tenth of the timeout, at most one).
  StuckWatch(std::vector<const std::atomic<double>*> since, double timeoutSeconds, OnStuck onStuck);
  ~StuckWatch();  // stops and joins the thread
  StuckWatch(const StuckWatch&) = delete;
  StuckWatch& operator=(const StuckWatch&) = delete;

 private:
  void run();

  std::vector<const std::atomic<double>*> since_;
  double timeout_;
  OnStuck onStuck_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace strata
