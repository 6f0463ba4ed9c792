// The CUDA seam where strata is built with CUDA: the static runtime for
// everything, and the driver's stream memory operations through
// cudaGetDriverEntryPointByVersion, so that libcuda is loaded by the runtime
// when a driver exists and never named at link time.
#include "cuda_seam.h"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "log.h"
#include "stream_wait.h"

namespace strata::gpu {
namespace {

// Flags are passed to the driver and to kernels as plain 32-bit words.
static_assert(sizeof(Flag) == sizeof(uint32_t) && Flag::is_always_lock_free);

std::string errorText(cudaError_t err) {
  char text[256];
  std::snprintf(text, sizeof(text), "%s (%d): %s", cudaGetErrorName(err), static_cast<int>(err),
                cudaGetErrorString(err));
  return text;
}

// The driver calls strata makes, resolved once; null where the driver lacks
// them. Version 12000 asks for the v2 stream memory operations, which CUDA 12
// made available on every device (the v1 ones, and the device attribute that
// said whether a device allowed them, are gone), so resolving is the test.
struct DriverCalls {
  PFN_cuStreamWaitValue32_v11070 waitValue32 = nullptr;
  PFN_cuStreamWriteValue32_v11070 writeValue32 = nullptr;
  PFN_cuGetErrorName_v6000 errorName = nullptr;
  PFN_cuGetErrorString_v6000 errorString = nullptr;
  PFN_cuPointerGetAttributes_v7000 pointerAttributes = nullptr;
  PFN_cuCtxGetCurrent_v4000 ctxGetCurrent = nullptr;
  PFN_cuCtxSetCurrent_v4000 ctxSetCurrent = nullptr;
};

template <typename Fn>
Fn driverCall(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &found) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return found == cudaDriverEntryPointSuccess ? reinterpret_cast<Fn>(fn) : nullptr;
}

struct Probe {
  RuntimeInfo info;
  DriverCalls driver;
};

std::atomic<bool> gForked{false};

// Fills `devices`, or says why a device cannot be described (then CUDA is
// not usable: a device that does not answer this will not run strata's work).
std::string describeDevices(int count, std::vector<DeviceInfo>* devices) {
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop;
    char busId[32];
    cudaError_t err = cudaGetDeviceProperties(&prop, d);
    if (err == cudaSuccess) err = cudaDeviceGetPCIBusId(busId, sizeof(busId), d);
    if (err != cudaSuccess) {
      cudaGetLastError();
      return "CUDA device " + std::to_string(d) + " does not answer: " + errorText(err);
    }
    devices->push_back(DeviceInfo{d, prop.name, prop.major, prop.minor, busId, prop.totalGlobalMem});
  }
  return "";
}

Probe probeRuntime() {
  Probe p;
  RuntimeInfo& info = p.info;
  info.built = true;
  // Both answer without a driver (13000 and 0 here), which is what a user
  // debugging "no GPU" needs to see.
  cudaRuntimeGetVersion(&info.runtimeVersion);
  cudaDriverGetVersion(&info.driverVersion);
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    info.why = errorText(err);
    return p;
  }
  if (count == 0) {
    info.why = "the CUDA driver sees no device (check CUDA_VISIBLE_DEVICES)";
    return p;
  }
  info.why = describeDevices(count, &info.devices);
  if (!info.why.empty()) {
    info.devices.clear();
    return p;
  }
  info.usable = true;
  p.driver.waitValue32 = driverCall<PFN_cuStreamWaitValue32_v11070>("cuStreamWaitValue32");
  p.driver.writeValue32 = driverCall<PFN_cuStreamWriteValue32_v11070>("cuStreamWriteValue32");
  p.driver.errorName = driverCall<PFN_cuGetErrorName_v6000>("cuGetErrorName");
  p.driver.errorString = driverCall<PFN_cuGetErrorString_v6000>("cuGetErrorString");
  p.driver.pointerAttributes = driverCall<PFN_cuPointerGetAttributes_v7000>("cuPointerGetAttributes");
  p.driver.ctxGetCurrent = driverCall<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent");
  p.driver.ctxSetCurrent = driverCall<PFN_cuCtxSetCurrent_v4000>("cuCtxSetCurrent");
  // A CUDA context does not survive fork(): a child of this process must
  // not believe it has a GPU (its every call would fail, or worse).
  pthread_atfork(nullptr, nullptr, [] { gForked.store(true, std::memory_order_relaxed); });
  // Both or neither: a lane must not mix a memop signal with a kernel wait
  // on one flag only because one symbol resolved.
  info.streamMemOps = p.driver.waitValue32 && p.driver.writeValue32;
  return p;
}

// A function's static: probed once, by whichever thread asks first.
const Probe& probe() {
  static const Probe p = probeRuntime();
  return p;
}

std::string driverErrorText(CUresult res) {
  const DriverCalls& drv = probe().driver;
  const char* name = nullptr;
  const char* text = nullptr;
  if (drv.errorName) drv.errorName(res, &name);
  if (drv.errorString) drv.errorString(res, &text);
  char buf[256];
  std::snprintf(buf, sizeof(buf), "%s (%d): %s", name ? name : "CUresult", static_cast<int>(res),
                text ? text : "no description from the driver");
  return buf;
}

Status notUsable(const char* what) {
  return makeErrorQuiet(STRATA_ERR_CUDA, "%s: no CUDA device is usable here (%s)", what, runtime().why.c_str());
}

// Flags come from allocPinned, or from host memory registerHost mapped (it
// checks the device may use host pointers to it): under unified addressing
// (every 64-bit Linux process, every device strata supports) either has the
// same address on the device as on the host.
CUdeviceptr deviceAddress(Flag* flag) { return reinterpret_cast<CUdeviceptr>(flag); }

struct PendingStore {
  Flag* flag;
  uint32_t value;
};

// Runs on CUDA's callback thread, which must not call CUDA: the store and
// freeing its note, nothing else.
void CUDART_CB storeFlag(void* arg) {
  auto* store = static_cast<PendingStore*>(arg);
  store->flag->store(store->value, std::memory_order_release);
  delete store;
}

class CudaLane final : public StreamLane {
 public:
  explicit CudaLane(cudaStream_t stream) : stream_(stream) {
    std::snprintf(name_, sizeof(name_), "CUDA stream 0x%" PRIxPTR, reinterpret_cast<uintptr_t>(stream));
  }

  Status copy(void* dst, const void* src, size_t bytes) override {
    cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_);
    if (err == cudaSuccess) return Status::ok();
    cudaGetLastError();
    return STRATA_ERROR(STRATA_ERR_CUDA, "cudaMemcpyAsync(dst=%p, src=%p, %zu bytes) on %s: %s", dst, src, bytes,
                        name_, errorText(err).c_str());
  }

  Status signal(Flag* flag, uint32_t value) override {
    if (runtime().streamMemOps) {
      CUresult res = probe().driver.writeValue32(stream(), deviceAddress(flag), value, CU_STREAM_WRITE_VALUE_DEFAULT);
      if (res == CUDA_SUCCESS) return Status::ok();
      return STRATA_ERROR(STRATA_ERR_CUDA, "cuStreamWriteValue32(flag=%p, %u) on %s: %s", static_cast<void*>(flag),
                          value, name_, driverErrorText(res).c_str());
    }
    auto* store = new PendingStore{flag, value};
    cudaError_t err = cudaLaunchHostFunc(stream_, storeFlag, store);
    if (err == cudaSuccess) return Status::ok();
    delete store;
    cudaGetLastError();
    return STRATA_ERROR(STRATA_ERR_CUDA, "cudaLaunchHostFunc (raising flag=%p to %u) on %s: %s",
                        static_cast<void*>(flag), value, name_, errorText(err).c_str());
  }

  Status wait(Flag* flag, uint32_t value) override {
    if (runtime().streamMemOps) {
      CUresult res = probe().driver.waitValue32(stream(), deviceAddress(flag), value, CU_STREAM_WAIT_VALUE_GEQ);
      if (res == CUDA_SUCCESS) return Status::ok();
      return STRATA_ERROR(STRATA_ERR_CUDA, "cuStreamWaitValue32(flag=%p, >= %u) on %s: %s", static_cast<void*>(flag),
                          value, name_, driverErrorText(res).c_str());
    }
    cudaError_t err = launchStreamWait(stream_, reinterpret_cast<const uint32_t*>(flag), value);
    if (err == cudaSuccess) return Status::ok();
    cudaGetLastError();
    return STRATA_ERROR(STRATA_ERR_CUDA, "launching the kernel that waits for flag=%p >= %u on %s: %s",
                        static_cast<void*>(flag), value, name_, errorText(err).c_str());
  }

  const char* name() const override { return name_; }

 private:
  CUstream stream() const { return reinterpret_cast<CUstream>(stream_); }

  cudaStream_t stream_;
  char name_[40];
};

// CUDA refuses to open a handle in the process that exported it, and ranks
// that are threads of one process trade handles like any others: this
// process's exports, and how often each was "opened" here, which only hands
// the pointer back.
struct OwnExports {
  std::mutex mutex;
  std::vector<std::pair<IpcHandle, void*>> exported;
  std::vector<void*> opened;  // once per open of one of them
};
OwnExports& ownExports() {
  static auto* own = new OwnExports;  // never destroyed: threads may use it at exit
  return *own;
}

}  // namespace

const RuntimeInfo& runtime() {
  const RuntimeInfo& info = probe().info;
  if (!gForked.load(std::memory_order_relaxed)) return info;
  static const RuntimeInfo forked = [&] {
    RuntimeInfo r = info;
    r.usable = false;
    r.devices.clear();
    r.why = "this process was forked after CUDA was initialised in its parent, and a CUDA context does not "
            "survive fork(): start CUDA work in the child only (or use spawn)";
    return r;
  }();
  return forked;
}

BufferKind classify(const void* ptr) {
  if (!runtime().usable) return {};
  if (PFN_cuPointerGetAttributes_v7000 attributes = probe().driver.pointerAttributes) {
    unsigned int memoryType = 0;
    unsigned long long managed = 0;  // wide enough for whatever the driver's boolean is
    int ordinal = -1;
    CUpointer_attribute which[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                   CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void* data[] = {&memoryType, &managed, &ordinal};
    // Memory CUDA does not know is no error: its attributes come back zero.
    if (attributes(3, which, data, reinterpret_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS) return {MemKind::Unknown, -1};
    if (managed) return {MemKind::Managed, ordinal};
    if (memoryType == CU_MEMORYTYPE_DEVICE) return {MemKind::Device, ordinal};
    if (memoryType == CU_MEMORYTYPE_HOST) return {MemKind::PinnedHost, -1};
    return {};
  }
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, ptr) != cudaSuccess) {
    cudaGetLastError();
    return {MemKind::Unknown, -1};
  }
  switch (attr.type) {
    case cudaMemoryTypeHost: return {MemKind::PinnedHost, -1};
    case cudaMemoryTypeDevice: return {MemKind::Device, attr.device};
    case cudaMemoryTypeManaged: return {MemKind::Managed, attr.device};
    case cudaMemoryTypeUnregistered: break;
  }
  return {};
}

void* legacyStream() { return static_cast<void*>(cudaStreamLegacy); }

Status checkStream(void* stream, const char* argName) {
  if (!runtime().usable) {
    return makeErrorQuiet(STRATA_ERR_CUDA, "%s=%p: no CUDA device is usable here (%s); pass a NULL stream for a blocking call on host memory",
                          argName, stream, runtime().why.c_str());
  }
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &capture);
  // The legacy default stream answers cudaErrorStreamCaptureImplicit while
  // another stream captures in global mode: a capture all the same.
  if (err == cudaErrorStreamCaptureImplicit || (err == cudaSuccess && capture != cudaStreamCaptureStatusNone)) {
    cudaGetLastError();
    return makeErrorQuiet(STRATA_ERR_INVALID_USAGE,
                          "%s=%p is being captured into a CUDA graph: capturing strata calls is not supported; "
                          "issue the call outside the capture (before cudaStreamBeginCapture or after cudaStreamEndCapture)",
                          argName, stream);
  }
  if (err != cudaSuccess) {
    cudaGetLastError();
    return makeErrorQuiet(STRATA_ERR_CUDA, "%s=%p is not a stream CUDA accepts (cudaStreamIsCapturing: %s); pass a live cudaStream_t",
                          argName, stream, errorText(err).c_str());
  }
  return Status::ok();
}

std::unique_ptr<StreamLane> cudaLane(void* stream) {
  return std::make_unique<CudaLane>(static_cast<cudaStream_t>(stream));
}

Status allocPinned(size_t bytes, void** out) {
  if (!runtime().usable) return notUsable("allocating pinned host memory");
  void* ptr = nullptr;
  cudaError_t err = cudaHostAlloc(&ptr, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return STRATA_ERROR(STRATA_ERR_CUDA, "cudaHostAlloc(%zu bytes, mapped | portable): %s",
                        bytes, errorText(err).c_str());
  }
  *out = ptr;
  return Status::ok();
}

void freePinned(void* ptr) {
  if (ptr == nullptr) return;
  cudaError_t err = cudaFreeHost(ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    STRATA_WARN(COLL, "cudaFreeHost(%p): %s", ptr, errorText(err).c_str());
  }
}

int currentDevice() {
  if (!runtime().usable) return -1;
  int device = -1;
  if (cudaGetDevice(&device) == cudaSuccess) return device;
  cudaGetLastError();
  return -1;
}

DeviceScope::DeviceScope(int device) {
  if (device < 0) return;
  const DriverCalls& drv = probe().driver;
  // Whether the thread had a context: on a thread that never used CUDA,
  // cudaGetDevice answers 0 without one, and setting device 0 back would
  // create GPU 0's primary context (CUDA 12 creates it at cudaSetDevice) in
  // every process whose GPU is another.
  CUcontext before = nullptr;
  if (!drv.ctxGetCurrent || drv.ctxGetCurrent(&before) != CUDA_SUCCESS) before = nullptr;
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  if (before && current == device) return;
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  // Only a context the thread had is put back; a thread that had none (a
  // progress thread, a user's thread new to CUDA) keeps this one, which
  // costs nothing on its next scope.
  if (before && drv.ctxSetCurrent) previous_ = before;
}

DeviceScope::~DeviceScope() {
  if (previous_) probe().driver.ctxSetCurrent(static_cast<CUcontext>(previous_));
}

Status allocDevice(size_t bytes, void** out) {
  if (!runtime().usable) return notUsable("allocating GPU memory");
  void* ptr = nullptr;
  cudaError_t err = cudaMalloc(&ptr, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    int device = -1;
    cudaGetDevice(&device);
    return STRATA_ERROR(STRATA_ERR_CUDA, "cudaMalloc(%zu bytes) on CUDA device %d: %s", bytes, device,
                        errorText(err).c_str());
  }
  *out = ptr;
  return Status::ok();
}

Status freeDevice(void* ptr) {
  if (ptr == nullptr) return Status::ok();
  if (!runtime().usable) return notUsable("freeing GPU memory");
  {
    // Its handle, if it was exported, names nothing from here on.
    OwnExports& own = ownExports();
    std::lock_guard<std::mutex> lock(own.mutex);
    own.exported.erase(std::remove_if(own.exported.begin(), own.exported.end(),
                                      [ptr](const auto& e) { return e.second == ptr; }),
                       own.exported.end());
  }
  cudaError_t err = cudaFree(ptr);
  if (err == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return STRATA_ERROR(STRATA_ERR_CUDA, "cudaFree(ptr=%p): %s; pass a pointer from strata_mem_alloc", ptr,
                      errorText(err).c_str());
}

static_assert(sizeof(IpcHandle) == sizeof(cudaIpcMemHandle_t));

namespace {

// Lets the current device reach `ptr`'s device, as cudaIpcMemLazyEnablePeerAccess does for a peer's handle.
Status reachFromCurrent(void* ptr) {
  cudaPointerAttributes attrs{};
  int current = -1, can = 0;
  cudaError_t err = cudaPointerGetAttributes(&attrs, ptr);
  if (err == cudaSuccess) err = cudaGetDevice(&current);
  if (err == cudaSuccess && attrs.device != current) err = cudaDeviceCanAccessPeer(&can, current, attrs.device);
  if (err == cudaSuccess && attrs.device != current && !can)
    return makeErrorQuiet(STRATA_ERR_CUDA, "CUDA device %d cannot reach device %d's memory (no peer access)", current,
                          attrs.device);
  if (err == cudaSuccess && attrs.device != current) {
    err = cudaDeviceEnablePeerAccess(attrs.device, 0);
    if (err == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();  // the caller's next cudaGetLastError must not see it
      err = cudaSuccess;
    }
  }
  if (err == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return makeErrorQuiet(STRATA_ERR_CUDA, "reaching another rank's memory in this process: %s", errorText(err).c_str());
}

}  // namespace

Status ipcExport(void* devicePtr, IpcHandle* out) {
  if (!runtime().usable) return notUsable("sharing GPU memory");
  cudaIpcMemHandle_t handle;
  cudaError_t err = cudaIpcGetMemHandle(&handle, devicePtr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return STRATA_ERROR(STRATA_ERR_CUDA, "cudaIpcGetMemHandle(%p): %s", devicePtr, errorText(err).c_str());
  }
  std::memcpy(out->bytes, &handle, sizeof(handle));
  OwnExports& own = ownExports();
  std::lock_guard<std::mutex> lock(own.mutex);
  own.exported.emplace_back(*out, devicePtr);
  return Status::ok();
}

Status ipcOpen(const IpcHandle& handle, void** out) {
  if (!runtime().usable) return notUsable("mapping a peer's GPU memory");
  {
    OwnExports& own = ownExports();
    std::lock_guard<std::mutex> lock(own.mutex);
    for (const auto& [exported, ptr] : own.exported) {
      if (std::memcmp(exported.bytes, handle.bytes, sizeof(handle.bytes)) != 0) continue;
      STRATA_CHECK(reachFromCurrent(ptr));
      own.opened.push_back(ptr);
      *out = ptr;
      return Status::ok();
    }
  }
  cudaIpcMemHandle_t h;
  std::memcpy(&h, handle.bytes, sizeof(h));
  cudaError_t err = cudaIpcOpenMemHandle(out, h, cudaIpcMemLazyEnablePeerAccess);
  if (err == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return makeErrorQuiet(STRATA_ERR_CUDA, "cudaIpcOpenMemHandle: %s", errorText(err).c_str());
}

void ipcClose(void* ptr) {
  if (!ptr) return;
  {
    OwnExports& own = ownExports();
    std::lock_guard<std::mutex> lock(own.mutex);
    auto it = std::find(own.opened.begin(), own.opened.end(), ptr);
    if (it != own.opened.end()) {
      own.opened.erase(it);
      return;
    }
  }
  cudaError_t err = cudaIpcCloseMemHandle(ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    STRATA_WARN(NET, "cudaIpcCloseMemHandle(%p): %s", ptr, errorText(err).c_str());
  }
}

Status registerHost(void* ptr, size_t bytes) {
  if (!runtime().usable) return notUsable("pinning shared memory for the GPU");
  int device = 0, hostPointers = 0;
  cudaGetDevice(&device);
  // Without it a stream would need another address for the same flag
  // (cudaHostGetDevicePointer); every 64-bit Linux GPU strata supports has it.
  if (cudaDeviceGetAttribute(&hostPointers, cudaDevAttrCanUseHostPointerForRegisteredMem, device) != cudaSuccess ||
      !hostPointers) {
    cudaGetLastError();
    return makeErrorQuiet(STRATA_ERR_CUDA, "CUDA device %d cannot use host pointers to registered memory", device);
  }
  cudaError_t err = cudaHostRegister(ptr, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
  if (err == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return makeErrorQuiet(STRATA_ERR_CUDA, "cudaHostRegister(%p, %zu bytes, mapped | portable): %s", ptr, bytes,
                        errorText(err).c_str());
}

void unregisterHost(void* ptr) {
  if (!ptr) return;
  cudaError_t err = cudaHostUnregister(ptr);
  if (err != cudaSuccess) {
    cudaGetLastError();
    STRATA_WARN(NET, "cudaHostUnregister(%p): %s", ptr, errorText(err).c_str());
  }
}

Status copyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  cudaError_t err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream));
  if (err == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return makeErrorQuiet(STRATA_ERR_CUDA, "cudaMemcpyAsync(dst=%p, src=%p, %zu bytes) on stream %p: %s", dst, src, bytes,
                        stream, errorText(err).c_str());
}

Status createStream(void** out) {
  if (!runtime().usable) return notUsable("creating a stream");
  cudaStream_t stream = nullptr;
  cudaError_t err = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return STRATA_ERROR(STRATA_ERR_CUDA, "cudaStreamCreateWithFlags(non-blocking): %s", errorText(err).c_str());
  }
  *out = stream;
  return Status::ok();
}

void destroyStream(void* stream) {
  if (stream && cudaStreamDestroy(static_cast<cudaStream_t>(stream)) != cudaSuccess) cudaGetLastError();
}

Status synchronize(void* stream) {
  cudaError_t err = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  if (err == cudaSuccess) return Status::ok();
  cudaGetLastError();
  return STRATA_ERROR(STRATA_ERR_CUDA, "cudaStreamSynchronize(%p): %s", stream, errorText(err).c_str());
}

Status finishWithin(void* stream, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    cudaError_t err = cudaStreamQuery(static_cast<cudaStream_t>(stream));
    if (err == cudaSuccess) return Status::ok();
    if (err != cudaErrorNotReady) {
      cudaGetLastError();
      return makeErrorQuiet(STRATA_ERR_CUDA, "work on stream %p failed: %s", stream, errorText(err).c_str());
    }
    if (std::chrono::steady_clock::now() > deadline)
      return makeErrorQuiet(STRATA_ERR_TIMEOUT, "stream %p still has work after %.0f s", stream, seconds);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Status streamError(void* stream) {
  cudaError_t err = cudaStreamQuery(static_cast<cudaStream_t>(stream));
  if (err == cudaSuccess || err == cudaErrorNotReady) return Status::ok();
  cudaGetLastError();
  return makeErrorQuiet(STRATA_ERR_CUDA, "work on stream %p failed: %s", stream, errorText(err).c_str());
}

}  // namespace strata::gpu
