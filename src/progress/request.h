// A request: one call (a collective, or a group of sends and receives), split
// over one or more channels. It is done when every channel has finished its
// part; the first failure wins.
#pragma once

#include <atomic>
#include <vector>

#include "executor.h"
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

  // The buffers and tags of a group's messages (OpContext::messages points
  // here): they live as long as the request.
  std::vector<Message> messages;

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
