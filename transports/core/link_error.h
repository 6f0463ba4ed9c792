// A connection's sticky error, for transports whose connectors share one
// link: any thread may fail it (the driver on an I/O error, another on an
// abort) while others read it.
#pragma once

#include <atomic>
#include <mutex>

#include "status.h"

namespace strata {

class LinkError {
 public:
  bool ok() const { return !failed_.load(std::memory_order_acquire); }
  Status error() const {
    if (ok()) return Status::ok();
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }
  // Records why the link is unusable (first reason wins).
  void fail(Status why) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_.load(std::memory_order_relaxed)) return;
    error_ = std::move(why);
    failed_.store(true, std::memory_order_release);
  }

 private:
  std::atomic<bool> failed_{false};
  mutable std::mutex mutex_;  // guards error_
  Status error_;
};

}  // namespace strata
