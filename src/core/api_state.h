// Glue between the C API's opaque handles and the C++ core, and the
// bookkeeping every entry point shares: last-error messages and the count of
// calls in flight on a communicator.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <string>

#include "comm.h"
#include "request.h"
#include "strata/strata.h"

struct strata_comm {
  std::unique_ptr<strata::Comm> impl;
  // Its CUDA device, known at creation: asked for (ncclCommCuDevice) without
  // waiting for a non-blocking init.
  int device = -1;
  // A non-blocking init builds impl on initThread and sets initStatus, then
  // initDone; impl stays null if it failed. api::ready() waits for it, and
  // once a thread has joined it (initJoined) every call skips the lock.
  std::thread initThread;
  std::mutex initMutex;
  std::atomic<bool> initDone{true};
  std::atomic<bool> initJoined{true};
  strata::Status initStatus;
  // Requests handed out and not yet completed through strata_test/wait. A
  // communicator destroyed or aborted while some are outstanding fails them
  // and lives on until the last one is freed (see api::releaseComm).
  std::atomic<int> liveRequests{0};
  std::atomic<bool> released{false};
  std::atomic<bool> freed{false};
};

// Closes an entry point defined with a function-try-block
// (`strata_result_t strata_x(...) try { ... } STRATA_CATCH_ESCAPES`).
#define STRATA_CATCH_ESCAPES \
  catch (...) {              \
    return strata::api::escaped(); \
  }

struct strata_request {
  explicit strata_request(strata_comm* c) : comm(c) { comm->liveRequests.fetch_add(1); }
  strata::Request request;
  strata_comm* comm;
};

namespace strata::api {

// Records a failed call's message (thread's and communicator's) and returns
// its code; success passes through untouched.
strata_result_t finish(const Status& status, strata_comm* comm = nullptr);

// What an entry point returns when a C++ exception reached it (out of memory,
// a thread that could not start): an error code and message, since no
// exception may unwind into a C caller. Call only from a catch block.
strata_result_t escaped();

// A fresh unique id whose listening socket this process keeps for its rank
// 0; with `secret`, carrying that secret (a communicator made from another
// one, whose ranks derive it) instead of a random one.
Status newUniqueId(strata_unique_id_t* id, const security::Secret* secret = nullptr);

// A report for the caller: copied NUL-terminated into out (len bytes, cut
// short if need be), or, with out NULL, logged with `what` as its title.
void deliverReport(const std::string& text, const char* what, char* out, size_t len);

// strata_comm_check's work (api_check.cc), which STRATA_CHECK=1 runs at
// init: the report every rank gets, and how many findings it holds.
Status runCheck(strata_comm* comm, std::string* report, int* findings);

// The settings a communicator made from `parent` (split, shrink, grow)
// inherits: those its own init was given. Valid while parent lives.
strata_config_t inheritedConfig(const Comm& parent);

// Re-reads configuration and logging settings: every init entry point calls it.
void reloadSettings();

// Waits for a non-blocking init to end (at once otherwise) and returns its
// outcome: every entry point but strata_comm_get_async_error goes through it
// before touching impl.
Status ready(strata_comm* comm);

// Frees a request, and its communicator too when that was released and this
// was its last request.
void freeRequest(strata_request* request);
// Frees the communicator now, or once its last outstanding request is freed.
void releaseComm(strata_comm* comm);

// Groups (api_group.cc): whether the calling thread is inside
// strata_group_start/end, and the calls it queues there for strata_group_end.
// Counts arrays of v-variants are copied.
bool groupActive();

// What a stream-ordered call (strata_*_ex with a stream) adds to a
// collective or a send/receive: its stream, its buffers as given with which
// of them are staged (their memory found once per call), a pre-multiplier.
struct StreamCall {
  void* stream = nullptr;
  streams::PartSpec part;
  streams::PreMul premul;
};
// Queues the call, or (stream != null) the stream-ordered call, in the
// thread's group; `scratch` (memory the call reads, such as a pre-multiplied
// copy of its input) is kept until the group's calls are done.
void deferCollective(strata_comm* comm, const CollCall& call, const StreamCall* stream = nullptr,
                     std::vector<char> scratch = {});
void deferP2p(strata_comm* comm, const P2pOp& op, const StreamCall* stream = nullptr);

// Enqueues a stream-ordered collective, or a group of stream-ordered sends
// and receives that all name `stream`, on the communicator (api_streams.cc).
Status submitOnStream(Comm& comm, const CollCall& call, const StreamCall& sc);
Status submitGroupOnStream(Comm& comm, void* stream, const std::vector<P2pOp>& ops,
                           const std::vector<streams::PartSpec>& parts);

// Marks an API call in flight on a communicator for its lifetime.
class CallGuard {
 public:
  explicit CallGuard(strata_comm* comm) : comm_(comm) { comm_->impl->activeCalls.fetch_add(1); }
  ~CallGuard() { comm_->impl->activeCalls.fetch_sub(1); }
  CallGuard(const CallGuard&) = delete;
  CallGuard& operator=(const CallGuard&) = delete;

 private:
  strata_comm* comm_;
};

}  // namespace strata::api
