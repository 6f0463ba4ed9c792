#include "lazy_links.h"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "clock.h"
#include "log.h"
#include "socket.h"

namespace strata {
namespace {

// The served rank's answer to a request, the first byte on its socket.
enum Answer : uint8_t {
  kRefused = 0,  // the served rank is lower and asked for the pair itself: its request makes it
  kGo = 1,       // both ends connect the pair now
  kBroken = 2,   // the served rank is higher and holds the pair connected or connecting (the two disagree)
  kFailed = 3,   // the served rank failed to connect the pair
};

// How often a rank refused by a lower one asks again (see ensure()).
constexpr double kAskAgainSeconds = 0.5;

std::string rankName(int rank) { return "rank " + std::to_string(rank); }

}  // namespace

PairOob::PairOob(int fd, int rank, int nranks, int peer, double deadline)
    : fd_(fd), rank_(rank), nranks_(nranks), peer_(peer), deadline_(deadline), peerName_(rankName(peer)) {}

Status PairOob::allgather(const void* in, void* out, size_t bytes) {
  char* records = static_cast<char*>(out);
  std::memcpy(records + size_t(rank_) * bytes, in, bytes);
  // Both ends send first: a transport's records are far smaller than a
  // socket's buffer, so neither send waits for the other's receive.
  STRATA_CHECK(net::sendAll(fd_, in, bytes, deadline_, peerName_.c_str()));
  return net::recvAll(fd_, records + size_t(peer_) * bytes, bytes, deadline_, peerName_.c_str());
}

Status PairOob::barrier() {
  const char mine = 0;
  std::vector<char> both(nranks_);
  return allgather(&mine, both.data(), 1);
}

bool PairOob::abandoned() {
  char byte;
  return recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

LazyLinks::LazyLinks(int rank, std::vector<bool> connected, double timeoutSeconds, Reach reach, ConnectPair connect)
    : rank_(rank), timeout_(timeoutSeconds), reach_(std::move(reach)), connect_(std::move(connect)),
      state_(connected.size(), State::Absent), failure_(connected.size()) {
  for (size_t p = 0; p < connected.size(); ++p)
    if (connected[p]) state_[p] = State::Connected;
}

int LazyLinks::connectedCount() const {
  std::lock_guard<std::mutex> lock(mutex_);
  int n = 0;
  for (size_t p = 0; p < state_.size(); ++p) n += int(p) != rank_ && state_[p] == State::Connected;
  return n;
}

Status LazyLinks::ensure(int peer) {
  const double deadline = nowSeconds() + timeout_;
  std::unique_lock<std::mutex> lock(mutex_);
  switch (state_[peer]) {
    case State::Connected:
      return Status::ok();
    case State::Failed:
      return failure_[peer];
    case State::Asking:
    case State::Serving: {
      Status s;
      awaitOutcome(lock, peer, deadline, &s);
      return s;
    }
    case State::Absent:
      state_[peer] = State::Asking;
      break;
  }
  lock.unlock();
  for (;;) {
    int fd = -1;
    uint8_t answer = kBroken;
    Status s = reach_(peer, deadline, &fd);
    if (s.isOk()) s = net::recvAll(fd, &answer, 1, deadline, rankName(peer).c_str());
    if (s.isOk() && answer == kGo) return finish(peer, fd);
    if (fd >= 0) close(fd);
    lock.lock();
    if (s.isOk() && answer == kRefused) {
      // The lower rank's own request makes the pair. Should that request
      // fail before it gets here, nothing would come: ask again now and
      // then, and learn that it failed.
      const double until = std::min(deadline, nowSeconds() + kAskAgainSeconds);
      if (awaitOutcome(lock, peer, until, &s)) return s;
      if (nowSeconds() < deadline) {
        lock.unlock();
        continue;
      }
    } else if (s.isOk()) {
      s = answer == kFailed ? STRATA_ERROR(STRATA_ERR_REMOTE, "rank %d failed to connect with rank %d (its own error "
                                           "says why)", peer, rank_)
                            : STRATA_ERROR(STRATA_ERR_INTERNAL, "rank %d refused to connect with rank %d: it holds "
                                           "that pair connected or connecting already", peer, rank_);
    }
    state_[peer] = State::Failed;
    failure_[peer] = s;
    changed_.notify_all();
    return s;
  }
}

LazyLinks::~LazyLinks() {
  std::vector<Server> servers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    servers.swap(servers_);
  }
  for (Server& s : servers) s.thread.join();
}

void LazyLinks::serve(int peer, int fd, std::function<void(const Status&)> onFailure) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t i = 0; i < servers_.size();) {
    if (!servers_[i].done->load()) {
      ++i;
      continue;
    }
    servers_[i].thread.join();
    servers_[i] = std::move(servers_.back());
    servers_.pop_back();
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread thread([this, peer, fd, done, onFailure = std::move(onFailure)] {
    log::setThreadRank(rank_);
    Status s = answer(peer, fd);
    if (!s.isOk()) onFailure(s);
    done->store(true);
  });
  servers_.push_back({std::move(thread), std::move(done)});
}

Status LazyLinks::answer(int peer, int fd) {
  std::unique_lock<std::mutex> lock(mutex_);
  uint8_t answer = kBroken;
  State& state = state_[peer];
  if (state == State::Absent || (state == State::Asking && peer < rank_)) {
    state = State::Serving;
    answer = kGo;
  } else if (state == State::Failed) {
    answer = kFailed;
  } else if (peer > rank_) {
    // This rank's own request makes the pair (it may have done so already,
    // the higher rank's request arriving late): the peer waits for its end.
    answer = kRefused;
  }
  lock.unlock();
  Status s = net::sendAll(fd, &answer, 1, nowSeconds() + timeout_, rankName(peer).c_str());
  if (answer == kGo) return s.isOk() ? finish(peer, fd) : (close(fd), finish(peer, -1, s));
  close(fd);
  return Status::ok();
}

Status LazyLinks::finish(int peer, int fd, Status failed) {
  Status s = failed;
  if (s.isOk()) {
    PairOob oob(fd, rank_, static_cast<int>(state_.size()), peer, nowSeconds() + timeout_);
    s = connect_(peer, oob);
    // Closed only once both ends are through: the other end takes a close
    // while it still accepts this end's connections for giving up
    // (PairOob::abandoned), and this end's last ones may not be in yet.
    if (s.isOk()) s = oob.barrier();
    close(fd);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  state_[peer] = s.isOk() ? State::Connected : State::Failed;
  failure_[peer] = s;
  changed_.notify_all();
  return s;
}

bool LazyLinks::awaitOutcome(std::unique_lock<std::mutex>& lock, int peer, double deadline, Status* outcome) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(std::max(0.0, deadline - nowSeconds())));
  const bool decided = changed_.wait_until(
      lock, until, [&] { return state_[peer] == State::Connected || state_[peer] == State::Failed; });
  if (!decided) {
    *outcome = STRATA_ERROR(STRATA_ERR_TIMEOUT, "rank %d: connecting with rank %d did not finish within %.0f s "
                            "(STRATA_TIMEOUT)", rank_, peer, timeout_);
    return false;
  }
  *outcome = state_[peer] == State::Connected ? Status::ok() : failure_[peer];
  return true;
}

}  // namespace strata
