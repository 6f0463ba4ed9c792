#include "tcp_connector.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cstring>

namespace strata::tcp {

SlotRing::SlotRing(size_t slotBytes, int nslots)
    : slotBytes_(slotBytes),
      nslots_(static_cast<uint64_t>(nslots)),
      headers_(static_cast<size_t>(nslots)),
      payloads_(static_cast<size_t>(nslots), nullptr) {}

Stripes::Stripes(std::vector<std::shared_ptr<sockets::SocketLink>> links) : links_(std::move(links)) {
  for (size_t i = 0; i < links_.size(); ++i) {
    next.push_back(i);
    offset.push_back(0);
  }
}

Status Stripes::health() const {
  for (const auto& l : links_)
    if (!l->ok()) return l->error();
  return Status::ok();
}

void Stripes::abort() {
  for (auto& l : links_) l->abort();
}

void Stripes::addPollFds(std::vector<pollfd>& out, short events) const {
  for (const auto& l : links_) out.push_back({l->fd(), events, 0});
}

TcpSendConnector::TcpSendConnector(std::vector<std::shared_ptr<sockets::SocketLink>> links, size_t slotBytes,
                                   int nslots)
    : stripes_(std::move(links)), ring_(slotBytes, nslots) {}

bool TcpSendConnector::sent(uint64_t message) const {
  return stripes_.next[message % stripes_.size()] > message;
}

bool TcpSendConnector::flushed() const {
  // Messages are striped over the sockets in turn, each socket sending its
  // own in order: the last message of every socket must have left.
  const uint64_t k = stripes_.size();
  for (uint64_t m = published_ > k ? published_ - k : 0; m < published_; ++m)
    if (!sent(m)) return false;
  return true;
}

bool TcpSendConnector::slotFree() {
  // The entry about to be reused held message published_ - nslots.
  if (published_ < ring_.nslots() || sent(published_ - ring_.nslots())) return true;
  progress();
  return sent(published_ - ring_.nslots());
}

void* TcpSendConnector::acquire(size_t) { return slotFree() ? ring_.slot(published_) : nullptr; }

void TcpSendConnector::publish(size_t bytes, const SlotTag& tag) {
  ring_.header(published_) = WireHeader{tag.seq, tag.desc, bytes};
  ring_.payload(published_) = ring_.slot(published_);
  ++published_;
  progress();  // start sending at once; the rest goes out on later polls
}

bool TcpSendConnector::publishFrom(const void* data, size_t bytes, const SlotTag& tag) {
  if (!slotFree()) return false;
  ring_.header(published_) = WireHeader{tag.seq, tag.desc, bytes};
  ring_.payload(published_) = static_cast<const char*>(data);
  ++published_;
  progress();
  return true;
}

bool TcpSendConnector::progress() {
  bool moved = false;
  for (size_t s = 0; s < stripes_.size(); ++s) {
    sockets::SocketLink& link = stripes_.link(s);
    uint64_t& message = stripes_.next[s];
    size_t& offset = stripes_.offset[s];
    while (message < published_ && link.ok()) {
      WireHeader& h = ring_.header(message);
      const size_t total = sizeof(WireHeader) + h.bytes;
      iovec iov[2];
      int n = 0;
      if (offset < sizeof(WireHeader)) iov[n++] = {reinterpret_cast<char*>(&h) + offset, sizeof(WireHeader) - offset};
      size_t payloadDone = offset > sizeof(WireHeader) ? offset - sizeof(WireHeader) : 0;
      if (h.bytes > payloadDone)
        iov[n++] = {const_cast<char*>(ring_.payload(message)) + payloadDone, h.bytes - payloadDone};
      ssize_t done = link.send(iov, n);  // sendmsg, or TLS records
      if (done < 0) {
        link.ioFailed(done, "sending");
        break;
      }
      moved = true;
      offset += static_cast<size_t>(done);
      if (offset == total) {
        message += stripes_.size();
        offset = 0;
      }
    }
  }
  return moved;
}

TcpRecvConnector::TcpRecvConnector(std::vector<std::shared_ptr<sockets::SocketLink>> links, size_t slotBytes,
                                   int nslots)
    : stripes_(std::move(links)),
      ring_(slotBytes, nslots),
      staging_(stripes_.size()),
      postings_(static_cast<size_t>(nslots)),
      lands_(static_cast<size_t>(nslots), nullptr) {}

bool TcpRecvConnector::post(void* dst, size_t bytes, const SlotTag& tag) {
  if (posted_ < released_) posted_ = released_;  // consumed without postings
  if (posted_ - released_ >= ring_.nslots()) return false;
  postings_[posted_ % ring_.nslots()] = Posting{static_cast<char*>(dst), bytes, tag};
  ++posted_;
  return true;
}

void TcpRecvConnector::dropPostings() {
  posted_ = released_;
  // Only where a message was to land in the caller's memory: a connector
  // that never landed one allocates no slots for this.
  for (uint64_t m = released_; m < released_ + ring_.nslots(); ++m) {
    char*& at = lands_[m % ring_.nslots()];
    if (at && !ring_.holds(at)) at = ring_.slot(m);
  }
}

char* TcpRecvConnector::landing(uint64_t m, const WireHeader& h) {
  if (m < posted_) {
    const Posting& p = postings_[m % ring_.nslots()];
    if (p.dst && p.bytes == h.bytes && p.tag.seq == h.seq && p.tag.desc == h.desc) return p.dst;
  }
  return ring_.slot(m);
}

bool TcpRecvConnector::progress() {
  bool moved = false;
  for (size_t s = 0; s < stripes_.size(); ++s) {
    sockets::SocketLink& link = stripes_.link(s);
    Staging& st = staging_[s];
    uint64_t& message = stripes_.next[s];
    size_t& offset = stripes_.offset[s];
    // A message may land only in a slot the consumer has released.
    while (message - released_ < ring_.nslots() && link.ok()) {
      WireHeader& h = ring_.header(message);
      const bool inHeader = offset < sizeof(WireHeader);
      char* dst = inHeader ? reinterpret_cast<char*>(&h) + offset
                           : lands_[message % ring_.nslots()] + (offset - sizeof(WireHeader));
      const size_t want = inHeader ? sizeof(WireHeader) - offset : h.bytes - (offset - sizeof(WireHeader));
      size_t got;
      if (st.begin < st.end) {
        got = std::min(want, st.end - st.begin);
        std::memcpy(dst, st.data.get() + st.begin, got);
        st.begin += got;
        moved = true;
      } else {
        // Large remainders go straight into the slot; the rest through staging.
        const bool direct = !inHeader && want >= kStagingBytes;
        if (!direct && !st.data) {
          st.data.reset(new char[kStagingBytes]);
          stagingAllocated_.fetch_add(kStagingBytes, std::memory_order_relaxed);
        }
        ssize_t n = direct ? link.recv(dst, want) : link.recv(st.data.get(), kStagingBytes);
        if (link.ioFailed(n, "receiving") || n < 0) break;
        moved = true;
        if (!direct) {
          st.begin = 0;
          st.end = static_cast<size_t>(n);
          continue;
        }
        got = static_cast<size_t>(n);
      }
      offset += got;
      if (offset == sizeof(WireHeader)) {
        Status refused = checkWireHeader(h, ring_.slotBytes(), [&link] { return link.peerName(); });
        if (!refused.isOk()) {
          link.fail(std::move(refused));
          break;
        }
        lands_[message % ring_.nslots()] = landing(message, h);
      }
      if (offset == sizeof(WireHeader) + h.bytes) {
        message += stripes_.size();
        offset = 0;
      }
    }
  }
  return moved;
}

const void* TcpRecvConnector::peek(size_t* bytes, SlotTag* tag) {
  // Message released_ is complete once its socket has moved past it.
  auto complete = [this] { return stripes_.next[released_ % stripes_.size()] > released_; };
  if (!complete()) progress();
  if (!complete()) return nullptr;
  const WireHeader& h = ring_.header(released_);
  *bytes = h.bytes;
  *tag = SlotTag{h.seq, h.desc};
  return lands_[released_ % ring_.nslots()];
}

void TcpRecvConnector::release() { ++released_; }

}  // namespace strata::tcp
