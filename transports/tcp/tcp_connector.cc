#include "tcp_connector.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>

namespace strata::tcp {

TcpLink::TcpLink(int fd, int peerRank, std::string peerHost)
    : fd_(fd), peerRank_(peerRank), peerHost_(std::move(peerHost)) {}

TcpLink::~TcpLink() { close(fd_); }

std::string TcpLink::peerName() const { return "rank " + std::to_string(peerRank_) + " on " + peerHost_; }

void TcpLink::fail(Status why) {
  if (error_.isOk()) error_ = std::move(why);
}

void TcpLink::abort() {
  shutdown(fd_, SHUT_RDWR);
  fail(makeErrorQuiet(STRATA_ERR_REMOTE, "connection to %s aborted by this rank", peerName().c_str()));
}

namespace {

// Classifies a failed send/recv; EAGAIN is not a failure.
bool ioFailed(ssize_t n, TcpLink& link, const char* what) {
  if (n > 0) return false;
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
  if (n == 0) {
    link.fail(makeErrorQuiet(STRATA_ERR_REMOTE, "%s closed the connection (it failed, aborted or exited)",
                             link.peerName().c_str()));
  } else {
    int err = errno;
    link.fail(makeErrorQuiet(STRATA_ERR_REMOTE, "%s to %s failed: %s%s", what, link.peerName().c_str(),
                             errnoText(err).c_str(),
                             err == ETIMEDOUT ? " (no acknowledgement within STRATA_TIMEOUT: link down?)" : ""));
  }
  return true;
}

}  // namespace

SlotRing::SlotRing(size_t slotBytes, int nslots)
    : slotBytes_(slotBytes),
      nslots_(static_cast<uint64_t>(nslots)),
      data_(new char[slotBytes * static_cast<size_t>(nslots)]),
      headers_(static_cast<size_t>(nslots)) {}

TcpSendConnector::TcpSendConnector(std::shared_ptr<TcpLink> link, size_t slotBytes, int nslots)
    : link_(std::move(link)), ring_(slotBytes, nslots) {}

void* TcpSendConnector::acquire(size_t) {
  if (published_ - sent_ >= ring_.nslots()) {
    progress();
    if (published_ - sent_ >= ring_.nslots()) return nullptr;
  }
  return ring_.slot(published_);
}

void TcpSendConnector::publish(size_t bytes, const SlotTag& tag) {
  ring_.header(published_) = WireHeader{tag.seq, tag.desc, bytes};
  ++published_;
  progress();  // start sending at once; the rest goes out on later polls
}

bool TcpSendConnector::progress() {
  bool moved = false;
  while (sent_ < published_ && link_->error().isOk()) {
    WireHeader& h = ring_.header(sent_);
    const size_t total = sizeof(WireHeader) + h.bytes;
    iovec iov[2];
    int n = 0;
    if (offset_ < sizeof(WireHeader))
      iov[n++] = {reinterpret_cast<char*>(&h) + offset_, sizeof(WireHeader) - offset_};
    size_t payloadDone = offset_ > sizeof(WireHeader) ? offset_ - sizeof(WireHeader) : 0;
    if (h.bytes > payloadDone) iov[n++] = {ring_.slot(sent_) + payloadDone, h.bytes - payloadDone};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(n);
    ssize_t done = sendmsg(link_->fd(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (done < 0) {
      ioFailed(done, *link_, "sending");
      break;
    }
    moved = true;
    offset_ += static_cast<size_t>(done);
    if (offset_ == total) {
      ++sent_;
      offset_ = 0;
    }
  }
  return moved;
}

TcpRecvConnector::TcpRecvConnector(std::shared_ptr<TcpLink> link, size_t slotBytes, int nslots)
    : link_(std::move(link)), ring_(slotBytes, nslots) {}

bool TcpRecvConnector::progress() {
  bool moved = false;
  while (received_ - released_ < ring_.nslots() && link_->error().isOk()) {
    WireHeader& h = ring_.header(received_);
    ssize_t n;
    if (offset_ < sizeof(WireHeader)) {
      n = recv(link_->fd(), reinterpret_cast<char*>(&h) + offset_, sizeof(WireHeader) - offset_, MSG_DONTWAIT);
    } else {
      size_t payloadDone = offset_ - sizeof(WireHeader);
      n = recv(link_->fd(), ring_.slot(received_) + payloadDone, h.bytes - payloadDone, MSG_DONTWAIT);
    }
    if (ioFailed(n, *link_, "receiving") || n < 0) break;
    moved = true;
    offset_ += static_cast<size_t>(n);
    if (offset_ == sizeof(WireHeader) && h.bytes > ring_.slotBytes()) {
      link_->fail(makeErrorQuiet(STRATA_ERR_INTERNAL, "%s sent a %llu-byte chunk for %zu-byte slots",
                                 link_->peerName().c_str(), (unsigned long long)h.bytes, ring_.slotBytes()));
      break;
    }
    if (offset_ == sizeof(WireHeader) + h.bytes) {
      ++received_;
      offset_ = 0;
    }
  }
  return moved;
}

const void* TcpRecvConnector::peek(size_t* bytes, SlotTag* tag) {
  if (received_ == released_) progress();
  if (received_ == released_) return nullptr;
  const WireHeader& h = ring_.header(released_);
  *bytes = h.bytes;
  *tag = SlotTag{h.seq, h.desc};
  return ring_.slot(released_);
}

void TcpRecvConnector::release() { ++released_; }

}  // namespace strata::tcp
