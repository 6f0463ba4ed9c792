// An in-memory connector: the same FIFO-of-slots contract as a real
// transport, between threads of one process. It lets every plan run for
// 1..16 ranks in milliseconds, and lets tests inject failures.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "connector.h"

namespace strata::test {

class MemFifo {
 public:
  MemFifo(size_t slotBytes, int nslots)
      : slotBytes_(slotBytes), data_(slotBytes * nslots), bytes_(nslots), tags_(nslots), nslots_(nslots) {}

  size_t slotBytes_;
  std::vector<char> data_;
  std::vector<size_t> bytes_;
  std::vector<SlotTag> tags_;
  uint64_t nslots_;
  std::atomic<uint64_t> published{0};
  std::atomic<uint64_t> consumed{0};
  std::atomic<bool> aborted{false};
};

class MemSend final : public SendConnector {
 public:
  explicit MemSend(std::shared_ptr<MemFifo> f) : f_(std::move(f)) {}
  void* acquire(size_t) override {
    uint64_t tail = f_->published.load(std::memory_order_relaxed);
    if (tail - f_->consumed.load(std::memory_order_acquire) >= f_->nslots_) return nullptr;
    return f_->data_.data() + (tail % f_->nslots_) * f_->slotBytes_;
  }
  void publish(size_t bytes, const SlotTag& tag) override {
    uint64_t tail = f_->published.load(std::memory_order_relaxed);
    f_->bytes_[tail % f_->nslots_] = bytes;
    f_->tags_[tail % f_->nslots_] = tag;
    f_->published.store(tail + 1, std::memory_order_release);
  }
  size_t slotBytes() const override { return f_->slotBytes_; }
  Status health() override {
    return f_->aborted ? makeErrorQuiet(STRATA_ERR_REMOTE, "peer aborted") : Status::ok();
  }
  void abort() override { f_->aborted = true; }

 private:
  std::shared_ptr<MemFifo> f_;
};

class MemRecv final : public RecvConnector {
 public:
  explicit MemRecv(std::shared_ptr<MemFifo> f) : f_(std::move(f)) {}
  const void* peek(size_t* bytes, SlotTag* tag) override {
    uint64_t head = f_->consumed.load(std::memory_order_relaxed);
    if (f_->published.load(std::memory_order_acquire) == head) return nullptr;
    *bytes = f_->bytes_[head % f_->nslots_];
    *tag = f_->tags_[head % f_->nslots_];
    return f_->data_.data() + (head % f_->nslots_) * f_->slotBytes_;
  }
  void release() override { f_->consumed.fetch_add(1, std::memory_order_release); }
  Status health() override {
    return f_->aborted ? makeErrorQuiet(STRATA_ERR_REMOTE, "peer aborted") : Status::ok();
  }
  void abort() override { f_->aborted = true; }

 private:
  std::shared_ptr<MemFifo> f_;
};

}  // namespace strata::test
