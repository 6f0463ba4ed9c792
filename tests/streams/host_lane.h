// A stream made of a host thread: it runs copy, signal and wait commands in
// the order they were enqueued, as a CUDA stream does, so the staging state
// machine runs whole on host memory. hold() enqueues a wait on a flag the
// test opens with go(): the stream is then "busy with earlier work".
#pragma once

#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "stream_lane.h"

namespace strata::test {

class HostLane final : public gpu::StreamLane {
 public:
  HostLane() : thread_([this] { run(); }) {}
  ~HostLane() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  // Fails the n-th copy enqueued from now on (1: the next), as a broken stream would.
  void failCopy(int n) { failCopyAt_ = copies_ + n; }

  Status copy(void* dst, const void* src, size_t bytes) override {
    if (++copies_ == failCopyAt_) return STRATA_ERROR(STRATA_ERR_CUDA, "host lane: copy %d refused", copies_);
    push([=] { std::memcpy(dst, src, bytes); });
    return Status::ok();
  }
  Status signal(gpu::Flag* flag, uint32_t value) override {
    push([=] { flag->store(value, std::memory_order_release); });
    return Status::ok();
  }
  Status wait(gpu::Flag* flag, uint32_t value) override {
    push([=] {
      while (flag->load(std::memory_order_acquire) < value && !stopping()) std::this_thread::yield();
    });
    return Status::ok();
  }
  const char* name() const override { return "host lane"; }

  void hold() { (void)wait(&gate_, 1); }
  void go() { gate_.store(1, std::memory_order_release); }
  // Waits until every command enqueued so far has run (cudaStreamSynchronize).
  void sync() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }

 private:
  void push(std::function<void()> fn) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.push_back(std::move(fn));
    }
    cv_.notify_all();
  }
  bool stopping() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stop_;
  }
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      std::function<void()> fn = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      fn();
      lock.lock();
      busy_ = false;
      if (queue_.empty()) idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_, idle_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  int copies_ = 0;
  int failCopyAt_ = -1;
  gpu::Flag gate_{0};
  std::thread thread_;
};

// Pinned memory for tests: plain aligned host memory.
inline Status hostAlloc(size_t bytes, void** out) {
  *out = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  return *out ? Status::ok() : STRATA_ERROR(STRATA_ERR_SYSTEM, "out of memory");
}
inline void hostFree(void* p) { std::free(p); }

}  // namespace strata::test
