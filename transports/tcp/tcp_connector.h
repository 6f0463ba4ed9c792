// Connectors over one TCP connection per (pair of ranks, channel), which
// carries both directions. Each end keeps its FIFO of slots in its own
// memory; a message on the wire is a 24-byte header (tag, length) and the
// slot's payload. All I/O is non-blocking and happens in progress(), which
// the channel calls on every poll; TCP's own flow control is the credit
// scheme (a receiver with no free slot stops reading, the sender's socket
// fills, and its slots stay in flight).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "connector.h"

namespace strata::tcp {

struct WireHeader {
  uint64_t seq;
  uint64_t desc;
  uint64_t bytes;
};

// The socket and its sticky error, shared by the two connectors on it.
class TcpLink {
 public:
  TcpLink(int fd, int peerRank, std::string peerHost);
  ~TcpLink();
  TcpLink(const TcpLink&) = delete;
  TcpLink& operator=(const TcpLink&) = delete;

  int fd() const { return fd_; }
  const Status& error() const { return error_; }
  // Records why the connection is unusable (first reason wins).
  void fail(Status why);
  // Shuts the socket down both ways: the peer reads end-of-stream at once.
  void abort();
  std::string peerName() const;

 private:
  int fd_;
  int peerRank_;
  std::string peerHost_;
  Status error_;
};

// Slot storage of one FIFO end.
class SlotRing {
 public:
  SlotRing(size_t slotBytes, int nslots);
  char* slot(uint64_t index) { return data_.get() + (index % nslots_) * slotBytes_; }
  WireHeader& header(uint64_t index) { return headers_[index % nslots_]; }
  size_t slotBytes() const { return slotBytes_; }
  uint64_t nslots() const { return nslots_; }

 private:
  size_t slotBytes_;
  uint64_t nslots_;
  std::unique_ptr<char[]> data_;
  std::vector<WireHeader> headers_;
};

class TcpSendConnector final : public SendConnector {
 public:
  TcpSendConnector(std::shared_ptr<TcpLink> link, size_t slotBytes, int nslots);
  void* acquire(size_t bytes) override;
  void publish(size_t bytes, const SlotTag& tag) override;
  size_t slotBytes() const override { return ring_.slotBytes(); }
  Status health() override { return link_->error(); }
  void abort() override { link_->abort(); }
  bool needsProgress() const override { return true; }
  bool progress() override;
  bool flushed() const override { return sent_ == published_; }

 private:
  std::shared_ptr<TcpLink> link_;
  SlotRing ring_;
  uint64_t published_ = 0;
  uint64_t sent_ = 0;    // messages fully handed to the kernel
  size_t offset_ = 0;    // bytes of message sent_ already sent
};

class TcpRecvConnector final : public RecvConnector {
 public:
  TcpRecvConnector(std::shared_ptr<TcpLink> link, size_t slotBytes, int nslots);
  const void* peek(size_t* bytes, SlotTag* tag) override;
  void release() override;
  Status health() override { return link_->error(); }
  void abort() override { link_->abort(); }
  bool needsProgress() const override { return true; }
  bool progress() override;

 private:
  std::shared_ptr<TcpLink> link_;
  SlotRing ring_;
  uint64_t received_ = 0;  // messages complete in slots
  uint64_t released_ = 0;
  size_t offset_ = 0;      // bytes of message received_ read so far
};

}  // namespace strata::tcp
