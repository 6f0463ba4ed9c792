#include "stuck_watch.h"

#include <algorithm>
#include <chrono>

#include "clock.h"

namespace strata {

StuckWatch::StuckWatch(std::vector<const std::atomic<double>*> since, double timeoutSeconds, OnStuck onStuck)
    : since_(std::move(since)), timeout_(timeoutSeconds), onStuck_(std::move(onStuck)), thread_([this] { run(); }) {}

StuckWatch::~StuckWatch() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void StuckWatch::run() {
  const auto period = std::chrono::duration<double>(std::clamp(timeout_ / 10, 0.01, 1.0));
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, period, [this] { return stop_; })) {
    const double now = nowSeconds();
    for (size_t ch = 0; ch < since_.size(); ++ch) {
      const double entered = since_[ch]->load(std::memory_order_acquire);
      if (entered > 0 && now - entered > timeout_) {
        lock.unlock();
        onStuck_(static_cast<int>(ch), now - entered);
        return;  // once: the communicator has failed
      }
    }
  }
}

}  // namespace strata
