#include "epoll_set.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>

namespace strata {
namespace {

uint32_t toEpoll(short events) {
  return ((events & POLLIN) ? EPOLLIN : 0u) | ((events & POLLOUT) ? EPOLLOUT : 0u);
}

}  // namespace

Status EpollSet::open() {
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  if (ep_ >= 0) return Status::ok();
  const int err = errno;
  return STRATA_ERROR(STRATA_ERR_SYSTEM, "epoll_create1() for a progress thread failed: %s", errnoText(err).c_str());
}

EpollSet::~EpollSet() {
  if (ep_ >= 0) close(ep_);
}

void EpollSet::update(const std::vector<pollfd>& wanted) {
  scratch_.clear();
  for (const pollfd& p : wanted) scratch_[p.fd] |= toEpoll(p.events);
  for (auto it = registered_.begin(); it != registered_.end();) {
    if (scratch_.count(it->first)) {
      ++it;
      continue;
    }
    epoll_ctl(ep_, EPOLL_CTL_DEL, it->first, nullptr);
    it = registered_.erase(it);
  }
  for (const auto& [fd, events] : scratch_) {
    auto it = registered_.find(fd);
    if (it != registered_.end() && it->second == events) continue;
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(ep_, it == registered_.end() ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
    registered_[fd] = events;
  }
}

bool EpollSet::wait(int timeoutMs, int fd) {
  epoll_event events[16];
  int n = epoll_wait(ep_, events, 16, timeoutMs);
  for (int i = 0; i < n; ++i)
    if (events[i].data.fd == fd) return true;
  return false;
}

}  // namespace strata
