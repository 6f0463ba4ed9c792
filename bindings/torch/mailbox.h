// torch.distributed's point-to-point messages, with their semantics: a
// receive takes the first message from its source (or from any rank) whose
// tag is its own, whatever order the messages were sent in, as gloo and MPI
// match. strata's own sends and receives match in posting order only, so
// each message here is a header (tag, bytes, and the payload itself when it
// is small) and then, unless it was small, its payload; a
// message that arrives before a receive wants it waits in this rank's
// memory until one does.
//
// The messages travel on a communicator of their own, driven by one thread
// (the only caller of strata on it): receives from any source keep a header
// receive posted at every peer, and there they must not stand in the way of
// the group's collectives. Its operations never time out inside strata; each
// torch operation gets the group's timeout here instead, so that a header
// receive left posted after its receive was satisfied elsewhere stays
// harmless, though over shared memory (which announces nothing) it keeps a
// progress thread of that communicator polling until the peer's next
// message comes. A dead peer still fails every operation that involves it.
#pragma once

#include <ATen/ATen.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "strata/strata.h"
#include "strata_work.h"

namespace strata::torch_backend {

class Mailbox {
 public:
  static constexpr int kAnySource = -1;

  // Takes `comm` (this rank's `rank` of `size`), which must be used for nothing else.
  Mailbox(strata_comm_t comm, int rank, int size, std::chrono::milliseconds timeout);
  // Fails what is still pending, then destroys the communicator.
  ~Mailbox();

  // Both return at once; the work completes (or fails with torch's error)
  // on the mailbox's thread. `tensor` is contiguous CPU memory.
  void send(c10::intrusive_ptr<StrataWork> work, const at::Tensor& tensor, int dst, int tag);
  void recv(c10::intrusive_ptr<StrataWork> work, const at::Tensor& tensor, int src, int tag);

 private:
  // A small message travels inside its header: one message, not two.
  static constexpr size_t kInlineBytes = 48;
  struct Header {
    int64_t tag;
    uint64_t bytes;
    uint8_t data[kInlineBytes];  // the payload, when it fits
  };
  using Clock = std::chrono::steady_clock;
  struct Op {  // a torch send or receive
    bool send;
    c10::intrusive_ptr<StrataWork> work;
    at::Tensor tensor;
    int peer;  // kAnySource for a receive from any rank
    int64_t tag;
    Clock::time_point deadline;
    Header header{};                    // a send's
    strata_request_t sent[2] = {};      // a send's header and payload
  };
  struct Arrived {  // a message no receive wanted yet
    int source;
    int64_t tag;
    std::vector<uint8_t> bytes;
  };
  struct Inbound {  // what this rank is reading from one peer
    Header header{};
    strata_request_t headerRequest = nullptr;
    strata_request_t payloadRequest = nullptr;
    std::list<Op>::iterator into;  // the receive the payload lands in, if `matched`
    bool matched = false;
    std::string refused;          // why the matched receive fails once the payload is drained
    std::vector<uint8_t> spill;   // the payload of an unmatched (or refused) message
  };

  void loop();
  // Each returns whether something completed or moved on.
  bool start(Op op);
  bool pollSends();
  bool pollInbound(int peer);
  // Tests one of a peer's receives: true once it is done (and freed); a
  // failure breaks the mailbox and sets *broke.
  bool received(strata_request_t* request, int peer, bool* broke);
  bool expire();
  void postHeaders();
  bool fromArrived(Op& op);
  // Whether a peer's payload is landing in this waiting receive.
  bool landing(std::list<Op>::iterator recv) const;
  // Fails `op`'s work and every later one: a timed-out operation leaves the
  // stream of messages to its peer in an unknown state.
  void breakWith(const std::string& why);
  std::string requestError(strata_result_t rc) const;

  strata_comm_t comm_;
  const int rank_;
  const std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Op> incoming_;  // posted by torch's threads, taken by the loop
  bool stopping_ = false;

  // The loop's own state.
  std::list<Op> sends_, recvs_;  // in flight, in posting order
  std::vector<Inbound> inbound_;  // per peer
  std::deque<Arrived> arrived_;   // in arrival order
  std::string broken_;
  struct {  // what requests abandoned by breakWith use until destroy
    std::list<Op> sends;  // each with its header, tensor and requests
    std::vector<strata_request_t> requests;
    std::vector<at::Tensor> tensors;
    std::vector<std::vector<uint8_t>> buffers;
  } orphans_;
  std::thread thread_;
};

}  // namespace strata::torch_backend
