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

  // The collective's sequence number on its communicator (0 for a group of
  // sends and receives), for the operation log.
  uint64_t seq = 0;
  // A group of sends and receives: its id in the operation log (0: none).
  uint64_t p2pGroup = 0;

  // The buffers and tags of a group's messages (OpContext::messages points
  // here): they live as long as the request.
  std::vector<Message> messages;

  // Called once, by the thread that completes the request (success or
  // failure), for a request nobody waits on: a stream-ordered operation
  // releases its stream from here. Set before the request is started. The
  // request is not touched after the hook returns, so the hook may let its
  // owner free it.
  using DoneHook = void (*)(void* arg);
  void onDone(DoneHook hook, void* arg) {
    hook_ = hook;
    hookArg_ = arg;
  }

  // The hook is read before the count drops: once it reaches 0 a waiter may
  // free the request.
  void channelDone() {
    const DoneHook hook = hook_;
    void* const arg = hookArg_;
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1 && hook) hook(arg);
  }
  // Completes a request no other thread has seen yet (an operation its
  // caller ran at once): plain stores, no read-modify-write.
  void finishedAlone(const Status& outcome) {
    failed_.store(!outcome.isOk(), std::memory_order_relaxed);
    status_ = outcome;
    const DoneHook hook = hook_;
    void* const arg = hookArg_;
    pending_.store(0, std::memory_order_release);
    if (hook) hook(arg);
  }
  void channelFailed(const Status& why) {
    if (!failed_.exchange(true, std::memory_order_acq_rel)) status_ = why;
    channelDone();
  }

 private:
  std::atomic<int> pending_{0};
  std::atomic<bool> failed_{false};
  Status status_;
  DoneHook hook_ = nullptr;
  void* hookArg_ = nullptr;
};

}  // namespace strata
