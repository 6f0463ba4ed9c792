// Connectors over one TCP connection per (pair of ranks, channel), which
// carries both directions. Each end keeps its FIFO of slots in its own
// memory; a message on the wire is a 24-byte header (tag, length) and the
// slot's payload. All I/O is non-blocking and happens in progress(), which
// the channel calls on every poll; TCP's own flow control is the credit
// scheme (a receiver with no free slot stops reading, the sender's socket
// fills, and its slots stay in flight).
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "connector.h"
#include "socket_link.h"
#include "tcp_wire.h"

namespace strata::tcp {

// Slot storage of one FIFO end.
class SlotRing {
 public:
  SlotRing(size_t slotBytes, int nslots);
  // The slots are allocated at the first one's use: a peer that no plan
  // uses, or that is only sent to from the caller's memory, costs none.
  char* slot(uint64_t index) {
    if (!data_) {
      data_.reset(new char[slotBytes_ * nslots_]);
      allocated_.store(slotBytes_ * nslots_, std::memory_order_relaxed);
    }
    return data_.get() + (index % nslots_) * slotBytes_;
  }
  // The slots' bytes once they exist; read from any thread.
  uint64_t allocated() const { return allocated_.load(std::memory_order_relaxed); }
  WireHeader& header(uint64_t index) { return headers_[index % nslots_]; }
  // Whether p points into the slots (false before they exist).
  bool holds(const char* p) const {
    return data_ && p >= data_.get() && p < data_.get() + slotBytes_ * nslots_;
  }
  // Where message `index`'s payload is: its slot, or the caller's memory.
  const char*& payload(uint64_t index) { return payloads_[index % nslots_]; }
  size_t slotBytes() const { return slotBytes_; }
  uint64_t nslots() const { return nslots_; }

 private:
  size_t slotBytes_;
  uint64_t nslots_;
  std::unique_ptr<char[]> data_;
  std::atomic<uint64_t> allocated_{0};
  std::vector<WireHeader> headers_;
  std::vector<const char*> payloads_;
};

// The sockets of one (pair, channel): message k of the stream travels on
// socket k % size(), so each socket carries its share in order and the
// sockets progress independently (STRATA_NSOCKS).
class Stripes {
 public:
  explicit Stripes(std::vector<std::shared_ptr<sockets::SocketLink>> links);
  size_t size() const { return links_.size(); }
  sockets::SocketLink& link(size_t i) { return *links_[i]; }
  Status health() const;
  void abort();
  void addPollFds(std::vector<pollfd>& out, short events) const;

  // Per socket: the next message index it carries, and how many bytes of
  // that message have moved.
  std::vector<uint64_t> next;
  std::vector<size_t> offset;

 private:
  std::vector<std::shared_ptr<sockets::SocketLink>> links_;
};

class TcpSendConnector final : public SendConnector {
 public:
  TcpSendConnector(std::vector<std::shared_ptr<sockets::SocketLink>> links, size_t slotBytes, int nslots);
  void* acquire(size_t bytes) override;
  void publish(size_t bytes, const SlotTag& tag) override;
  bool sendsFromCaller() const override { return true; }
  bool publishFrom(const void* data, size_t bytes, const SlotTag& tag) override;
  size_t slotBytes() const override { return ring_.slotBytes(); }
  Status health() override { return stripes_.health(); }
  void abort() override { stripes_.abort(); }
  bool needsProgress() const override { return true; }
  bool progress() override;
  bool flushed() const override;
  void addPollFds(std::vector<pollfd>& out) const override {
    if (!flushed()) stripes_.addPollFds(out, POLLOUT);
  }
  MemoryHeld held() const override { return {0, ring_.allocated(), 0, 0}; }

 private:
  bool sent(uint64_t message) const;
  bool slotFree();  // the FIFO entry for message published_ may be reused

  Stripes stripes_;
  SlotRing ring_;
  uint64_t published_ = 0;
};

class TcpRecvConnector final : public RecvConnector {
 public:
  TcpRecvConnector(std::vector<std::shared_ptr<sockets::SocketLink>> links, size_t slotBytes, int nslots);
  const void* peek(size_t* bytes, SlotTag* tag) override;
  void release() override;
  Status health() override { return stripes_.health(); }
  void abort() override { stripes_.abort(); }
  bool needsProgress() const override { return true; }
  bool progress() override;
  // A message posted with a destination whose header matches is read
  // straight into it; its slot stays untouched.
  bool landsInCaller() const override { return true; }
  bool post(void* dst, size_t bytes, const SlotTag& tag) override;
  void dropPostings() override;
  // Safe under TLS too: progress() reads every socket whose next message has
  // a free slot until EAGAIN, which leaves no whole record in OpenSSL's
  // buffer (TlsSession::hasBuffered); a socket with no free slot waits for
  // release(), made by the thread that drives this connector, not for data.
  void addPollFds(std::vector<pollfd>& out) const override { stripes_.addPollFds(out, POLLIN); }
  // A socket's read-ahead buffer (Staging).
  static constexpr size_t kStagingBytes = 16384;
  MemoryHeld held() const override {
    return {0, ring_.allocated() + stagingAllocated_.load(std::memory_order_relaxed), 0, 0};
  }

 private:
  // Bytes read from one socket ahead of where they belong: small messages
  // arrive header and payload in one recv() instead of two; large payloads
  // bypass it and land straight in their slot.
  struct Staging {
    std::unique_ptr<char[]> data;
    size_t begin = 0;
    size_t end = 0;
  };

  struct Posting {
    char* dst;
    size_t bytes;
    SlotTag tag;
  };
  // Where message m's payload lands, decided once its header is in: its
  // posting's dst, or its slot.
  char* landing(uint64_t m, const WireHeader& h);

  Stripes stripes_;
  SlotRing ring_;
  std::vector<Staging> staging_;
  std::atomic<uint64_t> stagingAllocated_{0};  // kStagingBytes per socket that needed one
  uint64_t released_ = 0;
  // Postings of messages [.., posted_), one per FIFO entry; and where each
  // message in the FIFO lands.
  std::vector<Posting> postings_;
  uint64_t posted_ = 0;
  std::vector<char*> lands_;
};

}  // namespace strata::tcp
