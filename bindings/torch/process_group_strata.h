// torch.distributed's "strata" backend over strata's C API, for CPU tensors:
// a c10d::Backend under torch 2 (whose ProcessGroup holds one backend per
// device type), a c10d::ProcessGroup under torch 1.13 (where the group is
// the backend). The operations are the same virtual functions in both.
//
// Collectives are issued non-blocking (strata_i*) from the caller's thread and
// handed to the group's completion thread, which finishes each Work and its
// future when strata's request completes; so DDP's bucket allreduces overlap
// the rest of the backward pass, and get_future() completes without anyone
// calling wait(). Operations strata runs only as a blocking group (several
// tensors at once, list forms of alltoall, gather, scatter) and the bitwise
// reductions (an allgather folded locally) complete before the call returns.
// Sends and receives go through the group's Mailbox (mailbox.h), which
// matches them by source and tag as torch expects.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "mailbox.h"
#include "strata/strata.h"
#include "strata_work.h"

namespace strata::torch_backend {

#if TORCH_VERSION_MAJOR >= 2
using BackendBase = c10d::Backend;
#else
using BackendBase = c10d::ProcessGroup;
#endif

class ProcessGroupStrata : public BackendBase {
 public:
  // Collective over the group: rank 0 makes a unique id and passes it through
  // the store torch gives every backend. `timeout` (the group's, as given to
  // init_process_group or new_group) bounds the wait for the id and is the
  // communicator's timeout: an operation that makes no progress for that long
  // fails with torch's error on every rank, instead of hanging.
  ProcessGroupStrata(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                     std::chrono::milliseconds timeout);
  ~ProcessGroupStrata() override;

  // torch.distributed's creator function for Backend.register_backend.
  static c10::intrusive_ptr<BackendBase> create(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                                const std::chrono::duration<float>& timeout);

  const std::string getBackendName() const override { return "strata"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputLists,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  // A receive takes the first message from its source with its tag
  // (mailbox.h), whatever order the messages were sent in.
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

 private:
  // Hands a work whose requests are in flight to the completion thread.
  c10::intrusive_ptr<c10d::Work> track(c10::intrusive_ptr<StrataWork> work);
  // A work already done (blocking forms); runs its afterDone.
  c10::intrusive_ptr<c10d::Work> done(c10::intrusive_ptr<StrataWork> work);
  void completionLoop();
  strata_unique_id_t sharedId(const c10::intrusive_ptr<c10d::Store>& store, const std::string& key,
                              std::chrono::milliseconds timeout) const;
  // Throws torch's error unless `peer` is another rank of the group.
  void checkPeer(int peer, const char* arg) const;
  // Issues blocking calls as one strata group; the group is closed even when
  // `issue` throws.
  void inGroup(const char* what, const std::function<strata_result_t()>& issue);
  // Throws torch's error with strata's message when rc is a failure.
  void check(strata_result_t rc, const char* what) const;
  // A sparse COO tensor's SUM: every rank's entries gathered and added here.
  c10::intrusive_ptr<c10d::Work> sparseAllreduce(at::Tensor& tensor, const c10d::ReduceOp& op);
  // A fold of every rank's tensor by a bitwise op, which strata lacks.
  c10::intrusive_ptr<c10d::Work> bitwiseAllreduce(at::Tensor& tensor, c10d::ReduceOp::RedOpType op);

  strata_comm_t comm_ = nullptr;
  std::unique_ptr<Mailbox> mailbox_;  // send and recv
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<StrataWork>> pending_;
  bool stopping_ = false;
  std::thread completer_;
};

}  // namespace strata::torch_backend
