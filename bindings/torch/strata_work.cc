#include "strata_work.h"

#include <ATen/core/ivalue.h>
#include <c10/core/InferenceMode.h>

#include <exception>
#include <stdexcept>
#include <utility>

namespace strata::torch_backend {

StrataWork::StrataWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

StrataWork::~StrataWork() = default;

std::vector<at::Tensor> StrataWork::result() { return outputs_; }

c10::intrusive_ptr<c10::ivalue::Future> StrataWork::getFuture() { return future_; }

void StrataWork::runAfterDone() {
  if (!afterDone) return;
  // Writes into the caller's tensors, as gloo's and NCCL's raw copies do:
  // outside autograd (a parameter as the output) and valid for inference
  // tensors, whatever mode the calling thread was in.
  c10::InferenceMode raw;
  afterDone();
}

void StrataWork::complete(const std::string& error) {
  keepAlive.clear();
  if (error.empty()) {
    future_->markCompleted(c10::IValue(outputs_));
    finish();
  } else {
    auto eptr = std::make_exception_ptr(std::runtime_error("strata backend: " + error));
    future_->setError(eptr);
    finish(eptr);
  }
}

}  // namespace strata::torch_backend
