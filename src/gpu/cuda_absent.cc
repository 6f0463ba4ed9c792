// The CUDA seam in a build without CUDA: every buffer is host memory, and
// whatever needs a GPU fails with the reason, so a caller passing a stream or
// asking for device memory learns to rebuild rather than to look for a GPU.
#include "cuda_seam.h"

namespace strata::gpu {
namespace {

constexpr const char* kWhy = "strata was built without CUDA (-Dcuda=disabled or no nvcc)";

}  // namespace

const RuntimeInfo& runtime() {
  static const RuntimeInfo info = [] {
    RuntimeInfo r;
    r.why = kWhy;
    return r;
  }();
  return info;
}

BufferKind classify(const void*) { return {}; }

Status checkStream(void* stream, const char* argName) {
  return makeErrorQuiet(STRATA_ERR_CUDA, "%s=%p: streams need CUDA, and %s; pass a NULL stream for a blocking call on host memory",
                        argName, stream, kWhy);
}

void* legacyStream() { return nullptr; }

std::unique_ptr<StreamLane> cudaLane(void*) { return nullptr; }

Status allocPinned(size_t bytes, void** /*out*/) {
  return makeErrorQuiet(STRATA_ERR_CUDA, "cannot allocate %zu bytes of pinned host memory: %s", bytes, kWhy);
}

void freePinned(void*) {}

int currentDevice() { return -1; }

DeviceScope::DeviceScope(int) {}
DeviceScope::~DeviceScope() {}

Status allocDevice(size_t bytes, void** /*out*/) {
  return makeErrorQuiet(STRATA_ERR_CUDA, "cannot allocate %zu bytes of GPU memory: %s", bytes, kWhy);
}

Status freeDevice(void* ptr) {
  if (ptr == nullptr) return Status::ok();
  return makeErrorQuiet(STRATA_ERR_CUDA, "ptr=%p cannot be GPU memory from strata: %s", ptr, kWhy);
}

Status ipcExport(void* devicePtr, IpcHandle*) {
  return makeErrorQuiet(STRATA_ERR_CUDA, "cannot share GPU memory %p: %s", devicePtr, kWhy);
}

Status ipcOpen(const IpcHandle&, void**) {
  return makeErrorQuiet(STRATA_ERR_CUDA, "cannot map a peer's GPU memory: %s", kWhy);
}

void ipcClose(void*) {}

Status registerHost(void* ptr, size_t bytes) {
  return makeErrorQuiet(STRATA_ERR_CUDA, "cannot pin %zu bytes at %p for the GPU: %s", bytes, ptr, kWhy);
}

void unregisterHost(void*) {}

Status copyAsync(void* dst, const void* src, size_t bytes, void*) {
  return makeErrorQuiet(STRATA_ERR_CUDA, "cannot copy %zu bytes from %p to %p on a stream: %s", bytes, src, dst, kWhy);
}

Status createStream(void**) { return makeErrorQuiet(STRATA_ERR_CUDA, "cannot create a CUDA stream: %s", kWhy); }

void destroyStream(void*) {}

Status synchronize(void* stream) {
  return makeErrorQuiet(STRATA_ERR_CUDA, "cannot synchronize stream %p: %s", stream, kWhy);
}

Status streamError(void*) { return Status::ok(); }

Status finishWithin(void*, double) { return Status::ok(); }

}  // namespace strata::gpu
