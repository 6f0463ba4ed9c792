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
size_t headBytes(size_t parts, int deviceChannels) {
  return alignUp(sizeof(Head) + (parts + deviceChannels) * sizeof(gpu::Flag));
}

}  // namespace

bool StagedPart::ready(uint64_t endByte) {
  uint32_t need = 1;
  if (chunkBytes_) need = static_cast<uint32_t>(std::clamp<uint64_t>((endByte + chunkBytes_ - 1) / chunkBytes_, 1, chunks_));
  if (op_->premul_.set) {
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
  // A copy the stream made is this operation's own: scaled where it lies.
  // A host input is scaled from where the caller keeps it.
  char* data = const_cast<char*>(part.hostIn_) + begin;
  const char* source = part.copyIn_ ? data : static_cast<const char*>(part.spec_.in.ptr) + begin;
  kernels::scaleBy(data, source, (end - begin) / elem, premul_.datatype, scalar_);
  part.scaled_.store(to, std::memory_order_release);
  return to;
}

void StagedOp::released(void* self) {
  auto* op = static_cast<StagedOp*>(self);
  if (op->stager_->ended_) op->stager_->ended_(op->request);
  if (op->request.status().isOk()) op->release();
  else op->releaseAll();
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
  for (auto& op : ops_) {
    // Nothing drives their collectives any more: let their streams go on
    // (into memory that stays allocated), then leak them with their blocks.
    op->releaseAll();
    (void)op.release();
  }
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

bool Stager::deviceOpsInFlight() const {
  std::lock_guard<std::mutex> lock(opsMutex_);
  for (const auto& op : ops_)
    if (op->ndone_ > 0 && !op->finished()) return true;
  return false;
}

void Stager::giveBack(void* block, size_t bytes) {
  free_.push_back({block, bytes});
  // Keep the most recent blocks up to the cache limit, and always the one
  // just returned: a training loop stages the same sizes every step, and
  // freeing pinned memory (cudaFreeHost) may wait for the GPU. Not while a
  // device operation is in flight: its caller's stream waits for CUDA calls
  // of the thread driving it, which a freeing that waits for the GPU would
  // hold up (the cache is trimmed at a later return), unless the cache has
  // grown to twice its limit meanwhile.
  const size_t cached = cachedBytes();
  if (cached <= cacheBytes_ || (cached <= 2 * cacheBytes_ && deviceOpsInFlight())) return;
  while (cachedBytes() > cacheBytes_ && free_.size() > 1) {
    allocator_.free(free_.front().ptr);
    free_.erase(free_.begin());
  }
}

size_t Stager::pinnedBytes() const {
  size_t total = cachedBytes();
  std::lock_guard<std::mutex> lock(opsMutex_);
  for (const auto& op : ops_) total += op->blockBytes_;
  return total;
}

size_t Stager::cachedBytes() const {
  size_t total = 0;
  for (const Block& b : free_) total += b.bytes;
  return total;
}

Status Stager::reserve(const std::vector<PartSpec>& parts, const PreMul& premul, StagedOp** out, int deviceChannels) {
  reap();
  // The layout: staged inputs that lie inside a staged output (in place)
  // share its area, and the other way round.
  std::vector<size_t> inAt(parts.size(), SIZE_MAX), outAt(parts.size(), SIZE_MAX);
  size_t bytes = headBytes(parts.size(), deviceChannels);
  for (size_t i = 0; i < parts.size(); ++i) {
    const PartSpec& p = parts[i];
    const bool stageIn = p.in.bytes > 0 && (p.in.staged || premul.set);
    const bool stageOut = p.out.bytes > 0 && p.out.staged;
    const bool inInOut = stageIn && stageOut && inside(p.in.ptr, p.out);
    const bool outInIn = stageIn && stageOut && !inInOut && inside(p.out.ptr, p.in);
    // The one holding the other gets the area; the other is placed inside it.
    if (stageIn) {
      if (inInOut) inAt[i] = SIZE_MAX - 1;  // resolved below, from the output's area
      else inAt[i] = bytes, bytes += alignUp(p.in.bytes);
    }
    if (stageOut) {
      if (outInIn) outAt[i] = SIZE_MAX - 1;  // resolved below, from the input's area
      else outAt[i] = bytes, bytes += alignUp(p.out.bytes);
    }
  }
  void* block = nullptr;
  size_t blockBytes = 0;
  STRATA_CHECK(takeBlock(bytes, &block, &blockBytes));
  char* base = static_cast<char*>(block);
  auto* head = new (base) Head;
  auto* landed = reinterpret_cast<gpu::Flag*>(base + sizeof(Head));
  for (size_t i = 0; i < parts.size() + deviceChannels; ++i) new (&landed[i]) gpu::Flag(0);

  auto op = std::make_unique<StagedOp>();
  op->stager_ = this;
  op->block_ = block;
  op->blockBytes_ = blockBytes;
  op->release_ = &head->release;
  op->finish_ = &head->finish;
  op->done_ = landed + parts.size();
  op->ndone_ = deviceChannels;
  op->premul_ = premul;
  op->scalar_ = head->scalar;
  if (premul.set && !premul.onDevice) std::memcpy(head->scalar, premul.value, sizeof(premul.value));
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
    part.copyIn_ = inAt[i] != SIZE_MAX && p.in.staged;
    if (part.copyIn_) {
      part.chunkBytes_ = chunkBytes_;
      part.chunks_ = static_cast<uint32_t>(std::max<size_t>(1, (p.in.bytes + chunkBytes_ - 1) / chunkBytes_));
    }
  }
  op->request.onDone(&StagedOp::released, op.get());
  *out = op.get();
  std::lock_guard<std::mutex> lock(opsMutex_);
  ops_.push_back(std::move(op));
  return Status::ok();
}

void Stager::forget(StagedOp* op) {
  std::lock_guard<std::mutex> lock(opsMutex_);
  for (auto it = ops_.begin(); it != ops_.end(); ++it)
    if (it->get() == op) {
      ops_.erase(it);
      return;
    }
}

void Stager::cancel(StagedOp* op) {
  void* block = op->block_;
  const size_t bytes = op->blockBytes_;
  forget(op);  // first: abandon() from another thread must not write into a block given back
  giveBack(block, bytes);
}

Status Stager::enqueue(gpu::StreamLane& lane, StagedOp* op) {
  op->laneName_ = lane.name();
  bool any = false;  // whether the stream holds a command on the block
  Status s;
  auto put = [&](Status enqueued) {
    any |= enqueued.isOk();
    s = enqueued;
    return s.isOk();
  };
  bool ok = true;
  if (op->premul_.set && op->premul_.onDevice)
    ok = put(lane.copy(const_cast<void*>(op->scalar_), op->premul_.onDevice, strata_datatype_size(op->premul_.datatype)));
  for (size_t i = 0; i < op->parts.size() && ok; ++i) {
    StagedPart& part = op->parts[i];
    if (!part.copyIn_) {
      ok = put(lane.signal(part.landed_, 1));
      continue;
    }
    for (uint32_t c = 0; c < part.chunks_ && ok; ++c) {
      const size_t off = c * part.chunkBytes_;
      const size_t len = std::min(part.chunkBytes_, part.spec_.in.bytes - off);
      ok = put(lane.copy(const_cast<char*>(part.hostIn_) + off, static_cast<const char*>(part.spec_.in.ptr) + off, len)) &&
           put(lane.signal(part.landed_, c + 1));
    }
  }
  ok = ok && put(lane.wait(op->release_, 1));
  for (int ch = 0; ch < op->ndone_ && ok; ++ch) ok = put(lane.wait(op->deviceDone(ch), 1));
  for (size_t i = 0; i < op->parts.size() && ok; ++i) {
    const StagedPart& part = op->parts[i];
    const UserBuffer& o = part.spec_.out;
    if (o.staged && o.bytes > 0) ok = put(lane.copy(const_cast<void*>(o.ptr), part.hostOut_, o.bytes));
  }
  ok = ok && put(lane.signal(op->finish_, 1));
  if (ok) return Status::ok();
  if (!any) {
    cancel(op);
    return s;
  }
  // Part of it is on the stream: let the stream through its waits, and keep
  // the block until it says it is done (it may never: it is leaked then).
  op->releaseAll();
  (void)lane.signal(op->finish_, 1);
  return s;
}

void Stager::reap() {
  if (abandoned_.load(std::memory_order_acquire)) return;
  std::vector<std::unique_ptr<StagedOp>> done;
  {
    std::lock_guard<std::mutex> lock(opsMutex_);
    for (auto it = ops_.begin(); it != ops_.end();) {
      if ((*it)->finished()) {
        done.push_back(std::move(*it));
        it = ops_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Outside the lock: freeing pinned memory may wait for the GPU.
  for (const auto& op : done) giveBack(op->block_, op->blockBytes_);
}

void Stager::releaseAll() {
  std::lock_guard<std::mutex> lock(opsMutex_);
  for (auto& op : ops_) op->releaseAll();
}

void Stager::abandon() {
  std::lock_guard<std::mutex> lock(opsMutex_);
  abandoned_.store(true, std::memory_order_release);
  for (auto& op : ops_) op->releaseAll();
}

size_t Stager::running() const {
  std::lock_guard<std::mutex> lock(opsMutex_);
  size_t n = 0;
  for (const auto& op : ops_) n += op->release_->load(std::memory_order_acquire) == 0;
  return n;
}

bool Stager::drain(double deadline) {
  for (;;) {
    reap();
    if (inFlight() == 0) return true;
    if (abandoned_.load(std::memory_order_acquire)) return false;
    if (nowSeconds() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace strata::streams
