#include "process_group_strata.h"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>

namespace strata::torch_backend {
namespace {

const char* kIdKey = "strata_unique_id";
const char* kMailboxIdKey = "strata_mailbox_id";

void checkTensor(const at::Tensor& t, const char* arg) {
  TORCH_CHECK(t.device().is_cpu(), "strata backend: ", arg, " is on ", t.device(),
              "; only CPU tensors are supported");
  TORCH_CHECK(t.is_contiguous(), "strata backend: ", arg, " must be contiguous");
  TORCH_CHECK(!t.is_sparse(), "strata backend: ", arg, " is sparse; only dense tensors are supported");
}

// The one tensor of a single-tensor call (torch passes a list for the
// multi-device case, which CPU ranks never have).
at::Tensor& single(std::vector<at::Tensor>& tensors, const char* arg) {
  TORCH_CHECK(tensors.size() == 1, "strata backend: ", arg, " holds ", tensors.size(),
              " tensors; exactly one per rank is supported");
  checkTensor(tensors[0], arg);
  return tensors[0];
}

strata_datatype_t reduceType(at::ScalarType type, const char* arg) {
  switch (type) {
    case at::kFloat: return STRATA_FLOAT32;
    case at::kDouble: return STRATA_FLOAT64;
    case at::kHalf: return STRATA_FLOAT16;
    case at::kBFloat16: return STRATA_BFLOAT16;
    case at::kChar: return STRATA_INT8;
    case at::kByte: return STRATA_UINT8;
    case at::kBool: return STRATA_UINT8;
    case at::kInt: return STRATA_INT32;
    case at::kLong: return STRATA_INT64;
    default:
      TORCH_CHECK(false, "strata backend: ", arg, " has dtype ", type, ", which strata cannot reduce");
  }
}

bool isBitwise(c10d::ReduceOp::RedOpType op) {
  return op == c10d::ReduceOp::BAND || op == c10d::ReduceOp::BOR || op == c10d::ReduceOp::BXOR;
}

// Bitwise ops strata has no kernel for: all but and/or on booleans (min/max).
bool needsFold(c10d::ReduceOp::RedOpType op, const at::Tensor& t) {
  return isBitwise(op) && (t.scalar_type() != at::kBool || op == c10d::ReduceOp::BXOR);
}

const char* opName(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::SUM: return "SUM";
    case c10d::ReduceOp::AVG: return "AVG";
    case c10d::ReduceOp::PRODUCT: return "PRODUCT";
    case c10d::ReduceOp::MIN: return "MIN";
    case c10d::ReduceOp::MAX: return "MAX";
    case c10d::ReduceOp::BAND: return "BAND";
    case c10d::ReduceOp::BOR: return "BOR";
    case c10d::ReduceOp::BXOR: return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM: return "PREMUL_SUM";
    default: return "UNUSED";
  }
}

// Booleans reduce as bytes holding 0 or 1: sum and bitwise or are max,
// product and bitwise and are min (as NCCL's backend does).
strata_op_t reduceOp(c10d::ReduceOp::RedOpType op, at::ScalarType type) {
  const bool boolean = type == at::kBool;
  switch (op) {
    case c10d::ReduceOp::SUM: return boolean ? STRATA_MAX : STRATA_SUM;
    case c10d::ReduceOp::PRODUCT: return boolean ? STRATA_MIN : STRATA_PROD;
    case c10d::ReduceOp::MIN: return STRATA_MIN;
    case c10d::ReduceOp::MAX: return STRATA_MAX;
    case c10d::ReduceOp::BOR: return STRATA_MAX;
    case c10d::ReduceOp::BAND: return STRATA_MIN;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(!boolean, "strata backend: ReduceOp.AVG is not defined for bool tensors");
      return STRATA_AVG;
    default:
      TORCH_CHECK(false, "strata backend: ReduceOp ", opName(op), " is not supported");
  }
}

// PREMUL_SUM's factor (torch._C._distributed_c10d._make_nccl_premul_sum):
// a number, or a one-element tensor.
double premulFactor(const c10d::ReduceOp& op) {
  auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  TORCH_CHECK(supplement, "strata backend: ReduceOp.PREMUL_SUM carries no factor");
#if TORCH_VERSION_MAJOR >= 2
  if (!supplement->tensor_factor.defined()) return supplement->double_factor;
  const at::Tensor& f = supplement->tensor_factor;
#else
  if (supplement->tensor_factors.empty()) return supplement->double_factor;
  const at::Tensor& f = supplement->tensor_factors[0];
#endif
  TORCH_CHECK(f.numel() == 1, "strata backend: PREMUL_SUM's factor must hold one element, not ", f.numel());
  return f.item<double>();
}

// How strata reduces `input` into `output` (the same tensor for in-place
// calls) with torch's `op`: the buffers it reads and writes, seen as
// elements of `type`. Complex tensors reduce as their real pairs (sum and
// average only, as torch allows); int16, which strata lacks, as int32;
// PREMUL_SUM as the sum of input * factor.
struct Reduction {
  static Reduction of(const at::Tensor& input, const at::Tensor& output, const c10d::ReduceOp& op, const char* arg);
  // Elements strata writes: out's (per rank for reduce_scatter).
  size_t count() const { return static_cast<size_t>(out.numel()); }
  // After strata is done: the result into the caller's tensor, when `out` is a copy.
  void finish() const;

  at::Tensor in, out, target;
  strata_datatype_t type = STRATA_UINT8;
  strata_op_t op = STRATA_SUM;
  bool copyBack = false;
};

Reduction Reduction::of(const at::Tensor& input, const at::Tensor& output, const c10d::ReduceOp& op,
                        const char* arg) {
  Reduction r;
  r.target = output;
  r.in = input;
  r.out = output;
  c10d::ReduceOp::RedOpType kind = op.op_;
  if (kind == c10d::ReduceOp::PREMUL_SUM) {
    TORCH_CHECK(at::isFloatingType(input.scalar_type()) || at::isComplexType(input.scalar_type()),
                "strata backend: ReduceOp.PREMUL_SUM needs a floating-point tensor, not ", input.scalar_type());
    r.in = input.mul(premulFactor(op));  // a copy: the caller's input is left as it was
    kind = c10d::ReduceOp::SUM;
  }
  if (at::isComplexType(input.scalar_type())) {
    TORCH_CHECK(kind == c10d::ReduceOp::SUM || kind == c10d::ReduceOp::AVG, "strata backend: ReduceOp.",
                opName(op.op_), " is not defined for complex tensors (", arg, " is ", input.scalar_type(), ")");
    r.in = at::view_as_real(r.in);
    r.out = at::view_as_real(r.out);
  } else if (input.scalar_type() == at::kShort) {
    // int16, which strata lacks, as int32: sums and products agree modulo
    // 2^16, which the copy back keeps; the average is exact (no wrap).
    const bool inPlace = r.in.is_same(r.out);
    r.in = r.in.to(at::kInt);
    r.out = inPlace ? r.in : at::empty(r.out.sizes(), r.out.options().dtype(at::kInt));
    r.copyBack = true;
  }
  r.type = reduceType(r.in.scalar_type(), arg);
  r.op = reduceOp(kind, input.scalar_type());
  return r;
}

void Reduction::finish() const {
  if (copyBack) target.copy_(out);
}

size_t bytesOf(const at::Tensor& t) { return t.numel() * t.element_size(); }

// A tensor's raw bytes: what data-movement collectives carry, whatever the dtype.
void* bytes(const at::Tensor& t) { return t.data_ptr(); }

// A list form's one list of `n` tensors, each checked to match `like` in
// size and dtype (one block of the flat buffer strata moves).
const std::vector<at::Tensor>& listOf(const std::vector<std::vector<at::Tensor>>& lists, int n,
                                      const at::Tensor& like, const char* arg, const char* likeArg) {
  TORCH_CHECK(lists.size() == 1 && lists[0].size() == static_cast<size_t>(n), "strata backend: ", arg,
              " must hold world_size (", n, ") tensors");
  for (const at::Tensor& t : lists[0]) {
    checkTensor(t, arg);
    TORCH_CHECK(t.numel() == like.numel() && t.scalar_type() == like.scalar_type(), "strata backend: every tensor of ",
                arg, " must match ", likeArg, "'s size and dtype");
  }
  return lists[0];
}

c10::intrusive_ptr<StrataWork> newWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs) {
  return c10::make_intrusive<StrataWork>(rank, type, std::move(outputs));
}

}  // namespace


// Rank 0 makes the id of a new communicator and passes it through torch's store.
strata_unique_id_t ProcessGroupStrata::sharedId(const c10::intrusive_ptr<c10d::Store>& store, const std::string& key,
                                                std::chrono::milliseconds timeout) const {
  strata_unique_id_t id;
  if (rank_ == 0) {
    check(strata_get_unique_id(&id), "strata_get_unique_id");
    store->set(key, std::vector<uint8_t>(id.internal, id.internal + sizeof(id.internal)));
  } else {
    store->wait({key}, timeout);
    std::vector<uint8_t> got = store->get(key);
    TORCH_CHECK(got.size() == sizeof(id.internal), "strata backend: the store holds a ", got.size(), "-byte id under ",
                key, ", expected ", sizeof(id.internal));
    std::memcpy(id.internal, got.data(), got.size());
  }
  return id;
}

ProcessGroupStrata::ProcessGroupStrata(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                       std::chrono::milliseconds timeout)
    : BackendBase(rank, size) {
  strata_config_t config = STRATA_CONFIG_INITIALIZER;
  // torch users say "never" with a timedelta of years; strata takes up to 1e9 s.
  config.timeout_seconds = std::min(std::chrono::duration<double>(timeout).count(), 1e9);
  check(strata_comm_init_rank_config(&comm_, size, sharedId(store, kIdKey, timeout), rank, &config),
        "strata_comm_init_rank_config");
  // The mailbox keeps time itself (mailbox.h says why).
  strata_comm_t messages = nullptr;
  config.timeout_seconds = 1e9;
  check(strata_comm_init_rank_config(&messages, size, sharedId(store, kMailboxIdKey, timeout), rank, &config),
        "strata_comm_init_rank_config (send/recv)");
  mailbox_ = std::make_unique<Mailbox>(messages, rank, size, timeout);
  completer_ = std::thread([this] { completionLoop(); });
}

ProcessGroupStrata::~ProcessGroupStrata() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  // The completion and mailbox threads may need the GIL (to run a future's
  // Python callbacks, or to drop the last reference to one), and whoever
  // drops the last reference to this group (a DDP reducer, torch's group
  // map) may hold it.
  const auto stop = [this] {
    completer_.join();
    mailbox_.reset();
  };
  if (Py_IsInitialized() && PyGILState_Check()) {
    pybind11::gil_scoped_release release;
    stop();
  } else {
    stop();
  }
  strata_comm_destroy(comm_);
}

c10::intrusive_ptr<BackendBase> ProcessGroupStrata::create(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                                           int size, const std::chrono::duration<float>& timeout) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
  return c10::make_intrusive<ProcessGroupStrata>(store, rank, size, ms);
}

void ProcessGroupStrata::check(strata_result_t rc, const char* what) const {
  if (rc == STRATA_SUCCESS) return;
  const char* message = comm_ ? strata_comm_last_error(comm_) : "";
  if (!*message) message = strata_last_error();
  TORCH_CHECK(false, "strata backend: ", what, " failed (", strata_result_string(rc), "): ", message);
}

void ProcessGroupStrata::inGroup(const char* what, const std::function<strata_result_t()>& issue) {
  check(strata_group_start(), "strata_group_start");
  strata_result_t rc;
  try {
    rc = issue();
  } catch (...) {  // a bad tensor found mid-group: close the group before reporting it
    strata_group_end();
    throw;
  }
  strata_result_t end = strata_group_end();
  check(rc != STRATA_SUCCESS ? rc : end, what);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::track(c10::intrusive_ptr<StrataWork> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back(work);
  }
  cv_.notify_one();
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::done(c10::intrusive_ptr<StrataWork> work) {
  work->runAfterDone();
  work->complete("");
  return work;
}

// Waits with strata_wait while one work is pending (it sleeps in strata's
// wait policy); with several, tests them in turn so that a receive whose
// sender is late does not hold back later sends.
void ProcessGroupStrata::completionLoop() {
  constexpr std::chrono::microseconds kMinSleep{20}, kMaxSleep{500};
  std::chrono::microseconds idleSleep = kMinSleep;
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !pending_.empty(); });
    if (pending_.empty()) return;  // stopping, and everything drained
    std::vector<c10::intrusive_ptr<StrataWork>> batch(pending_.begin(), pending_.end());
    lock.unlock();
    bool progressed = false;
    for (auto& work : batch) {
      std::string error;
      bool finished = true;
      for (strata_request_t& request : work->requests) {
        if (!request) continue;
        strata_result_t rc;
        if (batch.size() == 1) {
          rc = strata_wait(request);
          request = nullptr;
        } else {
          int isDone = 0;
          rc = strata_test(request, &isDone);
          if (isDone) request = nullptr;
          else finished = false;
        }
        if (rc != STRATA_SUCCESS && error.empty())
          error = std::string(strata_result_string(rc)) + ": " + strata_last_error();
      }
      if (!finished) continue;
      // An exception must not leave this thread: it becomes the work's error.
      try {
        if (error.empty()) work->runAfterDone();
      } catch (const std::exception& e) {
        error = e.what();
      }
      work->complete(error);
      progressed = true;
      std::lock_guard<std::mutex> relock(mutex_);
      for (auto it = pending_.begin(); it != pending_.end(); ++it)
        if (*it == work) {
          pending_.erase(it);
          break;
        }
    }
    // Back off while nothing completes: DDP keeps several bucket allreduces
    // in flight for milliseconds, and every wake-up here is taken from the
    // cores that compute the backward pass.
    idleSleep = progressed ? kMinSleep : std::min(idleSleep * 2, kMaxSleep);
    if (!progressed) std::this_thread::sleep_for(idleSleep);
    lock.lock();
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  at::Tensor& t = single(tensors, "tensors");
  TORCH_CHECK(opts.rootTensor == 0, "strata backend: rootTensor must be 0");
  auto work = newWork(rank_, c10d::OpType::BROADCAST, tensors);
  work->requests.resize(1);
  check(strata_ibroadcast(bytes(t), bytes(t), bytesOf(t), STRATA_UINT8, static_cast<int>(opts.rootRank), comm_,
                          &work->requests[0]),
        "broadcast");
  return track(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  if (tensors.size() == 1 && tensors[0].is_sparse()) return sparseAllreduce(tensors[0], opts.reduceOp);
  at::Tensor& t = single(tensors, "tensors");
  if (needsFold(opts.reduceOp.op_, t)) return bitwiseAllreduce(t, opts.reduceOp.op_);
  const Reduction r = Reduction::of(t, t, opts.reduceOp, "tensors");
  auto work = newWork(rank_, c10d::OpType::ALLREDUCE, tensors);
  work->requests.resize(1);
  check(strata_iallreduce(r.in.data_ptr(), r.out.data_ptr(), r.count(), r.type, r.op, comm_,
                          &work->requests[0]),
        "allreduce");
  work->keepAlive = {r.in, r.out};
  work->afterDone = [r] { r.finish(); };
  return track(work);
}

// One strata group: strata packs small allreduces of one dtype and op into
// one (tensor fusion, up to STRATA_FUSION_BYTES).
c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!isBitwise(opts.reduceOp.op_), "strata backend: bitwise ops are not supported by allreduce_coalesced");
  std::vector<Reduction> parts;
  for (const at::Tensor& t : tensors) {
    checkTensor(t, "tensors");
    parts.push_back(Reduction::of(t, t, opts.reduceOp, "tensors"));
  }
  auto work = newWork(rank_, c10d::OpType::ALLREDUCE_COALESCED, tensors);
  inGroup("allreduce_coalesced", [&] {
    strata_result_t rc = STRATA_SUCCESS;
    for (const Reduction& r : parts) {
      rc = strata_allreduce(r.in.data_ptr(), r.out.data_ptr(), r.count(), r.type, r.op, comm_);
      if (rc != STRATA_SUCCESS) break;
    }
    return rc;
  });
  work->afterDone = [parts] {
    for (const Reduction& r : parts) r.finish();
  };
  return done(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  at::Tensor& t = single(tensors, "tensors");
  TORCH_CHECK(opts.rootTensor == 0, "strata backend: rootTensor must be 0");
  if (needsFold(opts.reduceOp.op_, t)) {
    at::Tensor copy = opts.rootRank == rank_ ? t : t.clone();
    return bitwiseAllreduce(copy, opts.reduceOp.op_);
  }
  const Reduction r = Reduction::of(t, t, opts.reduceOp, "tensors");
  const bool root = opts.rootRank == rank_;
  auto work = newWork(rank_, c10d::OpType::REDUCE, tensors);
  work->requests.resize(1);
  check(strata_ireduce(r.in.data_ptr(), r.out.data_ptr(), r.count(), r.type, r.op,
                       static_cast<int>(opts.rootRank), comm_, &work->requests[0]),
        "reduce");
  work->keepAlive = {r.in, r.out};
  work->afterDone = [r, root] {
    if (root) r.finish();  // elsewhere strata leaves `out` as it was
  };
  return track(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::bitwiseAllreduce(at::Tensor& tensor,
                                                                    c10d::ReduceOp::RedOpType op) {
  TORCH_CHECK(at::isIntegralType(tensor.scalar_type(), /*includeBool=*/true),
              "strata backend: bitwise ops need integer tensors, not ", tensor.scalar_type());
  at::Tensor all = at::empty({getSize(), tensor.numel()}, tensor.options());
  auto work = newWork(rank_, c10d::OpType::ALLREDUCE, {tensor});
  work->requests.resize(1);
  check(strata_iallgather(bytes(tensor), bytes(all), bytesOf(tensor), STRATA_UINT8, comm_, &work->requests[0]),
        "allreduce (bitwise, as an allgather)");
  work->keepAlive = {all, tensor};
  work->afterDone = [all, tensor, op]() mutable {
    at::Tensor acc = all[0].clone();
    for (int64_t r = 1; r < all.size(0); ++r) {
      if (op == c10d::ReduceOp::BAND) acc.bitwise_and_(all[r]);
      else if (op == c10d::ReduceOp::BOR) acc.bitwise_or_(all[r]);
      else acc.bitwise_xor_(all[r]);
    }
    tensor.view(-1).copy_(acc);
  };
  return track(work);
}

// Every rank's coalesced indices and values, gathered whole (allgatherv of
// their bytes, after an allgather of the counts), and summed here: what
// gloo does; the sum of sparse gradients stays sparse.
c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::sparseAllreduce(at::Tensor& tensor, const c10d::ReduceOp& op) {
  TORCH_CHECK(tensor.layout() == at::kSparse && tensor.device().is_cpu(),
              "strata backend: tensors must be a sparse COO tensor on the CPU");
  TORCH_CHECK(op.op_ == c10d::ReduceOp::SUM, "strata backend: sparse tensors reduce by SUM only, not ",
              opName(op.op_));
  const at::Tensor mine = tensor.coalesce();
  const at::Tensor indices = mine._indices().contiguous();  // [sparse_dim, nnz], int64
  const at::Tensor values = mine._values().contiguous();    // [nnz, dense sizes...]
  const size_t n = getSize();
  const int64_t sparseDim = indices.size(0);
  int64_t rowBytes = values.element_size();  // one index's values: the dense dimensions
  for (int64_t d = 1; d < values.dim(); ++d) rowBytes *= values.size(d);
  int64_t nnz = mine._nnz();
  std::vector<int64_t> counts(n);
  check(strata_allgather(&nnz, counts.data(), 1, STRATA_INT64, comm_), "allreduce (sparse: counts)");
  std::vector<size_t> indexBytes(n), indexDispls(n), valueBytes(n), valueDispls(n);
  size_t indexTotal = 0, valueTotal = 0;
  for (size_t r = 0; r < n; ++r) {
    indexBytes[r] = static_cast<size_t>(counts[r] * sparseDim) * sizeof(int64_t);
    valueBytes[r] = static_cast<size_t>(counts[r] * rowBytes);
    indexDispls[r] = indexTotal;
    valueDispls[r] = valueTotal;
    indexTotal += indexBytes[r];
    valueTotal += valueBytes[r];
  }
  at::Tensor allIndices = at::empty({static_cast<int64_t>(indexTotal)}, at::kByte);
  at::Tensor allValues = at::empty({static_cast<int64_t>(valueTotal)}, at::kByte);
  inGroup("allreduce (sparse)", [&] {
    strata_result_t rc = strata_allgatherv(bytes(indices), bytesOf(indices), bytes(allIndices), indexBytes.data(),
                                           indexDispls.data(), STRATA_UINT8, comm_);
    return rc != STRATA_SUCCESS ? rc
                                : strata_allgatherv(bytes(values), bytesOf(values), bytes(allValues), valueBytes.data(),
                                                    valueDispls.data(), STRATA_UINT8, comm_);
  });
  std::vector<at::Tensor> indexParts;
  for (size_t r = 0; r < n; ++r)
    indexParts.push_back(allIndices.narrow(0, static_cast<int64_t>(indexDispls[r]), static_cast<int64_t>(indexBytes[r]))
                             .view(at::kLong)
                             .view({sparseDim, counts[r]}));
  std::vector<int64_t> valueShape = values.sizes().vec();
  valueShape[0] = -1;
  const at::Tensor summed =
      at::sparse_coo_tensor(at::cat(indexParts, 1), allValues.view(values.scalar_type()).view(valueShape),
                            tensor.sizes())
          .coalesce();
  tensor.copy_(summed);
  return done(newWork(rank_, c10d::OpType::ALLREDUCE, {tensor}));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                             std::vector<at::Tensor>& inputs,
                                                             const c10d::AllgatherOptions&) {
  at::Tensor& in = single(inputs, "input_tensor");
  std::vector<at::Tensor> outs = listOf(outputs, getSize(), in, "tensor_list", "input_tensor");
  at::Tensor flat = at::empty({getSize(), in.numel()}, in.options());
  auto work = newWork(rank_, c10d::OpType::ALLGATHER, outs);
  work->requests.resize(1);
  check(strata_iallgather(bytes(in), bytes(flat), bytesOf(in), STRATA_UINT8, comm_, &work->requests[0]),
        "allgather");
  work->keepAlive = {flat, in};
  work->afterDone = [flat, outs]() mutable {
    for (size_t r = 0; r < outs.size(); ++r) outs[r].view(-1).copy_(flat[r]);
  };
  return track(work);
}

// Every input side by side in one byte buffer, one allgather of it, copied
// out: output_lists[r][i] gets rank r's inputs[i].
c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputLists, std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions&) {
  const size_t n = getSize();
  TORCH_CHECK(outputLists.size() == n, "strata backend: output_tensor_lists must hold world_size (", n, ") lists");
  std::vector<at::Tensor> packedParts, outs;
  for (const at::Tensor& t : inputs) {
    checkTensor(t, "input_tensor_list");
    packedParts.push_back(t.reshape(-1).view(at::kByte));
  }
  for (const auto& list : outputLists) {
    TORCH_CHECK(list.size() == inputs.size(), "strata backend: every list of output_tensor_lists must hold ",
                inputs.size(), " tensors, as input_tensor_list does");
    for (size_t i = 0; i < list.size(); ++i) {
      checkTensor(list[i], "output_tensor_lists");
      TORCH_CHECK(list[i].numel() == inputs[i].numel() && list[i].scalar_type() == inputs[i].scalar_type(),
                  "strata backend: output_tensor_lists[r][", i, "] must match input_tensor_list[", i,
                  "]'s size and dtype");
      outs.push_back(list[i]);
    }
  }
  at::Tensor packed = packedParts.empty() ? at::empty({0}, at::kByte) : at::cat(packedParts);
  at::Tensor all = at::empty({static_cast<int64_t>(n), packed.numel()}, packed.options());
  auto work = newWork(rank_, c10d::OpType::ALLGATHER_COALESCED, outs);
  work->requests.resize(1);
  check(strata_iallgather(bytes(packed), bytes(all), bytesOf(packed), STRATA_UINT8, comm_, &work->requests[0]),
        "allgather_coalesced");
  work->keepAlive = {packed, all};
  work->afterDone = [all, outputLists]() mutable {
    for (size_t r = 0; r < outputLists.size(); ++r) {
      int64_t at = 0;
      for (at::Tensor& out : outputLists[r]) {
        const int64_t size = static_cast<int64_t>(bytesOf(out));
        out.reshape(-1).view(at::kByte).copy_(all[r].narrow(0, at, size));
        at += size;
      }
    }
  };
  return track(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::AllgatherOptions&) {
  checkTensor(output, "output_tensor");
  checkTensor(input, "input_tensor");
  TORCH_CHECK(output.numel() == input.numel() * getSize() && output.scalar_type() == input.scalar_type(),
              "strata backend: output_tensor must hold world_size times input_tensor's elements, same dtype");
  auto work = newWork(rank_, c10d::OpType::_ALLGATHER_BASE, {output});
  work->requests.resize(1);
  check(strata_iallgather(bytes(input), bytes(output), bytesOf(input), STRATA_UINT8, comm_, &work->requests[0]),
        "_allgather_base");
  work->keepAlive = {input};
  return track(work);
}

// gather and scatter are one group of sends and receives around the root.
c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::GatherOptions& opts) {
  at::Tensor& in = single(inputs, "tensor");
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < getSize(), "strata backend: dst=", root, " is not a rank");
  std::vector<at::Tensor> outs;
  if (rank_ == root) outs = listOf(outputs, getSize(), in, "gather_list", "tensor");
  auto work = newWork(rank_, c10d::OpType::GATHER, outs);
  inGroup("gather", [&] {
    strata_result_t rc = strata_send(bytes(in), bytesOf(in), STRATA_UINT8, root, comm_);
    for (size_t r = 0; r < outs.size() && rc == STRATA_SUCCESS; ++r)
      rc = strata_recv(bytes(outs[r]), bytesOf(outs[r]), STRATA_UINT8, static_cast<int>(r), comm_);
    return rc;
  });
  return done(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::scatter(std::vector<at::Tensor>& outputs,
                                                           std::vector<std::vector<at::Tensor>>& inputs,
                                                           const c10d::ScatterOptions& opts) {
  at::Tensor& out = single(outputs, "tensor");
  const int root = static_cast<int>(opts.rootRank);
  TORCH_CHECK(root >= 0 && root < getSize(), "strata backend: src=", root, " is not a rank");
  std::vector<at::Tensor> ins;
  if (rank_ == root) ins = listOf(inputs, getSize(), out, "scatter_list", "tensor");
  auto work = newWork(rank_, c10d::OpType::SCATTER, outputs);
  inGroup("scatter", [&] {
    strata_result_t rc = STRATA_SUCCESS;
    for (size_t r = 0; r < ins.size() && rc == STRATA_SUCCESS; ++r)
      rc = strata_send(bytes(ins[r]), bytesOf(ins[r]), STRATA_UINT8, static_cast<int>(r), comm_);
    return rc == STRATA_SUCCESS ? strata_recv(bytes(out), bytesOf(out), STRATA_UINT8, root, comm_) : rc;
  });
  return done(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                                  std::vector<std::vector<at::Tensor>>& inputs,
                                                                  const c10d::ReduceScatterOptions& opts) {
  at::Tensor& out = single(outputs, "output");
  // strata reads the blocks from one buffer; the copy is the price of torch's list form.
  at::Tensor flat = at::stack(listOf(inputs, getSize(), out, "input_list", "output"));
  return _reduce_scatter_base(out, flat, opts);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                        const c10d::ReduceScatterOptions& opts) {
  checkTensor(output, "output");
  checkTensor(input, "input");
  TORCH_CHECK(input.numel() == output.numel() * getSize() && output.scalar_type() == input.scalar_type(),
              "strata backend: input must hold world_size times output's elements, same dtype");
  TORCH_CHECK(!needsFold(opts.reduceOp.op_, output),
              "strata backend: bitwise ops are not supported by reduce_scatter");
  const Reduction r = Reduction::of(input, output, opts.reduceOp, "output");
  auto work = newWork(rank_, c10d::OpType::REDUCE_SCATTER, {output});
  work->requests.resize(1);
  check(strata_ireduce_scatter(r.in.data_ptr(), r.out.data_ptr(), r.count(), r.type, r.op, comm_,
                               &work->requests[0]),
        "reduce_scatter");
  work->keepAlive = {input, r.in, r.out};
  work->afterDone = [r] { r.finish(); };
  return track(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                                 std::vector<int64_t>& outputSplits,
                                                                 std::vector<int64_t>& inputSplits,
                                                                 const c10d::AllToAllOptions&) {
  checkTensor(output, "output");
  checkTensor(input, "input");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(), "strata backend: output and input dtypes differ");
  const size_t n = getSize();
  auto work = newWork(rank_, c10d::OpType::ALLTOALL_BASE, {output});
  work->requests.resize(1);
  work->keepAlive = {input};
  if (outputSplits.empty() && inputSplits.empty()) {
    TORCH_CHECK(input.numel() == output.numel() && input.numel() % n == 0,
                "strata backend: input and output must have the same size, divisible by world_size");
    check(strata_ialltoall(bytes(input), bytes(output), bytesOf(input) / n, STRATA_UINT8, comm_,
                           &work->requests[0]),
          "alltoall_base");
    return track(work);
  }
  // Splits count rows of dim 0; strata counts bytes.
  auto toBytes = [n](const at::Tensor& t, const std::vector<int64_t>& splits, const char* arg,
                     std::vector<size_t>* counts, std::vector<size_t>* displs) {
    const size_t rowBytes = t.dim() > 0 && t.size(0) > 0 ? bytesOf(t) / t.size(0) : 0;
    std::vector<int64_t> rows = splits;
    if (rows.empty()) {
      TORCH_CHECK(t.dim() > 0 && t.size(0) % n == 0, "strata backend: ", arg, "'s first dimension must divide by world_size");
      rows.assign(n, t.dim() > 0 ? t.size(0) / n : 0);
    }
    TORCH_CHECK(rows.size() == n, "strata backend: ", arg, " split sizes must have world_size entries");
    size_t at = 0;
    for (int64_t r : rows) {
      TORCH_CHECK(r >= 0, "strata backend: ", arg, " split sizes must not be negative");
      counts->push_back(static_cast<size_t>(r) * rowBytes);
      displs->push_back(at);
      at += counts->back();
    }
    TORCH_CHECK(at <= bytesOf(t), "strata backend: ", arg, " split sizes exceed the tensor");
  };
  // strata plans the exchange before returning: the lists need not outlive the call.
  std::vector<size_t> sendCounts, sendDispls, recvCounts, recvDispls;
  toBytes(input, inputSplits, "input", &sendCounts, &sendDispls);
  toBytes(output, outputSplits, "output", &recvCounts, &recvDispls);
  check(strata_ialltoallv(bytes(input), sendCounts.data(), sendDispls.data(), bytes(output), recvCounts.data(),
                          recvDispls.data(), STRATA_UINT8, comm_, &work->requests[0]),
        "alltoall_base");
  return track(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::alltoall(std::vector<at::Tensor>& outputs,
                                                            std::vector<at::Tensor>& inputs,
                                                            const c10d::AllToAllOptions&) {
  const size_t n = getSize();
  TORCH_CHECK(outputs.size() == n && inputs.size() == n,
              "strata backend: output_tensor_list and input_tensor_list must hold world_size tensors");
  for (size_t r = 0; r < n; ++r) {
    checkTensor(outputs[r], "output_tensor_list");
    checkTensor(inputs[r], "input_tensor_list");
  }
  auto work = newWork(rank_, c10d::OpType::ALLTOALL, outputs);
  inGroup("alltoall", [&] {
    strata_result_t rc = STRATA_SUCCESS;
    for (size_t r = 0; r < n && rc == STRATA_SUCCESS; ++r) {
      rc = strata_send(bytes(inputs[r]), bytesOf(inputs[r]), STRATA_UINT8, static_cast<int>(r), comm_);
      if (rc == STRATA_SUCCESS)
        rc = strata_recv(bytes(outputs[r]), bytesOf(outputs[r]), STRATA_UINT8, static_cast<int>(r), comm_);
    }
    return rc;
  });
  return done(work);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::send(std::vector<at::Tensor>& tensors, int dst, int tag) {
  at::Tensor& t = single(tensors, "tensor");
  checkPeer(dst, "dst");
  auto work = newWork(rank_, c10d::OpType::SEND, {});
  mailbox_->send(work, t, dst, tag);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::recv(std::vector<at::Tensor>& tensors, int src, int tag) {
  at::Tensor& t = single(tensors, "tensor");
  checkPeer(src, "src");
  auto work = newWork(rank_, c10d::OpType::RECV, tensors);
  mailbox_->recv(work, t, src, tag);
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  at::Tensor& t = single(tensors, "tensor");
  TORCH_CHECK(getSize() > 1, "strata backend: a receive from any source in a group of one rank would never end");
  auto work = newWork(rank_, c10d::OpType::RECVANYSOURCE, tensors);
  mailbox_->recv(work, t, Mailbox::kAnySource, tag);
  return work;
}

void ProcessGroupStrata::checkPeer(int peer, const char* arg) const {
  TORCH_CHECK(peer >= 0 && peer < getSize(), "strata backend: ", arg, "=", peer, " is not a rank of this group (size ",
              getSize(), ")");
  TORCH_CHECK(peer != rank_, "strata backend: ", arg, "=", peer, " is this rank; a rank cannot message itself");
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrata::barrier(const c10d::BarrierOptions&) {
  auto work = newWork(rank_, c10d::OpType::BARRIER, {});
  work->requests.resize(1);
  check(strata_ibarrier(comm_, &work->requests[0]), "barrier");
  return track(work);
}

}  // namespace strata::torch_backend
