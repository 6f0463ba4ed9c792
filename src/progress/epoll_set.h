// The descriptors a progress thread sleeps on, kept in an epoll instance.
// Each time the thread is about to sleep it states the whole set it wants
// (the channels' addPollFds list, which changes slowly: receivers always,
// senders only while they hold unsent bytes); only the differences reach the
// kernel, as epoll_ctl calls, so a steady set costs one epoll_wait per sleep
// however many sockets it holds.
#pragma once

#include <poll.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "status.h"

namespace strata {

class EpollSet {
 public:
  EpollSet() = default;
  ~EpollSet();
  EpollSet(const EpollSet&) = delete;
  EpollSet& operator=(const EpollSet&) = delete;

  // Creates the epoll instance; before any other call.
  Status open();
  // Makes `wanted` (poll-style events per descriptor) the registered set.
  void update(const std::vector<pollfd>& wanted);
  // Sleeps until a descriptor of the set is ready or timeoutMs passes; true
  // if `fd` was among the ready ones.
  bool wait(int timeoutMs, int fd);

 private:
  int ep_ = -1;
  std::unordered_map<int, uint32_t> registered_;  // fd -> epoll events
  std::unordered_map<int, uint32_t> scratch_;
};

}  // namespace strata
