#include "staging.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <thread>

#include "clock.h"
#include "kernels.h"
#include "log.h"

namespace strata::streams {
namespace {

// Staging areas start on their own cache lines (and DMA likes them aligned).
constexpr size_t kAlign = 256;
size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

bool inside(const void* p, const UserBuffer& b) {
  auto x = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(b.ptr);
  return b.bytes > 0 && x >= base && x < base + b.bytes;
}

// A block starts with the flags and the scalar, then one `landed` flag per
// part, then the staging areas.
struct Head {
  gpu::Flag release{0};
  gpu::Flag finish{0};
  alignas(8) unsigned char scalar[8];
};
size_t headBytes(size_t parts) { return alignUp(sizeof(Head) + parts * sizeof(gpu::Flag)); }

}  // namespace

bool StagedPart::ready(uint64_t endByte) {
  uint32_t need = 1;
  if (chunkBytes_) need = static_cast<uint32_t>(std::clamp<uint64_t>((endByte + chunkBytes_ - 1) / chunkBytes_, 1, chunks_));
  if (op_->premul_.scalar) {
    if (scaled_.load(std::memory_order_acquire) >= need) return true;
    return op_->scaleLanded(*this) >= need;
  }
  return landed_->load(std::memory_order_acquire) >= need;
}

std::string StagedPart::describeWait() const {
  const uint32_t got = landed_->load(std::memory_order_acquire);
  if (got == 0) return "its stream (" + op_->laneName_ + ") has not reached the operation: earlier work on it is still running";
  return "chunk " + std::to_string(got + 1) + " of " + std::to_string(chunks_) + " of its input is not yet copied from the GPU by " + op_->laneName_;
}

uint32_t StagedOp::scaleLanded(StagedPart& part) {
  std::lock_guard<std::mutex> lock(scaling_);
  const uint32_t from = part.scaled_.load(std::memory_order_relaxed);
  const uint32_t to = std::min(part.landed_->load(std::memory_order_acquire), part.chunks_);
  if (to <= from) return from;
  const size_t elem = strata_datatype_size(premul_.datatype);
  const size_t begin = part.chunkBytes_ ? from * part.chunkBytes_ : 0;
  const size_t end = part.chunkBytes_ ? std::min(part.spec_.in.bytes, to * part.chunkBytes_) : part.spec_.in.bytes;
  // The staged copy is this operation's own: scaled where it lies.
  char* data = const_cast<char*>(part.hostIn_) + begin;
  kernels::scaleBy(data, data, (end - begin) / elem, premul_.datatype, scalar_);
  part.scaled_.store(to, std::memory_order_release);
  return to;
}

void StagedOp::released(void* self) {
  static_cast<StagedOp*>(self)->release_->store(1, std::memory_order_release);
}

bool StagedOp::finished() const { return finish_->load(std::memory_order_acquire) != 0; }

Stager::Stager(PinnedAllocator allocator, size_t chunkBytes, size_t cacheBytes)
    : allocator_(allocator), chunkBytes_(std::max<size_t>(kAlign, chunkBytes / kAlign * kAlign)), cacheBytes_(cacheBytes) {}

Stager::~Stager() {
  reap();
  if (!ops_.empty())
    STRATA_WARN(INIT,
                "%zu stream-ordered operations were still in flight on their CUDA streams when the "
                "communicator went away; their pinned memory is left allocated so the streams cannot "
                "write freed memory", ops_.size());
  for (auto& op : ops_) op.release();  // leaked on purpose, with their blocks
  for (const Block& b : free_) allocator_.free(b.ptr);
}

Status Stager::takeBlock(size_t bytes, void** block, size_t* got) {
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it)
    if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
  if (best != free_.end()) {
    *block = best->ptr;
    *got = best->bytes;
    free_.erase(best);
    return Status::ok();
  }
  STRATA_CHECK(allocator_.alloc(bytes, block));
  *got = bytes;
  return Status::ok();
}

void Stager::giveBack(void* block, size_t bytes) {
  free_.push_back({block, bytes});
  // Keep the most recent blocks up to the cache limit: a training loop
  // stages the same sizes every step.
  while (cachedBytes() > cacheBytes_ && !free_.empty()) {
    allocator_.free(free_.front().ptr);
    free_.erase(free_.begin());
  }
}

size_t Stager::cachedBytes() const {
  size_t total = 0;
  for (const Block& b : free_) total += b.bytes;
  return total;
}

Status Stager::stage(gpu::StreamLane& lane, const std::vector<PartSpec>& parts, const PreMul& premul,
                     StagedOp** out) {
  reap();
  // The layout: staged inputs that lie inside a staged output (in place)
  // share its area, and the other way round.
  std::vector<size_t> inAt(parts.size(), SIZE_MAX), outAt(parts.size(), SIZE_MAX);
  size_t bytes = headBytes(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    const PartSpec& p = parts[i];
    const bool stageIn = p.in.bytes > 0 && (p.in.staged || premul.scalar);
    const bool stageOut = p.out.bytes > 0 && p.out.staged;
    const bool inInOut = stageIn && stageOut && inside(p.in.ptr, p.out);
    const bool outInIn = stageIn && stageOut && !inInOut && inside(p.out.ptr, p.in);
    if (stageIn && !outInIn) {
      if (inInOut) inAt[i] = SIZE_MAX - 1;  // resolved below, from the output's area
      else inAt[i] = bytes, bytes += alignUp(p.in.bytes);
    }
    if (stageOut && !inInOut) {
      if (outInIn) outAt[i] = SIZE_MAX - 1;
      else outAt[i] = bytes, bytes += alignUp(p.out.bytes);
    }
  }
  void* block = nullptr;
  size_t blockBytes = 0;
  STRATA_CHECK(takeBlock(bytes, &block, &blockBytes));
  char* base = static_cast<char*>(block);
  auto* head = new (base) Head;
  auto* landed = reinterpret_cast<gpu::Flag*>(base + sizeof(Head));
  for (size_t i = 0; i < parts.size(); ++i) new (&landed[i]) gpu::Flag(0);

  auto op = std::make_unique<StagedOp>();
  op->laneName_ = lane.name();
  op->block_ = block;
  op->blockBytes_ = blockBytes;
  op->release_ = &head->release;
  op->finish_ = &head->finish;
  op->premul_ = premul;
  op->scalar_ = head->scalar;
  op->parts = std::vector<StagedPart>(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    StagedPart& part = op->parts[i];
    const PartSpec& p = parts[i];
    part.op_ = op.get();
    part.spec_ = p;
    part.landed_ = &landed[i];
    part.hostIn_ = static_cast<const char*>(p.in.ptr);
    part.hostOut_ = static_cast<char*>(const_cast<void*>(p.out.ptr));
    if (outAt[i] < SIZE_MAX - 1) part.hostOut_ = base + outAt[i];
    if (inAt[i] < SIZE_MAX - 1) part.hostIn_ = base + inAt[i];
    if (inAt[i] == SIZE_MAX - 1)
      part.hostIn_ = part.hostOut_ + (static_cast<const char*>(p.in.ptr) - static_cast<const char*>(p.out.ptr));
    if (outAt[i] == SIZE_MAX - 1)
      part.hostOut_ = const_cast<char*>(part.hostIn_) + (static_cast<const char*>(p.out.ptr) - static_cast<const char*>(p.in.ptr));
    if (inAt[i] != SIZE_MAX) {
      part.chunkBytes_ = chunkBytes_;
      part.chunks_ = static_cast<uint32_t>(std::max<size_t>(1, (p.in.bytes + chunkBytes_ - 1) / chunkBytes_));
    }
  }
  // From here on the stream may hold commands on the block: it is freed
  // only once the stream says it is done with it.
  StagedOp* raw = op.get();
  ops_.push_back(std::move(op));
  raw->request.onDone(&StagedOp::released, raw);

  Status s;
  if (premul.scalar) {
    const size_t elem = strata_datatype_size(premul.datatype);
    if (premul.onDevice) s = lane.copy(head->scalar, premul.scalar, elem);
    else std::memcpy(head->scalar, premul.scalar, elem);
  }
  for (size_t i = 0; i < parts.size() && s.isOk(); ++i) {
    StagedPart& part = raw->parts[i];
    if (inAt[i] == SIZE_MAX) {
      s = lane.signal(part.landed_, 1);
      continue;
    }
    for (uint32_t c = 0; c < part.chunks_ && s.isOk(); ++c) {
      const size_t off = c * part.chunkBytes_;
      const size_t len = std::min(part.chunkBytes_, part.spec_.in.bytes - off);
      s = lane.copy(const_cast<char*>(part.hostIn_) + off, static_cast<const char*>(part.spec_.in.ptr) + off, len);
      if (s.isOk()) s = lane.signal(part.landed_, c + 1);
    }
  }
  if (!s.isOk()) {
    // The stream holds some of the commands: nothing the host collective
    // could wait for will come. The block stays with the stream.
    raw->release_->store(1, std::memory_order_release);
    (void)lane.signal(raw->finish_, 1);
    return s;
  }
  *out = raw;
  return Status::ok();
}

Status Stager::finishStaging(gpu::StreamLane& lane, StagedOp* op, const Status& submitted) {
  if (!submitted.isOk()) {
    op->release_->store(1, std::memory_order_release);
    return lane.signal(op->finish_, 1);
  }
  STRATA_CHECK(lane.wait(op->release_, 1));
  for (StagedPart& part : op->parts) {
    const UserBuffer& o = part.spec_.out;
    if (o.staged && o.bytes > 0) STRATA_CHECK(lane.copy(const_cast<void*>(o.ptr), part.hostOut_, o.bytes));
  }
  return lane.signal(op->finish_, 1);
}

void Stager::reap() {
  for (auto it = ops_.begin(); it != ops_.end();) {
    if ((*it)->finished()) {
      giveBack((*it)->block_, (*it)->blockBytes_);
      it = ops_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t Stager::running() const {
  size_t n = 0;
  for (const auto& op : ops_) n += op->release_->load(std::memory_order_acquire) == 0;
  return n;
}

bool Stager::drain(double deadline) {
  for (;;) {
    reap();
    if (ops_.empty()) return true;
    if (nowSeconds() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace strata::streams
