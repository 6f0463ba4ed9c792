#include "mailbox.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace strata::torch_backend {
namespace {

size_t bytesOf(const at::Tensor& t) { return t.numel() * t.element_size(); }

bool accepts(int peer, int source) { return peer == Mailbox::kAnySource || peer == source; }

}  // namespace

Mailbox::Mailbox(strata_comm_t comm, int rank, int size, std::chrono::milliseconds timeout)
    : comm_(comm), rank_(rank), timeout_(timeout), inbound_(size) {
  thread_ = std::thread([this] { loop(); });
}

Mailbox::~Mailbox() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Mailbox::send(c10::intrusive_ptr<StrataWork> work, const at::Tensor& tensor, int dst, int tag) {
  Op op{true, std::move(work), tensor, dst, tag, Clock::now() + timeout_};
  op.header.tag = tag;
  op.header.bytes = bytesOf(tensor);
  if (op.header.bytes <= kInlineBytes) std::memcpy(op.header.data, tensor.data_ptr(), op.header.bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming_.push_back(std::move(op));
  }
  cv_.notify_one();
}

void Mailbox::recv(c10::intrusive_ptr<StrataWork> work, const at::Tensor& tensor, int src, int tag) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    incoming_.push_back(Op{false, std::move(work), tensor, src, tag, Clock::now() + timeout_});
  }
  cv_.notify_one();
}

std::string Mailbox::requestError(strata_result_t rc) const {
  const char* message = strata_comm_last_error(comm_);
  if (!*message) message = strata_last_error();
  return std::string(strata_result_string(rc)) + ": " + message;
}

void Mailbox::loop() {
  // While something is in flight: poll, yielding the core, a while (a
  // message's header and payload come microseconds apart), then sleep
  // longer and longer, as the completion thread does: every wake-up is taken
  // from the cores that compute.
  constexpr int kYieldingPolls = 200;
  constexpr std::chrono::microseconds kMinSleep{20}, kMaxSleep{500};
  std::chrono::microseconds idleSleep = kMinSleep;
  int fruitless = 0;
  const auto wanted = [this] { return stopping_ || !incoming_.empty(); };
  while (true) {
    std::deque<Op> fresh;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      // Header receives left posted for a satisfied receive from any source
      // are not polled: nothing waits on them until a receive comes.
      const bool inFlight = !sends_.empty() || !recvs_.empty() ||
                            std::any_of(inbound_.begin(), inbound_.end(),
                                        [](const Inbound& in) { return in.payloadRequest != nullptr; });
      if (!inFlight) cv_.wait(lock, wanted);
      if (stopping_) break;
      fresh.swap(incoming_);
    }
    bool moved = false;
    for (Op& op : fresh) moved |= start(std::move(op));
    postHeaders();
    moved |= pollSends();
    for (int peer = 0; peer < static_cast<int>(inbound_.size()); ++peer) moved |= pollInbound(peer);
    moved |= expire();
    if (moved) {
      fruitless = 0;
      idleSleep = kMinSleep;
    } else if (++fruitless <= kYieldingPolls) {
      std::this_thread::yield();
    } else {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait_for(lock, idleSleep, wanted);
      idleSleep = std::min(idleSleep * 2, kMaxSleep);
    }
  }
  std::deque<Op> neverStarted;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    neverStarted.swap(incoming_);
  }
  // Outside the lock: completing runs the futures' callbacks.
  for (Op& op : neverStarted) op.work->complete("the process group was destroyed before this operation ran");
  breakWith("the process group was destroyed while this operation was pending");
  // Outstanding requests fail with the communicator; waiting frees them.
  strata_comm_destroy(comm_);
  for (strata_request_t r : orphans_.requests) strata_wait(r);
  for (Op& op : orphans_.sends)
    for (strata_request_t r : op.sent) strata_wait(r);
}

bool Mailbox::start(Op op) {
  if (!broken_.empty()) {
    op.work->complete(broken_);
    return true;
  }
  if (op.send) {
    // In its place first: strata reads the header from there until the send completes.
    Op& sent = sends_.emplace_back(std::move(op));
    strata_result_t rc = strata_isend(&sent.header, sizeof(Header), STRATA_UINT8, sent.peer, comm_, &sent.sent[0]);
    if (rc == STRATA_SUCCESS && sent.header.bytes > kInlineBytes)
      rc = strata_isend(sent.tensor.data_ptr(), sent.header.bytes, STRATA_UINT8, sent.peer, comm_, &sent.sent[1]);
    if (rc != STRATA_SUCCESS) {
      // A header without its payload would desynchronise the peer's stream.
      breakWith("send: " + requestError(rc));
      return true;
    }
    return false;
  }
  if (fromArrived(op)) return true;
  recvs_.push_back(std::move(op));
  return false;
}

// A receive takes the oldest message already here from its source with its tag.
bool Mailbox::fromArrived(Op& op) {
  for (auto it = arrived_.begin(); it != arrived_.end(); ++it) {
    if (!accepts(op.peer, it->source) || it->tag != op.tag) continue;
    if (it->bytes.size() != bytesOf(op.tensor)) {
      op.work->complete("recv: rank " + std::to_string(it->source) + " sent " + std::to_string(it->bytes.size()) +
                        " bytes with tag " + std::to_string(it->tag) + ", the tensor holds " +
                        std::to_string(bytesOf(op.tensor)));
    } else {
      std::memcpy(op.tensor.data_ptr(), it->bytes.data(), it->bytes.size());
      op.work->source = it->source;
      op.work->complete("");
    }
    arrived_.erase(it);
    return true;
  }
  return false;
}

// Every peer some waiting receive may hear from gets a header receive, one at
// a time per peer (the peer's messages arrive in order).
void Mailbox::postHeaders() {
  if (!broken_.empty()) return;
  for (int peer = 0; peer < static_cast<int>(inbound_.size()); ++peer) {
    Inbound& in = inbound_[peer];
    if (peer == rank_ || in.headerRequest || in.payloadRequest) continue;
    const bool wanted = std::any_of(recvs_.begin(), recvs_.end(), [&](const Op& op) { return accepts(op.peer, peer); });
    if (!wanted) continue;
    const strata_result_t rc = strata_irecv(&in.header, sizeof(Header), STRATA_UINT8, peer, comm_, &in.headerRequest);
    if (rc != STRATA_SUCCESS) {
      breakWith("recv: " + requestError(rc));
      return;
    }
  }
}

bool Mailbox::pollSends() {
  bool moved = false;
  for (auto it = sends_.begin(); it != sends_.end();) {
    std::string error;
    for (strata_request_t& r : it->sent) {
      if (!r) continue;
      int isDone = 0;
      const strata_result_t rc = strata_test(r, &isDone);
      if (isDone) r = nullptr;
      if (rc != STRATA_SUCCESS && error.empty()) error = "send: " + requestError(rc);
    }
    if (!error.empty()) {
      // The other half of the message may still be in flight: breakWith keeps it.
      breakWith(error);
      return true;
    }
    if (!it->sent[0] && !it->sent[1]) {
      it->work->complete("");
      it = sends_.erase(it);
      moved = true;
    } else {
      ++it;
    }
  }
  return moved;
}

bool Mailbox::received(strata_request_t* request, int peer, bool* broke) {
  int done = 0;
  const strata_result_t rc = strata_test(*request, &done);
  if (rc != STRATA_SUCCESS) {
    *request = nullptr;
    breakWith("recv from rank " + std::to_string(peer) + ": " + requestError(rc));
    *broke = true;
    return false;
  }
  if (done) *request = nullptr;
  return done != 0;
}

bool Mailbox::pollInbound(int peer) {
  Inbound& in = inbound_[peer];
  bool isDone = false, broke = false;
  if (in.headerRequest) {
    isDone = received(&in.headerRequest, peer, &broke);
    if (broke) return true;
    if (!isDone) return false;
    // The oldest waiting receive this message fits takes it.
    in.matched = false;
    in.refused.clear();
    for (auto it = recvs_.begin(); it != recvs_.end(); ++it) {
      if (!accepts(it->peer, peer) || it->tag != in.header.tag || landing(it)) continue;
      in.matched = true;
      in.into = it;
      if (in.header.bytes != bytesOf(it->tensor))
        in.refused = "recv: rank " + std::to_string(peer) + " sent " + std::to_string(in.header.bytes) +
                     " bytes with tag " + std::to_string(in.header.tag) + ", the tensor holds " +
                     std::to_string(bytesOf(it->tensor));
      break;
    }
    const bool intoTensor = in.matched && in.refused.empty();
    if (in.header.bytes <= kInlineBytes) {
      const uint8_t* data = in.header.data;
      if (intoTensor) std::memcpy(in.into->tensor.data_ptr(), data, in.header.bytes);
      else in.spill.assign(data, data + in.header.bytes);
    } else {
      if (!intoTensor) in.spill.resize(in.header.bytes);
      void* into = intoTensor ? in.into->tensor.data_ptr() : in.spill.data();
      const strata_result_t posted =
          strata_irecv(into, in.header.bytes, STRATA_UINT8, peer, comm_, &in.payloadRequest);
      if (posted != STRATA_SUCCESS) {
        breakWith("recv from rank " + std::to_string(peer) + ": " + requestError(posted));
        return true;
      }
      isDone = false;
    }
  }
  if (in.payloadRequest) {
    isDone = received(&in.payloadRequest, peer, &broke);
    if (broke) return true;
    if (!isDone) return false;
  }
  if (!isDone) return false;
  if (in.matched) {
    Op& op = *in.into;
    op.work->source = peer;
    op.work->complete(in.refused);
    recvs_.erase(in.into);
  } else {
    arrived_.push_back(Arrived{peer, in.header.tag, std::move(in.spill)});
    // A receive posted while this message was arriving did not see it.
    for (auto it = recvs_.begin(); it != recvs_.end(); ++it)
      if (!landing(it) && fromArrived(*it)) {
        recvs_.erase(it);
        break;
      }
  }
  in.spill = {};
  in.matched = false;
  return true;
}

bool Mailbox::landing(std::list<Op>::iterator recv) const {
  return std::any_of(inbound_.begin(), inbound_.end(),
                     [&](const Inbound& in) { return in.matched && in.into == recv; });
}

bool Mailbox::expire() {
  const auto now = Clock::now();
  const auto late = [&](const Op& op) { return op.deadline <= now; };
  bool moved = false;
  // A receive whose payload is arriving is not late; one still waiting for
  // its message leaves nothing behind and fails alone.
  for (auto it = recvs_.begin(); it != recvs_.end();) {
    if (!landing(it) && late(*it)) {
      it->work->complete("recv timeout: no message within the process group's timeout (" +
                         std::to_string(timeout_.count()) + " ms)");
      it = recvs_.erase(it);
      moved = true;
    } else {
      ++it;
    }
  }
  if (std::any_of(sends_.begin(), sends_.end(), late)) {
    breakWith("send timeout: the receiver took no message within the process group's timeout (" +
              std::to_string(timeout_.count()) + " ms)");
    moved = true;
  }
  return moved;
}

void Mailbox::breakWith(const std::string& why) {
  if (broken_.empty()) broken_ = why;
  // Requests still in flight stay with the communicator until it is
  // destroyed, and so must the memory they read or write.
  // A send's Op holds its header and tensor: it is kept whole.
  for (Op& op : sends_) op.work->complete(broken_);
  orphans_.sends.splice(orphans_.sends.end(), sends_);
  for (Inbound& in : inbound_) {
    for (strata_request_t r : {in.headerRequest, in.payloadRequest})
      if (r) orphans_.requests.push_back(r);
    if (in.payloadRequest && in.matched) orphans_.tensors.push_back(in.into->tensor);
    if (in.payloadRequest) orphans_.buffers.push_back(std::move(in.spill));
    in = Inbound{};
  }
  for (Op& op : recvs_) op.work->complete(broken_);
  recvs_.clear();
}

}  // namespace strata::torch_backend
