// strata's one door to CUDA. Everything else reaches the GPU through these
// calls, so a build without CUDA (cuda_absent.cc) and a machine without a
// driver (every runtime call returns 35 or 100) differ from a GPU machine
// only in what these answer: no GPU means every buffer is host memory.
//
// The runtime is linked statically and libcuda is never linked: driver entry
// points (the stream memory operations) come from
// cudaGetDriverEntryPointByVersion, so libstrata loads where no driver is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "status.h"
#include "stream_lane.h"

namespace strata::gpu {

struct DeviceInfo {
  int index;
  std::string name;
  int major, minor;        // compute capability
  std::string pciBusId;    // "0000:3b:00.0"
  size_t memoryBytes;
};

// What the process can do with CUDA, probed once.
struct RuntimeInfo {
  bool built = false;        // strata was built with CUDA
  bool usable = false;       // a driver and at least one device answered (and no fork since)
  int runtimeVersion = 0;    // cudaRuntimeGetVersion (13000 = 13.0)
  int driverVersion = 0;     // cudaDriverGetVersion (0: no driver)
  std::string why;           // when !usable: the CUDA error (name, code, text) or "built without CUDA"
  std::vector<DeviceInfo> devices;
  bool streamMemOps = false;  // cuStreamWaitValue32/WriteValue32 reachable (else the fallbacks)
};
const RuntimeInfo& runtime();

// Where a buffer lives. Found with the driver's cuPointerGetAttributes when
// CUDA is usable (unlike the runtime's call it creates no CUDA context, so a
// CPU-only caller costs no GPU memory); Host otherwise.
// Unknown: CUDA failed to answer (the caller must not touch the buffer).
enum class MemKind : uint8_t { Host, PinnedHost, Managed, Device, Unknown };
struct BufferKind {
  MemKind kind = MemKind::Host;
  int device = -1;  // Device, Managed: the device it belongs to
};
BufferKind classify(const void* ptr);
const char* memKindName(MemKind kind);
// Host memory the CPU may read directly (pageable or pinned); Device and
// Managed are staged through pinned memory.
inline bool hostReadable(MemKind kind) { return kind == MemKind::Host || kind == MemKind::PinnedHost; }

// Whether [ptr, ptr + bytes) is mapped in this process (mincore on its first
// and last pages): how a device pointer passed where no GPU is usable gets
// an error instead of a crash.
bool mapped(const void* ptr, size_t bytes);

// Checks that `stream` can carry stream-ordered work: CUDA usable, the
// stream valid, not being captured into a CUDA graph (refused with a clear
// error). `argName` names the argument in messages.
Status checkStream(void* stream, const char* argName);

// The legacy default stream (NCCL's meaning of stream 0 for GPU buffers);
// null without CUDA.
void* legacyStream();

// A lane on a CUDA stream (cudaStream_t as void*). Its flags must come from
// allocPinned: the stream reads and writes them by address. Its host buffers
// should too: CUDA may hold the calling thread until the stream's earlier
// work is done before a copy to or from pageable memory, which never happens
// if that work waits on a flag the same thread would raise. Null in a build
// without CUDA.
std::unique_ptr<StreamLane> cudaLane(void* stream);

// Pinned host memory, mapped into the device's address space: staging slots
// and the flags streams signal and wait on. CUDA unusable: fails.
Status allocPinned(size_t bytes, void** out);
void freePinned(void* ptr);

// The calling thread's current CUDA device (cudaGetDevice: the rank's GPU,
// as NCCL takes it at init); -1 when CUDA is not usable. Creates no context.
int currentDevice();

// Makes `device` the calling thread's current CUDA device for the scope's
// life, then puts back the context the thread had: kernels launch only on
// streams of the current device, and a channel may be driven by a user's
// thread (in strata_wait) whose current device is the user's business. A
// thread that had no context keeps `device`'s: restoring "device 0", what
// CUDA reports there, would create GPU 0's context. No-op for -1.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  void* previous_ = nullptr;  // the CUcontext to put back, if any
};

// Device memory for ncclMemAlloc / strata_mem_alloc, on the current device.
Status allocDevice(size_t bytes, void** out);
// Frees it; an IPC handle exported for it names nothing from then on.
Status freeDevice(void* ptr);

// --- Memory shared between the processes of one host (transports/cuda) ---

// A CUDA IPC handle (cudaIpcMemHandle_t): device memory that another process
// of this host maps by value.
struct IpcHandle {
  unsigned char bytes[64];
};
// The handle of memory from allocDevice (the start of an allocation).
Status ipcExport(void* devicePtr, IpcHandle* out);
// Maps a peer's device memory, enabling peer access on the way. Fails where
// the two devices cannot reach each other, IPC is not permitted (a container
// without it), or the exporting process is gone; the error has CUDA's words.
// A handle this process exported (a peer that is a thread of it) opens to
// the exported pointer itself: CUDA refuses to open those.
Status ipcOpen(const IpcHandle& handle, void** out);
// Undoes one ipcOpen (for this process's own handles, only the count).
void ipcClose(void* ptr);

// Pins host memory (a shared segment) and maps it for the device at its own
// address, so that streams can signal and wait on flags in it (StreamLane).
// Fails where the device cannot use host pointers to registered memory.
Status registerHost(void* ptr, size_t bytes);
void unregisterHost(void* ptr);

// dst <- src on `stream` (cudaMemcpyAsync, any kinds of memory): the device
// path's copies, enqueued without a lane object per call.
Status copyAsync(void* dst, const void* src, size_t bytes, void* stream);

// A stream of strata's own, which does not wait for the legacy default stream.
Status createStream(void** out);
void destroyStream(void* stream);
// Waits until everything on `stream` has run (setup and tests only).
Status synchronize(void* stream);
// Waits at most `seconds` for everything on `stream` to run (teardown: a
// stream may wait on a flag nobody will raise). STRATA_ERR_TIMEOUT if it
// has not, the stream's error if it failed.
Status finishWithin(void* stream, double seconds);
// The error that work already on `stream` ran into (a fault in a copy or
// kernel), if any; ok while it runs or after it succeeded. Does not wait.
Status streamError(void* stream);

}  // namespace strata::gpu
