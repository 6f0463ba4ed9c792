// Connectors over an ib Link (ib_link.h): the send and receive ends of one
// (pair, channel) share it. The transport always makes both, and the channel
// polls every connector, so the send end alone drives the link (reaps the
// completion queue, arms it for sleeping) for both.
#pragma once

#include <memory>

#include "connector.h"
#include "ib_link.h"

namespace strata::ib {

class IbSendConnector final : public SendConnector {
 public:
  IbSendConnector(std::shared_ptr<Link> link, size_t slotBytes) : link_(std::move(link)), slotBytes_(slotBytes) {}
  void* acquire(size_t) override { return link_->canSend() ? link_->sendPayload() : nullptr; }
  void publish(size_t bytes, const SlotTag& tag) override { link_->send(nullptr, bytes, tag); }
  bool sendsFromCaller() const override { return link_->zeroCopy(); }
  bool publishFrom(const void* data, size_t bytes, const SlotTag& tag) override {
    // Without zero copy the caller's memory is not registered: refuse, as the interface says.
    if (!link_->zeroCopy() || !link_->canSend()) return false;
    link_->send(data, bytes, tag);
    return true;
  }
  size_t slotBytes() const override { return slotBytes_; }
  Status health() override { return link_->health(); }
  void abort() override { link_->abort(); }
  bool needsProgress() const override { return true; }
  bool progress() override { return link_->poll(); }
  bool flushed() const override { return link_->flushed(); }
  // The link's completion events, and its side socket so that a peer's
  // death wakes a sleeper too.
  void addPollFds(std::vector<pollfd>& out) const override {
    const int fd = link_->armForSleep();
    if (fd >= 0) out.push_back({fd, POLLIN, 0});
    out.push_back({link_->sideFd(), POLLIN, 0});
  }
  // The link's FIFOs, both ways: counted here, not by the receive end that shares it.
  MemoryHeld held() const override { return {0, 0, link_->registeredBytes(), 0}; }

 private:
  std::shared_ptr<Link> link_;
  size_t slotBytes_;
};

class IbRecvConnector final : public RecvConnector {
 public:
  explicit IbRecvConnector(std::shared_ptr<Link> link) : link_(std::move(link)) {}
  const void* peek(size_t* bytes, SlotTag* tag) override { return link_->arrived(bytes, tag); }
  void release() override { link_->release(); }
  Status health() override { return link_->health(); }
  void abort() override { link_->abort(); }
  // Its bytes arrive only when the link is polled (by the send end).
  bool needsProgress() const override { return true; }

 private:
  std::shared_ptr<Link> link_;
};

}  // namespace strata::ib
