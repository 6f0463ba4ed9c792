// One torch.distributed operation of the strata backend: strata's requests,
// the tensors torch reads back as the result, and what to do once the
// requests are done (copy a gathered buffer into the caller's tensors, for
// instance).
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <functional>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace strata::torch_backend {

class StrataWork : public c10d::Work {
 public:
  StrataWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs);
  ~StrataWork() override;

  std::vector<at::Tensor> result() override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  // The rank a receive from any source got its message from (torch asks
  // after the work is done); -1 before, and for every other operation.
  int sourceRank() const override { return source; }

  // Marks the work and its future done (error: the message of the failure).
  void complete(const std::string& error);

  std::vector<strata_request_t> requests;
  std::function<void()> afterDone;  // runs on success, before completion
  void runAfterDone();               // afterDone, if any, outside autograd
  std::vector<at::Tensor> keepAlive;  // buffers strata reads or writes until done
  int source = -1;

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace strata::torch_backend
