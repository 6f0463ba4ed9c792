#include "ib_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>

#include "clock.h"
#include "log.h"

namespace strata::ib {
namespace {

// Work request ids: the kind, the queue pair and, for sends, the queue
// pair's post count, so one completion retires everything before it.
enum Kind : uint64_t { kSlot = 0, kZeroCopy = 1, kCredit = 2, kRecv = 3 };
constexpr int kSignalEvery = 8;
constexpr double kPeerCheckSeconds = 0.002;
// A link polled this long without a completion writes its credit again, as
// a probe: a rank that only waits to receive learns that way, within the
// retry timeout, that the link is down (a dead peer closes the side socket).
constexpr double kProbeSeconds = 0.5;
constexpr size_t kCacheEntries = 1024;

uint64_t wrId(uint64_t kind, int qp, uint64_t seq) { return kind << 56 | uint64_t(qp) << 48 | seq; }
uint64_t wrKind(uint64_t id) { return id >> 56; }
int wrQp(uint64_t id) { return static_cast<int>(id >> 48 & 0xff); }
uint64_t wrSeq(uint64_t id) { return id & ((1ull << 48) - 1); }

const char* hint(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_RETRY_EXC_ERR:
      return "; the peer stopped acknowledging: it exited, or the link between the hosts is down "
             "(STRATA_IB_TIMEOUT and STRATA_IB_RETRY_CNT bound how long it is retried)";
    case IBV_WC_REM_ACCESS_ERR:
    case IBV_WC_LOC_PROT_ERR:
      return "; a memory registration was refused: was a buffer freed while an operation used it?";
    case IBV_WC_RNR_RETRY_EXC_ERR:
      return "; the receiver had no receive posted (a bug in strata)";
    case IBV_WC_WR_FLUSH_ERR:
      return "; the queue pair had already failed or was aborted";
    case IBV_WC_LOC_QP_OP_ERR:
      return "; the local device could not send: is its network link down?";
    default:
      return "";
  }
}

// A slot's header and payload, 64-byte aligned.
size_t strideOf(size_t slotBytes) { return kHeaderBytes + ((slotBytes + 63) & ~size_t(63)); }
// Send-queue entries: every slot's write and credit, and unsignalled runs.
int sendQueueFor(int nslots) { return 2 * nslots + 4 * kSignalEvery; }
// The two registered regions (init()): the send FIFO with a credit value
// per send-queue entry, and the receive FIFO with its credit word.
size_t sendRegionBytes(size_t fifo, uint32_t sqDepth) { return fifo + sqDepth * sizeof(uint64_t); }
size_t recvRegionBytes(size_t fifo) { return fifo + 64; }

}  // namespace

uint64_t Link::mostRegistered(size_t slotBytes, int nslots) {
  const size_t fifo = static_cast<size_t>(nslots) * strideOf(slotBytes);
  return sendRegionBytes(fifo, static_cast<uint32_t>(sendQueueFor(nslots))) + recvRegionBytes(fifo);
}

Link::Link(Device& device, std::shared_ptr<sockets::SocketLink> side, const LinkConfig& config)
    : device_(device),
      side_(std::move(side)),
      config_(config),
      stride_(strideOf(config.slotBytes)),
      sqDepth_(static_cast<uint32_t>(std::min(sendQueueFor(config.nslots), device.maxQpWr()))),
      psn_(std::random_device{}() & 0xffffff),
      cache_(device.pd(), kCacheEntries),
      arrived_(static_cast<size_t>(config.nslots), 0) {}

Link::~Link() {
  for (Qp& q : qps_)
    if (q.qp) ibv_destroy_qp(q.qp);
  drainEvents();
  if (cq_) ibv_destroy_cq(cq_);
  if (events_) ibv_destroy_comp_channel(events_);
  if (readyFd_ >= 0) close(readyFd_);
  if (remoteMr_) ibv_dereg_mr(remoteMr_);
  if (localMr_) ibv_dereg_mr(localMr_);
  std::free(remote_);
  std::free(local_);
}

void Link::failWith(const char* what, int err) {
  side_->fail(STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: %s for %s failed: %s", what, side_->peerName().c_str(),
                           errnoText(err).c_str()));
}

Status Link::registerRegion(size_t bytes, int access, const char* what, char** memory, ibv_mr** mr) {
  if (posix_memalign(reinterpret_cast<void**>(memory), 4096, bytes) != 0)
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: out of memory for the %zu bytes of the %s", bytes, what);
  std::memset(*memory, 0, bytes);
  registered_ += bytes;
  *mr = ibv_reg_mr(device_.pd(), *memory, bytes, access);
  if (!*mr) {
    const int err = errno;
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: ibv_reg_mr of the %zu bytes of the %s failed: %s%s", bytes, what,
                        errnoText(err).c_str(), err == ENOMEM ? " (raise ulimit -l: RDMA pins memory)" : "");
  }
  return Status::ok();
}

Status Link::init() {
  // Two registrations: the peer may write only into what it must (the
  // receive FIFO and the credit word, whose key it is given); the send FIFO
  // and the credit values, which only this end's adapter reads, are
  // registered for local access alone, so no key a peer holds reaches them.
  const size_t fifo = static_cast<size_t>(config_.nslots) * stride_;
  STRATA_CHECK(registerRegion(sendRegionBytes(fifo, sqDepth_), IBV_ACCESS_LOCAL_WRITE, "send FIFO", &local_,
                              &localMr_));
  creditOut_ = reinterpret_cast<uint64_t*>(local_ + fifo);
  STRATA_CHECK(registerRegion(recvRegionBytes(fifo), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
                              "receive FIFO", &remote_, &remoteMr_));
  creditIn_ = reinterpret_cast<volatile uint64_t*>(remote_ + fifo);
  const int cqe = config_.nqps * static_cast<int>(sqDepth_ + config_.nslots) + 16;
  events_ = ibv_create_comp_channel(device_.context());
  if (!events_)
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: ibv_create_comp_channel failed: %s", errnoText(errno).c_str());
  const int flags = fcntl(events_->fd, F_GETFL);
  if (flags < 0 || fcntl(events_->fd, F_SETFL, flags | O_NONBLOCK) != 0)
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: fcntl(O_NONBLOCK) on the event channel failed: %s",
                        errnoText(errno).c_str());
  readyFd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (readyFd_ < 0) {
    const int err = errno;
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: eventfd() failed: %s", errnoText(err).c_str());
  }
  cq_ = ibv_create_cq(device_.context(), cqe, nullptr, events_, 0);
  if (!cq_) return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: ibv_create_cq(%d) failed: %s", cqe, errnoText(errno).c_str());
  qps_.resize(config_.nqps);
  for (int i = 0; i < config_.nqps; ++i) {
    ibv_qp_init_attr init{};
    init.send_cq = cq_;
    init.recv_cq = cq_;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = sqDepth_;
    init.cap.max_recv_wr = static_cast<uint32_t>(config_.nslots);
    init.cap.max_send_sge = 2;
    init.cap.max_recv_sge = 1;
    qps_[i].qp = ibv_create_qp(device_.pd(), &init);
    if (!qps_[i].qp)
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: ibv_create_qp failed: %s", errnoText(errno).c_str());
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = static_cast<uint8_t>(device_.port());
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    if (int err = ibv_modify_qp(qps_[i].qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: queue pair to INIT failed: %s", errnoText(err).c_str());
    for (int r = 0; r < config_.nslots; ++r)
      if (!postRecv(i)) return health();
  }
  return Status::ok();
}

LinkCard Link::card() const {
  LinkCard c{};
  for (int i = 0; i < config_.nqps; ++i) c.qpn[i] = qps_[i].qp->qp_num;
  c.psn = psn_;
  c.nqps = static_cast<uint32_t>(config_.nqps);
  std::memcpy(c.gid, device_.gid().raw, sizeof(c.gid));
  c.lid = device_.lid();
  c.mtu = static_cast<uint16_t>(device_.mtu());
  c.nslots = static_cast<uint32_t>(config_.nslots);
  c.stride = stride_;
  c.ringAddr = reinterpret_cast<uint64_t>(remote_);
  c.creditAddr = reinterpret_cast<uint64_t>(creditIn_);
  c.rkey = remoteMr_->rkey;
  return c;
}

Status Link::connect(const LinkCard& peer) {
  if (peer.nqps != static_cast<uint32_t>(config_.nqps) || peer.nslots != static_cast<uint32_t>(config_.nslots) ||
      peer.stride != stride_)
    return STRATA_ERROR(STRATA_ERR_INVALID_USAGE,
                        "ib: %s uses %u queue pairs and %u slots of %llu bytes, this rank %d, %d and %zu: set "
                        "STRATA_IB_QPS_PER_CONN, STRATA_NSLOTS and STRATA_SLOT_BYTES alike everywhere",
                        side_->peerName().c_str(), peer.nqps, peer.nslots, (unsigned long long)peer.stride,
                        config_.nqps, config_.nslots, stride_);
  peer_ = peer;
  for (int i = 0; i < config_.nqps; ++i) {
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = std::min(device_.mtu(), static_cast<ibv_mtu>(peer.mtu));
    attr.dest_qp_num = peer.qpn[i];
    attr.rq_psn = peer.psn;
    attr.max_dest_rd_atomic = 1;
    attr.min_rnr_timer = 12;
    attr.ah_attr.port_num = static_cast<uint8_t>(device_.port());
    attr.ah_attr.dlid = peer.lid;
    if (device_.roce()) {
      attr.ah_attr.is_global = 1;
      std::memcpy(attr.ah_attr.grh.dgid.raw, peer.gid, sizeof(peer.gid));
      attr.ah_attr.grh.sgid_index = static_cast<uint8_t>(device_.gidIndex());
      attr.ah_attr.grh.hop_limit = 255;
    }
    if (int err = ibv_modify_qp(qps_[i].qp, &attr,
                                IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: queue pair to %s could not reach RTR: %s",
                          side_->peerName().c_str(), errnoText(err).c_str());
    attr = ibv_qp_attr{};
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = static_cast<uint8_t>(config_.timeout);
    attr.retry_cnt = static_cast<uint8_t>(config_.retryCount);
    attr.rnr_retry = 6;
    attr.sq_psn = psn_;
    attr.max_rd_atomic = 1;
    if (int err = ibv_modify_qp(qps_[i].qp, &attr,
                                IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                    IBV_QP_MAX_QP_RD_ATOMIC))
      return STRATA_ERROR(STRATA_ERR_SYSTEM, "ib: queue pair to %s could not reach RTS: %s",
                          side_->peerName().c_str(), errnoText(err).c_str());
  }
  return Status::ok();
}

void Link::abort() {
  side_->abort();
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  for (Qp& q : qps_) ibv_modify_qp(q.qp, &attr, IBV_QP_STATE);
}

bool Link::post(int qi, int kind, ibv_sge* sges, int nsge, uint64_t remote, uint32_t rkey, bool imm,
                uint32_t immData, bool signal) {
  Qp& q = qps_[qi];
  ibv_send_wr wr{};
  ++q.posted;
  signal = signal || q.posted % kSignalEvery == 0;
  wr.wr_id = wrId(kind, qi, q.posted);
  wr.sg_list = sges;
  wr.num_sge = nsge;
  wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
  wr.send_flags = signal ? IBV_SEND_SIGNALED : 0;
  wr.imm_data = htonl(immData);
  wr.wr.rdma.remote_addr = remote;
  wr.wr.rdma.rkey = rkey;
  ibv_send_wr* bad = nullptr;
  if (int err = ibv_post_send(q.qp, &wr, &bad)) {
    failWith("ibv_post_send", err);
    return false;
  }
  return true;
}

bool Link::postRecv(int qi) {
  ibv_recv_wr wr{};
  wr.wr_id = wrId(kRecv, qi, 0);
  ibv_recv_wr* bad = nullptr;
  if (int err = ibv_post_recv(qps_[qi].qp, &wr, &bad)) {
    failWith("ibv_post_recv", err);
    return false;
  }
  return true;
}

bool Link::postCredit(bool signal) {
  Qp& q = qps_[0];
  if (!room(q)) return false;
  uint64_t& value = creditOut_[q.posted % sqDepth_];
  value = released_;
  ibv_sge sge{reinterpret_cast<uint64_t>(&value), sizeof(value), localMr_->lkey};
  post(0, kCredit, &sge, 1, peer_.creditAddr, peer_.rkey, false, 0, signal);
  return true;
}

bool Link::canSend() {
  if (!side_->ok()) return false;
  const uint64_t peerReleased = __atomic_load_n(creditIn_, __ATOMIC_ACQUIRE);
  return published_ - peerReleased < static_cast<uint64_t>(config_.nslots) &&
         room(qps_[published_ % config_.nqps]);
}

void Link::send(const void* data, size_t bytes, const SlotTag& tag) {
  char* slot = sendSlot(published_);
  auto* header = reinterpret_cast<SlotHeader*>(slot);
  *header = SlotHeader{tag.seq, tag.desc, bytes};
  const int qi = static_cast<int>(published_ % config_.nqps);
  const uint64_t remote = peer_.ringAddr + (published_ % config_.nslots) * stride_;
  const uint32_t immData = static_cast<uint32_t>(published_);
  uint32_t lkey = 0;
  if (data && bytes > 0 && config_.zeroCopy) lkey = cache_.lookup(data, bytes, tag.seq, flushed());
  if (lkey) {
    ibv_sge sges[2] = {{reinterpret_cast<uint64_t>(slot), static_cast<uint32_t>(kHeaderBytes), localMr_->lkey},
                       {reinterpret_cast<uint64_t>(data), static_cast<uint32_t>(bytes), lkey}};
    if (post(qi, kZeroCopy, sges, 2, remote, peer_.rkey, true, immData, true)) ++zeroCopyPosted_;
  } else {
    if (data && bytes > 0) std::memcpy(slot + kHeaderBytes, data, bytes);
    ibv_sge sge{reinterpret_cast<uint64_t>(slot), static_cast<uint32_t>(kHeaderBytes + bytes), localMr_->lkey};
    post(qi, kSlot, &sge, 1, remote, peer_.rkey, true, immData, false);
  }
  ++published_;
}

const char* Link::arrived(size_t* bytes, SlotTag* tag) {
  const size_t slot = released_ % config_.nslots;
  if (!arrived_[slot]) return nullptr;
  const auto* header = reinterpret_cast<const SlotHeader*>(recvSlot(released_));
  *bytes = header->bytes;
  *tag = SlotTag{header->seq, header->desc};
  return recvSlot(released_) + kHeaderBytes;
}

void Link::release() {
  arrived_[released_ % config_.nslots] = 0;
  ++released_;
  creditPending_ = !postCredit();
}

void Link::completed(const ibv_wc& wc) {
  const uint64_t kind = wrKind(wc.wr_id);
  const int qi = wrQp(wc.wr_id);
  if (wc.status != IBV_WC_SUCCESS) {
    // Later requests flush with IBV_WC_WR_FLUSH_ERR; the first error is the cause.
    if (!side_->ok()) return;
    // The peer, or the way to it, is gone: what a lost link or a dead rank
    // looks like from here. Anything else is this host's problem.
    const bool peer = wc.status == IBV_WC_RETRY_EXC_ERR || wc.status == IBV_WC_WR_FLUSH_ERR ||
                      wc.status == IBV_WC_REM_ABORT_ERR || wc.status == IBV_WC_LOC_QP_OP_ERR;
    ibv_port_attr port{};
    const bool portDown = ibv_query_port(device_.context(), static_cast<uint8_t>(device_.port()), &port) == 0 &&
                          port.state != IBV_PORT_ACTIVE;
    side_->fail(STRATA_ERROR(peer ? STRATA_ERR_REMOTE : STRATA_ERR_SYSTEM,
                             "ib: %s with %s failed: %s (status %d, vendor error %#x, queue pair %d)%s%s%s",
                             kind == kRecv ? "a receive" : "an RDMA write", side_->peerName().c_str(),
                             ibv_wc_status_str(wc.status), wc.status, wc.vendor_err, qi, hint(wc.status),
                             portDown ? "; this host's port is down: " : "",
                             portDown ? device_.label().c_str() : ""));
    return;
  }
  if (kind == kRecv) {
    const uint32_t k = ntohl(wc.imm_data);
    const uint32_t ahead = k - static_cast<uint32_t>(released_);
    if (ahead >= static_cast<uint32_t>(config_.nslots)) {
      side_->fail(STRATA_ERROR(STRATA_ERR_INTERNAL, "ib: message %u from %s arrived outside the window [%llu, +%d)",
                               k, side_->peerName().c_str(), (unsigned long long)released_, config_.nslots));
      return;
    }
    arrived_[k % config_.nslots] = 1;
    postRecv(qi);
    return;
  }
  qps_[qi].retired = std::max(qps_[qi].retired, wrSeq(wc.wr_id));
  if (kind == kZeroCopy) ++zeroCopyDone_;
}

void Link::drainEvents() {
  if (!armed_) return;
  // Non-blocking: every event that fired is taken and acknowledged (a queue
  // with unacknowledged events cannot be destroyed).
  ibv_cq* cq = nullptr;
  void* context = nullptr;
  unsigned events = 0;
  while (ibv_get_cq_event(events_, &cq, &context) == 0) ++events;
  if (events) {
    ibv_ack_cq_events(cq_, events);
    armed_ = false;
  }
}

int Link::armForSleep() {
  if (!side_->ok()) return -1;
  if (!armed_) {
    if (ibv_req_notify_cq(cq_, 0) != 0) return -1;
    armed_ = true;
  }
  // A completion that landed before the arming raises no event: look once more.
  ibv_wc wc;
  if (ibv_poll_cq(cq_, 1, &wc) > 0) {
    if (early_.empty()) {
      const uint64_t one = 1;
      (void)!write(readyFd_, &one, sizeof(one));
    }
    early_.push_back(wc);
    return readyFd_;
  }
  return early_.empty() ? events_->fd : readyFd_;
}

bool Link::poll() {
  ibv_wc wcs[16];
  bool any = !early_.empty();
  if (any) {
    uint64_t count;
    (void)!read(readyFd_, &count, sizeof(count));
    for (const ibv_wc& wc : early_) completed(wc);
    early_.clear();
  }
  drainEvents();
  for (;;) {
    const int n = ibv_poll_cq(cq_, 16, wcs);
    if (n < 0) {
      failWith("ibv_poll_cq", EIO);
      return true;
    }
    for (int i = 0; i < n; ++i) completed(wcs[i]);
    any |= n > 0;
    if (n < 16) break;
  }
  if (creditPending_) creditPending_ = !postCredit();
  const double now = nowSeconds();
  if (any || lastCompletion_ == 0) lastCompletion_ = now;
  if (now - lastCompletion_ > kProbeSeconds && room(qps_[0]) && side_->ok()) {
    STRATA_TRACE(NET, "ib: probing %s after %.1f s without a completion; sent %llu (peer released %llu), "
                 "released %llu, slot %llu arrived %d, send queue %llu posted %llu retired, %zu early, armed %d",
                 side_->peerName().c_str(), now - lastCompletion_, (unsigned long long)published_,
                 (unsigned long long)__atomic_load_n(creditIn_, __ATOMIC_ACQUIRE), (unsigned long long)released_,
                 (unsigned long long)(released_ % config_.nslots), arrived_[released_ % config_.nslots],
                 (unsigned long long)qps_[0].posted, (unsigned long long)qps_[0].retired, early_.size(), armed_);
    postCredit(true);
    lastCompletion_ = now;
  }
  if (now >= nextPeerCheck_) {
    nextPeerCheck_ = now + kPeerCheckSeconds;
    char byte;
    side_->ioFailed(recv(side_->fd(), &byte, 1, MSG_PEEK | MSG_DONTWAIT), "watching");
  }
  return any;
}

}  // namespace strata::ib
