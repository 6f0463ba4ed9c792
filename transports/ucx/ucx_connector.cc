#include "ucx_connector.h"

#include <algorithm>

#include "clock.h"
#include "log.h"
#include "secret.h"

namespace strata::ucx {
namespace {

// Teardown waits: long enough for a live peer's transport to answer, short
// enough that a dead one costs little (its endpoint is forced closed).
constexpr double kDrainSeconds = 1.0;
constexpr double kCloseSeconds = 2.0;

// Every operation names its memory as host memory: UCP then skips probing
// the pointer's memory type on each call.
ucp_request_param_t hostParams(ucp_mem_h memh) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  if (memh) {
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
    p.memh = memh;
  }
  return p;
}

// A request UCP handed back: null when the operation completed at once or
// failed (then *error says why), else the request to check later.
void* keep(ucs_status_ptr_t r, ucs_status_t* error) {
  *error = UCS_OK;
  if (UCS_PTR_IS_ERR(r)) {
    *error = UCS_PTR_STATUS(r);
    return nullptr;
  }
  return r;
}

bool pending(void* request) { return request && ucp_request_check_status(request) == UCS_INPROGRESS; }

void freeAll(std::vector<void*>& requests) {
  // A request still in flight is released by UCP when it completes (or when
  // its worker is destroyed).
  for (void* r : requests)
    if (r) ucp_request_free(r);
  requests.clear();
}

}  // namespace

std::string statusText(ucs_status_t s) { return ucs_status_string(s); }

Region::Region(ucp_context_h context, size_t bytes) : context_(context) {
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  p.length = bytes;
  p.flags = UCP_MEM_MAP_ALLOCATE;
  if (ucp_mem_map(context_, &p, &memh_) != UCS_OK) {
    memh_ = nullptr;
    return;
  }
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
  if (ucp_mem_query(memh_, &attr) != UCS_OK) {
    ucp_mem_unmap(context_, memh_);
    memh_ = nullptr;
    return;
  }
  data_ = static_cast<char*>(attr.address);
}

Region::~Region() {
  if (memh_) ucp_mem_unmap(context_, memh_);
}

Worker::~Worker() {
  // Abort notices first (the peers should hear why), then every endpoint at
  // once, so a dead peer costs one bounded wait rather than one per link.
  std::vector<void*> requests;
  for (auto& l : links_) {
    if (void* r = l->takeNotice()) requests.push_back(r);
    if (void* r = l->cancelNoticeReceive()) requests.push_back(r);
  }
  waitAll(requests, kDrainSeconds);
  freeAll(requests);
  for (auto& l : links_)
    if (void* r = l->closeEndpoint()) requests.push_back(r);
  size_t left = waitAll(requests, kCloseSeconds);
  if (left > 0)
    STRATA_WARN(NET, "channel %d: %zu ucx endpoint(s) did not close within %.0f s; destroying them with the worker",
                channel_, left, kCloseSeconds);
  freeAll(requests);
  links_.clear();
  ucp_worker_destroy(worker_);
  regions_.clear();  // no request can touch slot memory any more
}

Region* Worker::allocate(ucp_context_h context, size_t bytes) {
  regions_.push_back(std::make_unique<Region>(context, bytes));
  return regions_.back().get();
}

size_t Worker::waitAll(const std::vector<void*>& requests, double seconds) {
  const double deadline = nowSeconds() + seconds;
  for (;;) {
    size_t left = std::count_if(requests.begin(), requests.end(), pending);
    if (left == 0 || nowSeconds() > deadline) return left;
    ucp_worker_progress(worker_);
  }
}

UcxLink::UcxLink(Worker& worker, int myRank, int peerRank, std::string peerHost, LinkTokens tokens)
    : worker_(worker), myRank_(myRank), peerRank_(peerRank), peerHost_(std::move(peerHost)), tokens_(tokens) {}

bool UcxLink::fromPeer(uint64_t token, const char* what) {
  if (security::sameBytes(&token, &tokens_.recv, sizeof(token))) return true;
  fail(STRATA_ERROR(STRATA_ERR_REMOTE,
                    "%s tagged as from %s does not carry its token: another process that reaches this rank's "
                    "UCX worker sent it (not a rank of this job)",
                    what, peerName().c_str()));
  return false;
}

std::string UcxLink::peerName() const { return "rank " + std::to_string(peerRank_) + " on " + peerHost_; }

void UcxLink::abort() {
  abortRequested_.store(true, std::memory_order_release);
  fail(makeErrorQuiet(STRATA_ERR_REMOTE, "connection to %s aborted by this rank", peerName().c_str()));
}

void UcxLink::onError(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* link = static_cast<UcxLink*>(arg);
  link->epFailed_ = true;
  link->fail(makeErrorQuiet(STRATA_ERR_REMOTE, "ucx connection to %s failed: %s (it failed, aborted or exited)",
                            link->peerName().c_str(), ucs_status_string(status)));
}

Status UcxLink::health() {
  if (ok() && watch_) {
    Status s = watch_->check();
    if (!s.isOk()) fail(s);
  }
  return error();
}

Status UcxLink::open(const void* address, std::shared_ptr<PeerWatch> watch) {
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                 UCP_EP_PARAM_FIELD_ERR_HANDLER;
  p.address = static_cast<const ucp_address_t*>(address);
  // PEER mode: a peer that dies becomes an error callback, not a hang.
  p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  p.err_handler.cb = &UcxLink::onError;
  p.err_handler.arg = this;
  ucs_status_t s = ucp_ep_create(worker_.get(), &p, &ep_);
  if (s == UCS_ERR_UNREACHABLE) {
    // UCX 1.13's shared-memory transports (posix, sysv) cannot report a dead
    // peer and refuse PEER mode: go without, and watch the process.
    peerErrors_ = false;
    p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
    s = ucp_ep_create(worker_.get(), &p, &ep_);
    if (s == UCS_OK) {
      if (watch->watching()) watch_ = std::move(watch);
      if (worker_.channel() == 0)
        STRATA_INFO(NET, "ucx cannot report the failure of %s over UCX_TLS's transports; %s", peerName().c_str(),
                    watch_ ? "watching its process instead"
                           : "a dead peer there shows as STRATA_ERR_TIMEOUT (or its abort notice)");
    }
  }
  if (s != UCS_OK) {
    ep_ = nullptr;
    return STRATA_ERROR(STRATA_ERR_SYSTEM,
                        "ucp_ep_create to %s failed: %s (do both ranks' UCX_TLS offer a transport that reaches the "
                        "other and handles peer failure?)",
                        peerName().c_str(), ucs_status_string(s));
  }
  ucp_request_param_t rp = hostParams(nullptr);
  noticeRecv_ = keep(ucp_tag_recv_nbx(worker_.get(), &noticeIn_, sizeof(noticeIn_),
                                      makeTag(Kind::Abort, peerRank_, 0), kFullMask, &rp),
                     &s);
  if (s != UCS_OK)
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "posting the receive for %s's abort notice failed: %s",
                        peerName().c_str(), ucs_status_string(s));
  if (!noticeRecv_ && fromPeer(noticeIn_, "an abort notice")) peerAborted();  // it was waiting already
  return Status::ok();
}

void UcxLink::sendNotice() {
  noticeSent_ = true;
  if (!canSend()) return;
  noticeOut_ = tokens_.send;
  ucp_request_param_t p = hostParams(nullptr);
  ucs_status_t s;
  noticeSend_ = keep(ucp_tag_send_nbx(ep_, &noticeOut_, sizeof(noticeOut_), makeTag(Kind::Abort, myRank_, 0), &p), &s);
  // A failed send changes nothing: the peer then sees the endpoint close.
}

void UcxLink::poll() {
  if (!noticeSent_ && abortRequested_.load(std::memory_order_acquire)) sendNotice();
  if (!noticeRecv_ || pending(noticeRecv_)) return;
  ucs_status_t s = ucp_request_check_status(noticeRecv_);
  ucp_request_free(noticeRecv_);
  noticeRecv_ = nullptr;
  if (s == UCS_OK && fromPeer(noticeIn_, "an abort notice")) peerAborted();
}

void UcxLink::peerAborted() {
  fail(makeErrorQuiet(STRATA_ERR_REMOTE, "%s aborted the connection (it failed or called strata_comm_abort)",
                      peerName().c_str()));
}

void* UcxLink::takeNotice() {
  if (!noticeSent_ && abortRequested_.load(std::memory_order_acquire)) sendNotice();
  void* r = noticeSend_;
  noticeSend_ = nullptr;
  return r;
}

void* UcxLink::cancelNoticeReceive() {
  void* r = noticeRecv_;
  noticeRecv_ = nullptr;
  if (r) ucp_request_cancel(worker_.get(), r);
  return r;
}

void* UcxLink::closeEndpoint() {
  if (!ep_) return nullptr;
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  // A healthy link flushes what is in flight; a failed one is not waited on.
  // FORCE only where both ends handle peer errors (UCP's rule).
  p.flags = ok() || !peerErrors_ ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_t s;
  void* r = keep(ucp_ep_close_nbx(ep_, &p), &s);
  ep_ = nullptr;
  return r;
}

SlotRing::SlotRing(Worker& worker, ucp_context_h context, size_t slotBytes, int nslots)
    : slotBytes_(slotBytes),
      nslots_(static_cast<uint64_t>(nslots)),
      region_(worker.allocate(context, bytesFor(slotBytes, nslots_))) {}

void releaseRequests(UcxLink& link, std::vector<void*>& requests, bool cancel) {
  if (cancel)
    for (void* r : requests)
      if (pending(r)) ucp_request_cancel(link.worker().get(), r);
  // Over a healthy link they finish at once; over a failed one they may
  // never, and the worker's teardown forces them.
  if (link.ok()) link.worker().waitAll(requests, kDrainSeconds);
  freeAll(requests);
}

UcxSendConnector::UcxSendConnector(std::shared_ptr<UcxLink> link, ucp_context_h context, size_t slotBytes,
                                   int nslots)
    : link_(std::move(link)),
      ring_(link_->worker(), context, slotBytes, nslots),
      requests_(static_cast<size_t>(nslots), nullptr),
      iovs_(2 * static_cast<size_t>(nslots)) {}

// Sends still in flight may read the caller's memory (publishFrom): let them
// finish, within a bound, before the caller can free it.
UcxSendConnector::~UcxSendConnector() { releaseRequests(*link_, requests_, false); }

bool UcxSendConnector::reap() {
  bool moved = false;
  while (reaped_ < published_) {
    void*& r = requests_[reaped_ % ring_.nslots()];
    if (r) {
      ucs_status_t s = ucp_request_check_status(r);
      if (s == UCS_INPROGRESS) break;
      ucp_request_free(r);
      r = nullptr;
      if (s != UCS_OK)
        link_->fail(makeErrorQuiet(STRATA_ERR_REMOTE, "sending to %s failed: %s", link_->peerName().c_str(),
                                   ucs_status_string(s)));
    }
    ++reaped_;
    moved = true;
  }
  return moved;
}

bool UcxSendConnector::slotFree() {
  // Over a failed link nothing is taken: the step then waits, and the
  // channel's health check of what it waits on reports the failure (a
  // message dropped here would let a send-only operation end as a success).
  if (!link_->ok()) return false;
  if (published_ - reaped_ < ring_.nslots()) return true;
  reap();
  return published_ - reaped_ < ring_.nslots();
}

bool UcxSendConnector::flushed() const {
  for (uint64_t m = reaped_; m < published_; ++m)
    if (pending(requests_[m % ring_.nslots()])) return false;
  return true;
}

void* UcxSendConnector::acquire(size_t) { return slotFree() ? ring_.payload(published_) : nullptr; }

void UcxSendConnector::start(uint64_t index, const void* buffer, size_t count, ucp_request_param_t& p) {
  // Over a failed link the message is dropped: the operation fails on the
  // link's health anyway.
  ucs_status_t s = UCS_OK;
  requests_[index % ring_.nslots()] =
      link_->ok() && link_->canSend()
          ? keep(ucp_tag_send_nbx(link_->ep(), buffer, count, makeTag(Kind::Data, link_->myRank(), index), &p), &s)
          : nullptr;
  if (s != UCS_OK)
    link_->fail(makeErrorQuiet(STRATA_ERR_REMOTE, "sending to %s failed: %s", link_->peerName().c_str(),
                               ucs_status_string(s)));
  ++published_;
}

void UcxSendConnector::publish(size_t bytes, const SlotTag& tag) {
  ring_.header(published_) = WireHeader{tag.seq, tag.desc, bytes, link_->sendToken()};
  ucp_request_param_t p = hostParams(ring_.memh());
  start(published_, ring_.message(published_), sizeof(WireHeader) + bytes, p);
}

bool UcxSendConnector::publishFrom(const void* data, size_t bytes, const SlotTag& tag) {
  if (!slotFree()) return false;
  ring_.header(published_) = WireHeader{tag.seq, tag.desc, bytes, link_->sendToken()};
  // Header from the slot, payload from the caller: one message of two
  // pieces, which the receiver gets as one contiguous slot. The pieces'
  // list must outlive the send, hence one per FIFO entry.
  ucp_dt_iov_t* iov = &iovs_[2 * (published_ % ring_.nslots())];
  iov[0] = {ring_.message(published_), sizeof(WireHeader)};
  iov[1] = {const_cast<void*>(data), bytes};
  ucp_request_param_t p = hostParams(nullptr);
  p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
  p.datatype = ucp_dt_make_iov();
  start(published_, iov, 2, p);
  return true;
}

bool UcxSendConnector::progress() {
  bool moved = link_->worker().drives(this) && link_->worker().progress();
  link_->poll();
  return reap() || moved;
}

UcxRecvConnector::UcxRecvConnector(std::shared_ptr<UcxLink> link, ucp_context_h context, size_t slotBytes,
                                   int nslots)
    : link_(std::move(link)),
      ring_(link_->worker(), context, slotBytes, nslots),
      requests_(static_cast<size_t>(nslots), nullptr),
      landed_(static_cast<size_t>(nslots), false),
      arrived_(static_cast<size_t>(nslots), false) {}

UcxRecvConnector::~UcxRecvConnector() { releaseRequests(*link_, requests_, true); }

Status UcxRecvConnector::start() {
  if (!ring_.ok())
    return STRATA_ERROR(STRATA_ERR_SYSTEM, "ucp_mem_map of %llu bytes of slots for %s failed",
                        (unsigned long long)(ring_.nslots() * (SlotRing::kHeaderArea + ring_.slotBytes())),
                        link_->peerName().c_str());
  for (uint64_t m = 0; m < ring_.nslots(); ++m)
    if (!post(m)) return link_->error();
  return Status::ok();
}

bool UcxRecvConnector::post(uint64_t index) {
  ucp_request_param_t p = hostParams(ring_.memh());
  ucs_status_t s;
  const size_t slot = index % ring_.nslots();
  requests_[slot] = keep(ucp_tag_recv_nbx(link_->worker().get(), ring_.message(index),
                                          sizeof(WireHeader) + ring_.slotBytes(),
                                          makeTag(Kind::Data, link_->peerRank(), index), kFullMask, &p),
                         &s);
  if (s != UCS_OK) {
    link_->fail(STRATA_ERROR(STRATA_ERR_SYSTEM, "posting a receive from %s failed: %s",
                             link_->peerName().c_str(), ucs_status_string(s)));
    return false;
  }
  // No request: the message was waiting and is in the slot already; it
  // still goes through complete()'s checks like any other.
  arrived_[slot] = requests_[slot] == nullptr;
  return true;
}

bool UcxRecvConnector::complete(uint64_t index) {
  const size_t slot = index % ring_.nslots();
  if (landed_[slot]) return true;
  void*& r = requests_[slot];
  if (arrived_[slot]) {
    arrived_[slot] = false;
    return checkLanded(index);
  }
  if (!r) return false;  // its receive could not be posted; the link failed
  ucs_status_t s = ucp_request_check_status(r);
  if (s == UCS_INPROGRESS) return false;
  ucp_request_free(r);
  r = nullptr;
  if (s != UCS_OK) {
    link_->fail(makeErrorQuiet(STRATA_ERR_REMOTE, "receiving from %s failed: %s%s", link_->peerName().c_str(),
                               ucs_status_string(s),
                               s == UCS_ERR_MESSAGE_TRUNCATED ? " (does every rank use the same STRATA_SLOT_BYTES?)"
                                                              : ""));
    return false;
  }
  return checkLanded(index);
}

bool UcxRecvConnector::checkLanded(uint64_t index) {
  const WireHeader& h = ring_.header(index);
  if (!link_->fromPeer(h.token, "a message")) return false;
  if (h.bytes > ring_.slotBytes()) {
    link_->fail(makeErrorQuiet(STRATA_ERR_INTERNAL, "%s sent a %llu-byte chunk for %zu-byte slots",
                               link_->peerName().c_str(), (unsigned long long)h.bytes, ring_.slotBytes()));
    return false;
  }
  landed_[index % ring_.nslots()] = true;
  return true;
}

const void* UcxRecvConnector::peek(size_t* bytes, SlotTag* tag) {
  if (!complete(released_)) return nullptr;
  const WireHeader& h = ring_.header(released_);
  *bytes = h.bytes;
  *tag = SlotTag{h.seq, h.desc};
  return ring_.payload(released_);
}

void UcxRecvConnector::release() {
  landed_[released_ % ring_.nslots()] = false;
  // The freed slot takes the message nslots further on.
  post(released_ + ring_.nslots());
  ++released_;
}

bool UcxRecvConnector::progress() {
  bool moved = link_->worker().drives(this) && link_->worker().progress();
  link_->poll();
  return moved;
}

}  // namespace strata::ucx
