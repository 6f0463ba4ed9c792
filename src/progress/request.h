// A request: one collective call, split over one or more channels. It is done
// when every channel has finished its part; the first failure wins.
#pragma once

#include <atomic>

#include "status.h"

namespace strata {

class Request {
 public:
  void start(int channels) {
    failed_.store(false, std::memory_order_relaxed);
    status_ = Status::ok();
    pending_.store(channels, std::memory_order_release);
  }
  bool done() const { return pending_.load(std::memory_order_acquire) == 0; }
  // Valid once done().
  const Status& status() const { return status_; }

  void channelDone() { pending_.fetch_sub(1, std::memory_order_acq_rel); }
  void channelFailed(const Status& why) {
    if (!failed_.exchange(true, std::memory_order_acq_rel)) status_ = why;
    channelDone();
  }

 private:
  std::atomic<int> pending_{0};
  std::atomic<bool> failed_{false};
  Status status_;
};

}  // namespace strata
