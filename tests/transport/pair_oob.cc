#include "pair_oob.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "clock.h"
#include "socket.h"

namespace strata::test {
namespace {

constexpr double kOobSeconds = 60;  // any one exchange; the test's own deadline is shorter

}  // namespace

Status PairOob::accept(int listenFd, double deadline, std::unique_ptr<PairOob>* out) {
  pollfd p{listenFd, POLLIN, 0};
  const int ms = static_cast<int>((deadline - nowSeconds()) * 1000);
  const int ready = ::poll(&p, 1, ms > 0 ? ms : 0);
  const int fd = ready > 0 ? ::accept(listenFd, nullptr, nullptr) : -1;
  const int err = errno;
  close(listenFd);
  if (fd < 0)
    return makeErrorQuiet(STRATA_ERR_TIMEOUT, "rank 1 did not connect to rank 0's test socket: %s",
                          ready > 0 ? errnoText(err).c_str() : "timed out");
  out->reset(new PairOob(fd, 0));
  return Status::ok();
}

Status PairOob::dial(const std::string& host, int port, double deadline, std::unique_ptr<PairOob>* out) {
  SockAddr addr;
  STRATA_CHECK(net::resolve(host, port, &addr));
  int fd = -1;
  STRATA_CHECK(net::connectTo(addr, deadline, "rank 0's test socket", &fd));
  out->reset(new PairOob(fd, 1));
  return Status::ok();
}

PairOob::~PairOob() { close(fd_); }

Status PairOob::allgather(const void* in, void* out, size_t bytes) {
  const double deadline = nowSeconds() + kOobSeconds;
  char* mine = static_cast<char*>(out) + rank_ * bytes;
  char* theirs = static_cast<char*>(out) + (1 - rank_) * bytes;
  std::memmove(mine, in, bytes);
  STRATA_CHECK(net::sendAll(fd_, mine, bytes, deadline, "the other rank"));
  // Bytes poll() read ahead come first.
  const size_t early = std::min(bytes, inbox_.size());
  std::memcpy(theirs, inbox_.data(), early);
  inbox_.erase(0, early);
  STRATA_CHECK(net::recvAll(fd_, theirs + early, bytes - early, deadline, "the other rank"));
  if (watcher_) watcher_(out, 2 * bytes);
  return Status::ok();
}

Status PairOob::barrier() {
  char in = 1, out[2];
  return allgather(&in, out, 1);
}

Status PairOob::post(uint64_t word) {
  return net::sendAll(fd_, &word, sizeof(word), nowSeconds() + kOobSeconds, "the other rank");
}

void PairOob::readAvailable() {
  char buf[256];
  for (;;) {
    const ssize_t n = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      inbox_.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) closed_ = true;
    return;
  }
}

bool PairOob::poll(uint64_t* word) {
  if (inbox_.size() < sizeof(*word)) readAvailable();
  if (inbox_.size() < sizeof(*word)) return false;
  std::memcpy(word, inbox_.data(), sizeof(*word));
  inbox_.erase(0, sizeof(*word));
  return true;
}

bool PairOob::peerGone() {
  if (!closed_) readAvailable();
  return closed_;
}

}  // namespace strata::test
