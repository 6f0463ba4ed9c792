// One (pair of ranks, channel) over RDMA: `nqps` RC queue pairs sharing one
// completion queue, and the memory both directions of the pair need.
//
// Sending message k writes its slot (a 64-byte header, then the payload)
// with RDMA WRITE WITH IMMEDIATE straight into slot k % nslots of the
// receiver's registered FIFO, on queue pair k % nqps; the immediate is k, and
// its completion on the receiver says the bytes have landed. The receiver,
// once it has consumed a slot, RDMA-writes its count of released messages
// into the sender's credit word: the sender may run at most nslots messages
// ahead of it. Every queue pair keeps nslots receives posted, so a write can
// never find the receiver not ready.
//
// Only some work requests are signalled: sends straight from the caller's
// memory (the operation must not finish before they have left) and every
// kSignalEvery-th request otherwise, which retires the unsignalled ones
// before it from the send queue.
//
// A TCP socket per peer (shared by its channels) carried the queue pair
// details while connecting and stays open: its end-of-stream is how a peer
// that died or aborted is noticed even by a rank that only waits to receive.
#pragma once

#include <infiniband/verbs.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "connector.h"
#include "ib_device.h"
#include "ib_mr_cache.h"
#include "socket_link.h"

namespace strata::ib {

constexpr int kMaxQps = 16;
constexpr size_t kHeaderBytes = 64;

struct SlotHeader {
  uint64_t seq;
  uint64_t desc;
  uint64_t bytes;
};

// What the peer needs to reach this end; travels over the side socket.
struct LinkCard {
  uint32_t qpn[kMaxQps];
  uint32_t psn;
  uint32_t nqps;
  uint8_t gid[16];
  uint16_t lid;
  uint16_t mtu;
  uint32_t nslots;
  uint64_t stride;  // bytes from one slot to the next
  uint64_t ringAddr;
  uint64_t creditAddr;
  uint32_t rkey;  // of the one registration the peer may write: the FIFO and the credit word
  uint32_t pad;
};

struct LinkConfig {
  int nqps;
  size_t slotBytes;
  int nslots;
  int timeout;   // ibv_qp_attr.timeout: 4.096 us * 2^timeout per try
  int retryCount;
  bool zeroCopy;  // register and send from the caller's buffers
};

class Link {
 public:
  Link(Device& device, std::shared_ptr<sockets::SocketLink> side, const LinkConfig& config);
  ~Link();
  Link(const Link&) = delete;
  Link& operator=(const Link&) = delete;

  // Creates the queue pairs and registers the FIFOs.
  Status init();
  LinkCard card() const;
  // Brings the queue pairs up to send to `peer`.
  Status connect(const LinkCard& peer);

  Status health() const { return side_->error(); }
  void abort();
  // Its two registered FIFOs' bytes (set by init(), before connectors exist).
  uint64_t registeredBytes() const { return registered_; }
  // The most a link with `slotBytes` slots, `nslots` of them, registers
  // (a device with smaller queues registers less).
  static uint64_t mostRegistered(size_t slotBytes, int nslots);
  // Reaps completions, sends a pending credit, and checks now and then that
  // the peer is still there. True if anything completed.
  bool poll();
  // For a thread about to sleep: arms the completion queue's event, so that
  // the next completion makes the returned descriptor readable. Completions
  // that raced with the arming are kept for the next poll(), and the
  // descriptor returned then is one that is readable already.
  int armForSleep();
  int sideFd() const { return side_->fd(); }

  // Sending side.
  bool canSend();
  char* sendPayload() { return sendSlot(published_) + kHeaderBytes; }
  // Posts message `published_` from its slot, or from `data` (the caller's
  // memory) when it is not null and can be registered.
  void send(const void* data, size_t bytes, const SlotTag& tag);
  bool flushed() const { return zeroCopyDone_ == zeroCopyPosted_; }
  bool zeroCopy() const { return config_.zeroCopy; }

  // Receiving side.
  const char* arrived(size_t* bytes, SlotTag* tag);
  void release();

 private:
  struct Qp {
    ibv_qp* qp = nullptr;
    uint64_t posted = 0;   // work requests posted to the send queue
    uint64_t retired = 0;  // of those, known complete
  };
  char* sendSlot(uint64_t k) { return local_ + (k % config_.nslots) * stride_; }
  char* recvSlot(uint64_t k) { return remote_ + (k % config_.nslots) * stride_; }
  // Allocates and registers `bytes` (zeroed) with `access`; `what` names it in errors.
  Status registerRegion(size_t bytes, int access, const char* what, char** memory, ibv_mr** mr);
  uint64_t registered_ = 0;
  bool room(const Qp& q) const { return q.posted - q.retired + 1 < sqDepth_; }
  // Posts one RDMA write on queue pair `qi`; false (and the link failed) on error.
  bool post(int qi, int kind, ibv_sge* sges, int nsge, uint64_t remote, uint32_t rkey, bool imm, uint32_t immData,
            bool signal);
  bool postRecv(int qi);
  // Writes released_ into the peer's credit word; false if the queue is full.
  bool postCredit(bool signal = false);
  void failWith(const char* what, int err);
  void completed(const ibv_wc& wc);
  void drainEvents();

  Device& device_;
  std::shared_ptr<sockets::SocketLink> side_;
  LinkConfig config_;
  size_t stride_;
  uint32_t sqDepth_;
  uint32_t psn_;
  ibv_comp_channel* events_ = nullptr;  // wakes sleeping threads (armForSleep)
  ibv_cq* cq_ = nullptr;
  bool armed_ = false;
  std::vector<ibv_wc> early_;  // reaped by armForSleep, handled by poll
  int readyFd_ = -1;           // eventfd, readable while early_ is not empty
  std::vector<Qp> qps_;
  char* local_ = nullptr;   // send FIFO, credits out: the adapter reads them
  ibv_mr* localMr_ = nullptr;
  char* remote_ = nullptr;  // receive FIFO, credit in: the peer writes them
  ibv_mr* remoteMr_ = nullptr;
  volatile uint64_t* creditIn_ = nullptr;  // the peer's released count, written by the peer
  uint64_t* creditOut_ = nullptr;          // sqDepth_ values, one per send queue entry
  LinkCard peer_{};
  MrCache cache_;

  uint64_t published_ = 0;
  uint64_t zeroCopyPosted_ = 0;
  uint64_t zeroCopyDone_ = 0;
  uint64_t released_ = 0;
  bool creditPending_ = false;
  std::vector<uint8_t> arrived_;  // per receive slot
  double nextPeerCheck_ = 0;
  double lastCompletion_ = 0;
};

}  // namespace strata::ib
