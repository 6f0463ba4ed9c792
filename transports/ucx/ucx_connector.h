// Connectors over UCP tagged messages. One UCP worker per channel carries
// that channel's traffic to and from every peer; each (channel, peer) has one
// endpoint (UcxLink). A message is the slot's 24-byte header (tag, length)
// followed by its payload, sent as one tagged message whose tag names the
// kind, the sender and the message's index in the FIFO, so a receive posted
// for message k of rank r matches nothing else (no reliance on UCX's
// matching order). The receiver keeps one receive posted in every free slot
// and posts the next one when a slot is released.
//
// Threads: a worker is SERIALIZED, and only the thread driving its channel
// calls into it (progress(), acquire(), publish(), peek(), release(), the
// destructors once the threads are gone). health() and abort() may come from
// any thread, so they touch only atomics and the link's mutex.
#pragma once

#include <ucp/api/ucp.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "connector.h"
#include "link_error.h"
#include "peer_watch.h"

namespace strata::ucx {

// `token` is the sending link's (LinkTokens): UCX matches a tagged message
// on the tag alone, which anyone who reaches a worker can write, so the
// receiver takes a message as its peer's only if it carries the peer's token.
struct WireHeader {
  uint64_t seq;
  uint64_t desc;
  uint64_t bytes;
  uint64_t token;
};

// What a tagged message is; the top two bits of its tag.
enum class Kind : uint64_t { Data = 0, Hello = 1, Abort = 2 };

// kind (2 bits) | sender rank (22 bits) | message index (40 bits)
constexpr uint64_t kIndexBits = 40;
constexpr int kMaxRanks = 1 << 22;
inline ucp_tag_t makeTag(Kind kind, int sender, uint64_t index) {
  return (static_cast<uint64_t>(kind) << 62) | (static_cast<uint64_t>(sender) << kIndexBits) |
         (index & ((uint64_t{1} << kIndexBits) - 1));
}
constexpr ucp_tag_t kFullMask = ~ucp_tag_t{0};

// "rank 3 on hostB: Connection reset by remote peer"-style text for a UCS status.
std::string statusText(ucs_status_t s);

// Memory registered with (and allocated by) UCP for a FIFO's slots.
class Region {
 public:
  Region(ucp_context_h context, size_t bytes);
  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  bool ok() const { return memh_ != nullptr; }
  char* data() const { return data_; }
  ucp_mem_h memh() const { return memh_; }

 private:
  ucp_context_h context_;
  ucp_mem_h memh_ = nullptr;
  char* data_ = nullptr;
};

class UcxLink;

// One channel's worker. The first connector that registers with it (see
// drives()) progresses it from its progress(): the channel polls all its
// connectors on every turn, and each ucp_worker_progress over tcp is a
// system call, so once per turn is enough.
class Worker {
 public:
  Worker(ucp_worker_h worker, int channel) : worker_(worker), channel_(channel) {}
  ~Worker();  // destroys the worker, then the memory its requests may have used
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ucp_worker_h get() const { return worker_; }
  int channel() const { return channel_; }
  bool progress() { return ucp_worker_progress(worker_) != 0; }
  // True for exactly one caller: the connector that drives the worker.
  bool drives(const void* connector) {
    if (!driver_) driver_ = connector;
    return driver_ == connector;
  }
  // Slot memory lives as long as the worker: a cancelled receive may still
  // be writing into it until the worker is gone.
  Region* allocate(ucp_context_h context, size_t bytes);
  // Waits (progressing) until every request is done or `seconds` pass;
  // returns how many were still pending.
  size_t waitAll(const std::vector<void*>& requests, double seconds);
  // The links whose endpoints the destructor closes.
  void adopt(std::shared_ptr<UcxLink> link) { links_.push_back(std::move(link)); }

 private:
  ucp_worker_h worker_;
  int channel_;
  const void* driver_ = nullptr;
  std::vector<std::unique_ptr<Region>> regions_;
  std::vector<std::shared_ptr<UcxLink>> links_;
};

// The first message each way on every (channel, pair); see handshake().
struct Hello {
  uint64_t commTag;
  int32_t rank;
  int32_t channel;
  uint64_t token;
};

// What the two ends of one (channel, pair) put in every message they send:
// a MAC of the job's secret over sender, receiver, channel and communicator,
// which only ranks of the job can compute and which names one direction of
// one link. A message without the right one came from a stranger.
struct LinkTokens {
  uint64_t send;  // this rank's, in what it sends
  uint64_t recv;  // the peer's, expected in what it receives
};

// One (channel, peer): the endpoint and its sticky error, shared by the two
// connectors on it.
class UcxLink : public LinkError {
 public:
  UcxLink(Worker& worker, int myRank, int peerRank, std::string peerHost, LinkTokens tokens);
  UcxLink(const UcxLink&) = delete;
  UcxLink& operator=(const UcxLink&) = delete;

  // Creates the endpoint to the peer's worker address, asking UCX to report
  // the peer's failure; where UCX_TLS offers no transport that can (shared
  // memory), without, watching the peer's process through `watch` instead
  // if it runs on this machine. Then posts the receive for the peer's abort
  // notice.
  Status open(const void* address, std::shared_ptr<PeerWatch> watch);
  ucp_ep_h ep() const { return ep_; }
  // Whether sending on the endpoint makes sense: UCX 1.13 asserts on a send
  // to an endpoint it reported failed (with its newer protocols).
  bool canSend() const { return ep_ && !epFailed_; }
  Worker& worker() const { return worker_; }
  int myRank() const { return myRank_; }
  int peerRank() const { return peerRank_; }
  uint64_t sendToken() const { return tokens_.send; }
  // Whether a message carrying `token` is the peer's; if not, fails the link
  // (an injected message is an error, never data) and says which `what` it was.
  bool fromPeer(uint64_t token, const char* what);

  // error(), after looking at the watched process (any thread).
  Status health();
  // From any thread: marks the link failed; the driver (poll()) or the
  // destructor then sends the peer an abort notice.
  void abort();
  // Driver only: sends a requested abort notice, notices the peer's.
  void poll();
  std::string peerName() const;

  // Teardown by the worker, for all its links at once: the abort notice
  // still to send, the peer's notice receive (cancelled), then the closing
  // endpoint. Each returns a request to wait for, or null.
  void* takeNotice();
  void* cancelNoticeReceive();
  void* closeEndpoint();

  // The connect handshake's messages, here so that they outlive any request
  // a failed handshake leaves behind.
  Hello helloOut{};
  Hello helloIn{};

 private:
  static void onError(void* arg, ucp_ep_h ep, ucs_status_t status);
  void sendNotice();
  void peerAborted();

  Worker& worker_;
  int myRank_;
  int peerRank_;
  std::string peerHost_;
  LinkTokens tokens_;
  ucp_ep_h ep_ = nullptr;
  bool peerErrors_ = true;             // UCP_ERR_HANDLING_MODE_PEER
  bool epFailed_ = false;              // UCX reported the endpoint failed (driver only)
  std::shared_ptr<PeerWatch> watch_;   // only without peerErrors_
  std::atomic<bool> abortRequested_{false};
  // Driver-only state of the abort notices (one word each way).
  bool noticeSent_ = false;
  void* noticeSend_ = nullptr;
  void* noticeRecv_ = nullptr;
  uint64_t noticeOut_ = 0;
  uint64_t noticeIn_ = 0;
};

// A FIFO end's slots in registered memory: each is a 64-byte header area
// (the WireHeader at its end, right before the payload) and slotBytes of
// payload, so payloads stay 64-byte aligned for the reduction kernels.
class SlotRing {
 public:
  static constexpr size_t kHeaderArea = 64;
  SlotRing(Worker& worker, ucp_context_h context, size_t slotBytes, int nslots);
  bool ok() const { return region_->ok(); }
  uint64_t nslots() const { return nslots_; }
  size_t slotBytes() const { return slotBytes_; }
  // The message (header then payload) of FIFO entry `index`.
  char* message(uint64_t index) const {
    return region_->data() + (index % nslots_) * (kHeaderArea + slotBytes_) + kHeaderArea - sizeof(WireHeader);
  }
  WireHeader& header(uint64_t index) const { return *reinterpret_cast<WireHeader*>(message(index)); }
  char* payload(uint64_t index) const { return message(index) + sizeof(WireHeader); }
  ucp_mem_h memh() const { return region_->memh(); }
  uint64_t bytes() const { return bytesFor(slotBytes_, nslots_); }
  static uint64_t bytesFor(size_t slotBytes, uint64_t nslots) { return (kHeaderArea + slotBytes) * nslots; }

 private:
  size_t slotBytes_;
  uint64_t nslots_;
  Region* region_;  // owned by the worker
};

// Shared by both ends: releases requests at the end of a connector's life.
void releaseRequests(UcxLink& link, std::vector<void*>& requests, bool cancel);

class UcxSendConnector final : public SendConnector {
 public:
  UcxSendConnector(std::shared_ptr<UcxLink> link, ucp_context_h context, size_t slotBytes, int nslots);
  ~UcxSendConnector() override;
  MemoryHeld held() const override { return {0, ring_.bytes(), 0, 0}; }
  void* acquire(size_t bytes) override;
  void publish(size_t bytes, const SlotTag& tag) override;
  bool sendsFromCaller() const override { return true; }
  bool publishFrom(const void* data, size_t bytes, const SlotTag& tag) override;
  size_t slotBytes() const override { return ring_.slotBytes(); }
  Status health() override { return link_->health(); }
  void abort() override { link_->abort(); }
  bool needsProgress() const override { return true; }
  bool progress() override;
  bool flushed() const override;

 private:
  bool slotFree();       // FIFO entry published_ may be reused
  bool reap();           // frees completed sends in order; true if any
  void start(uint64_t index, const void* buffer, size_t count, ucp_request_param_t& p);

  std::shared_ptr<UcxLink> link_;
  SlotRing ring_;
  std::vector<void*> requests_;     // per FIFO entry: its send, or null when done
  std::vector<ucp_dt_iov_t> iovs_;  // per FIFO entry: header, caller's payload
  uint64_t published_ = 0;
  uint64_t reaped_ = 0;  // every message below this has completed
};

class UcxRecvConnector final : public RecvConnector {
 public:
  UcxRecvConnector(std::shared_ptr<UcxLink> link, ucp_context_h context, size_t slotBytes, int nslots);
  ~UcxRecvConnector() override;
  MemoryHeld held() const override { return {0, ring_.bytes(), 0, 0}; }
  // Posts the first nslots receives.
  Status start();
  const void* peek(size_t* bytes, SlotTag* tag) override;
  void release() override;
  Status health() override { return link_->health(); }
  void abort() override { link_->abort(); }
  bool needsProgress() const override { return true; }
  bool progress() override;

 private:
  bool post(uint64_t index);
  bool complete(uint64_t index);  // message `index` has landed in its slot
  // Checks a received message (its token, its length) before anyone reads it.
  bool checkLanded(uint64_t index);

  std::shared_ptr<UcxLink> link_;
  SlotRing ring_;
  std::vector<void*> requests_;  // per FIFO entry: its receive while in flight
  std::vector<bool> landed_;     // per FIFO entry: its message is in the slot, checked
  std::vector<bool> arrived_;    // per FIFO entry: in the slot at once when posted, not checked yet
  uint64_t released_ = 0;
};

}  // namespace strata::ucx
