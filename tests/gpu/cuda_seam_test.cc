// The CUDA seam (src/gpu). Where no GPU is usable (no driver: every runtime
// call answers 35; or a build without CUDA) every buffer is host memory and
// whatever needs a GPU fails with CUDA's reason: the first tests check that.
// The CudaSeamGpu tests need a GPU and skip with that reason elsewhere.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <thread>
#include <vector>

#if STRATA_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "stream_wait.h"
#endif

#include "cuda_seam.h"
#include "hardware_queues.h"

namespace strata::gpu {
namespace {

constexpr auto npos = std::string::npos;

TEST(CudaSeam, RuntimeSaysWhyNoGpuIsUsable) {
  const RuntimeInfo& rt = runtime();
  if (rt.usable) GTEST_SKIP() << "a GPU is usable here (" << rt.devices.size() << " devices)";
  EXPECT_TRUE(rt.devices.empty());
  EXPECT_FALSE(rt.streamMemOps);
#if STRATA_HAVE_CUDA
  EXPECT_TRUE(rt.built);
  EXPECT_GT(rt.runtimeVersion, 0);
  EXPECT_NE(rt.why.find("cudaError"), npos) << rt.why;  // here: cudaErrorInsufficientDriver (35): ...
#else
  EXPECT_FALSE(rt.built);
  EXPECT_NE(rt.why.find("built without CUDA"), npos) << rt.why;
#endif
}

// CUDA_DEVICE_MAX_CONNECTIONS as the queues it gives: a whole number from
// 1, capped at 32; anything else, or nothing, CUDA's default of 8.
TEST(HardwareQueues, ReadsCudaDeviceMaxConnections) {
  EXPECT_EQ(hardwareQueues(nullptr), 8);
  EXPECT_EQ(hardwareQueues(""), 8);
  EXPECT_EQ(hardwareQueues("1"), 1);
  EXPECT_EQ(hardwareQueues("16"), 16);
  EXPECT_EQ(hardwareQueues("32"), 32);
  EXPECT_EQ(hardwareQueues("33"), 32);
  EXPECT_EQ(hardwareQueues("0"), 8);
  EXPECT_EQ(hardwareQueues("-2"), 8);
  EXPECT_EQ(hardwareQueues("4x"), 8);
  EXPECT_EQ(hardwareQueues("99999999999999999999"), 8);
  const char* before = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  const std::string saved = before ? before : "";
  setenv("CUDA_DEVICE_MAX_CONNECTIONS", "2", 1);
  EXPECT_EQ(hardwareQueues(), 2);
  unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
  EXPECT_EQ(hardwareQueues(), 8);
  if (before) setenv("CUDA_DEVICE_MAX_CONNECTIONS", saved.c_str(), 1);
}

// Pageable memory is Host on a GPU machine too: CUDA knows nothing of it.
TEST(CudaSeam, MallocMemoryIsHost) {
  std::vector<char> buf(4096);
  BufferKind kind = classify(buf.data());
  EXPECT_EQ(kind.kind, MemKind::Host);
  EXPECT_EQ(kind.device, -1);
  EXPECT_TRUE(hostReadable(kind.kind));
  EXPECT_STREQ(memKindName(kind.kind), "host");
  EXPECT_STREQ(memKindName(MemKind::Device), "device");
}

TEST(CudaSeam, StreamRefusedWithoutGpu) {
  if (runtime().usable) GTEST_SKIP() << "a GPU is usable here";
  int notAStream = 0;
  Status s = checkStream(&notAStream, "options->stream");
  EXPECT_EQ(s.code(), STRATA_ERR_CUDA);
  EXPECT_NE(s.message().find("options->stream=0x"), npos) << s.message();
  EXPECT_NE(s.message().find(runtime().why), npos) << s.message();
}

TEST(CudaSeam, AllocationsFailCleanlyWithoutGpu) {
  if (runtime().usable) GTEST_SKIP() << "a GPU is usable here";
  void* const untouched = reinterpret_cast<void*>(0x1);
  void* ptr = untouched;
  Status s = allocPinned(4096, &ptr);
  EXPECT_EQ(s.code(), STRATA_ERR_CUDA);
  EXPECT_NE(s.message().find(runtime().why), npos) << s.message();
  EXPECT_EQ(ptr, untouched);
  s = allocDevice(4096, &ptr);
  EXPECT_EQ(s.code(), STRATA_ERR_CUDA);
  EXPECT_NE(s.message().find(runtime().why), npos) << s.message();
  EXPECT_EQ(ptr, untouched);
  EXPECT_TRUE(freeDevice(nullptr).isOk());
  freePinned(nullptr);
}

// Without a GPU a lane either does not exist (no CUDA built in) or fails
// each command with the CUDA call and its error, enqueuing nothing.
TEST(CudaSeam, LaneFailsCleanlyWithoutGpu) {
  if (runtime().usable) GTEST_SKIP() << "a GPU is usable here";
  std::unique_ptr<StreamLane> lane = cudaLane(nullptr);
#if STRATA_HAVE_CUDA
  ASSERT_NE(lane, nullptr);
  EXPECT_STREQ(lane->name(), "CUDA stream 0x0");
  char src[16] = {}, dst[16];
  Status s = lane->copy(dst, src, sizeof(src));
  EXPECT_EQ(s.code(), STRATA_ERR_CUDA);
  EXPECT_NE(s.message().find("cudaMemcpyAsync"), npos) << s.message();
  Flag flag{0};
  s = lane->signal(&flag, 1);
  EXPECT_EQ(s.code(), STRATA_ERR_CUDA);
  EXPECT_NE(s.message().find("cudaError"), npos) << s.message();
  s = lane->wait(&flag, 1);
  EXPECT_EQ(s.code(), STRATA_ERR_CUDA);
  EXPECT_NE(s.message().find("cudaError"), npos) << s.message();
  EXPECT_EQ(flag.load(), 0u);
#else
  EXPECT_EQ(lane, nullptr);
#endif
}

TEST(Mapped, MappedAndUnmappedPages) {
  std::vector<char> heap(1 << 20);
  EXPECT_TRUE(mapped(heap.data(), heap.size()));
  EXPECT_TRUE(mapped(heap.data() + 5, 1));
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* pages = static_cast<char*>(mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(pages, MAP_FAILED);
  ASSERT_EQ(munmap(pages + page, page), 0);
  EXPECT_TRUE(mapped(pages, page));
  EXPECT_FALSE(mapped(pages, page + 1)) << "the last byte's page is not mapped";
  EXPECT_FALSE(mapped(pages + page, 8));
  ASSERT_EQ(munmap(pages, page), 0);
  EXPECT_FALSE(mapped(pages, 1));
  EXPECT_FALSE(mapped(nullptr, 8));
  EXPECT_TRUE(mapped(nullptr, 0)) << "an empty range reads nothing";
}

#if STRATA_HAVE_CUDA

TEST(CudaSeamGpu, RuntimeDescribesDevices) {
  if (!runtime().usable) GTEST_SKIP() << runtime().why;
  const RuntimeInfo& rt = runtime();
  EXPECT_TRUE(rt.built);
  EXPECT_GT(rt.driverVersion, 0);
  ASSERT_FALSE(rt.devices.empty());
  for (const DeviceInfo& d : rt.devices) {
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.major, 8) << d.name << ": strata's kernels are built for sm_80 and sm_90";
    EXPECT_NE(d.pciBusId.find(':'), npos) << d.pciBusId;  // "0000:3b:00.0"
    EXPECT_GT(d.memoryBytes, 0u);
  }
}

TEST(CudaSeamGpu, ClassifiesCudaMemory) {
  if (!runtime().usable) GTEST_SKIP() << runtime().why;
  int current = -1;
  ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
  void* device = nullptr;
  ASSERT_TRUE(allocDevice(1 << 20, &device).isOk());
  BufferKind kind = classify(device);
  EXPECT_EQ(kind.kind, MemKind::Device);
  EXPECT_EQ(kind.device, current);
  EXPECT_FALSE(hostReadable(kind.kind));
  void* pinned = nullptr;
  ASSERT_TRUE(allocPinned(4096, &pinned).isOk());
  EXPECT_EQ(classify(pinned).kind, MemKind::PinnedHost);
  EXPECT_TRUE(hostReadable(MemKind::PinnedHost));
  void* managed = nullptr;
  ASSERT_EQ(cudaMallocManaged(&managed, 4096), cudaSuccess);
  EXPECT_EQ(classify(managed).kind, MemKind::Managed);
  EXPECT_EQ(cudaFree(managed), cudaSuccess);
  freePinned(pinned);
  EXPECT_TRUE(freeDevice(device).isOk());
}

TEST(CudaSeamGpu, StreamChecks) {
  if (!runtime().usable) GTEST_SKIP() << runtime().why;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_TRUE(checkStream(stream, "options->stream").isOk());
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  Status captured = checkStream(stream, "options->stream");
  cudaGraph_t graph;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  EXPECT_EQ(captured.code(), STRATA_ERR_INVALID_USAGE);
  EXPECT_NE(captured.message().find("CUDA graph"), npos) << captured.message();
  EXPECT_NE(captured.message().find("options->stream="), npos) << captured.message();
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// Spins until *flag reaches value or 10 s pass; a stream that never signals
// fails the test instead of hanging it.
bool awaitFlag(const Flag& flag, uint32_t value) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (flag.load(std::memory_order_acquire) < value) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

// What the staging code relies on: the stream does nothing past a wait until
// the host raises the flag, and once the host sees the stream's signal every
// copy enqueued before it has landed. Host buffers are pinned, as staging's
// are (a copy from pageable memory may block the host on the stream).
TEST(CudaSeamGpu, LaneCopiesAndOrdersOnFlags) {
  if (!runtime().usable) GTEST_SKIP() << runtime().why;
  constexpr size_t kBytes = 1 << 20;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  std::unique_ptr<StreamLane> lane = cudaLane(stream);
  ASSERT_NE(lane, nullptr);
  EXPECT_EQ(std::string(lane->name()).rfind("CUDA stream 0x", 0), 0u) << lane->name();
  void *in, *out, *device, *flags;
  ASSERT_TRUE(allocPinned(kBytes, &in).isOk());
  ASSERT_TRUE(allocPinned(kBytes, &out).isOk());
  ASSERT_TRUE(allocDevice(kBytes, &device).isOk());
  ASSERT_TRUE(allocPinned(2 * sizeof(Flag), &flags).isOk());
  for (size_t i = 0; i < kBytes; ++i) static_cast<unsigned char*>(in)[i] = static_cast<unsigned char>(i * 7 + 3);
  std::memset(out, 0, kBytes);
  Flag* go = new (flags) Flag(0);
  Flag* done = new (static_cast<Flag*>(flags) + 1) Flag(0);

  ASSERT_TRUE(lane->wait(go, 1).isOk());
  ASSERT_TRUE(lane->copy(device, in, kBytes).isOk());
  ASSERT_TRUE(lane->copy(out, device, kBytes).isOk());
  ASSERT_TRUE(lane->signal(done, 1).isOk());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(done->load(), 0u) << "the stream ran past its wait before the host raised the flag";
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady);
  go->store(1, std::memory_order_release);
  EXPECT_TRUE(awaitFlag(*done, 1)) << "no signal from " << lane->name() << " within 10 s";
  EXPECT_EQ(std::memcmp(in, out, kBytes), 0) << "the copies had not landed when the signal arrived";
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(std::memcmp(in, out, kBytes), 0);

  freePinned(flags);
  EXPECT_TRUE(freeDevice(device).isOk());
  freePinned(out);
  freePinned(in);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

// The polling kernel, which lanes use where the driver has no stream memory
// operations (so it would go untested on a GPU that has them).
TEST(CudaSeamGpu, FallbackWaitKernelWaitsForTheHost) {
  if (!runtime().usable) GTEST_SKIP() << runtime().why;
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  void* flags;
  ASSERT_TRUE(allocPinned(sizeof(Flag), &flags).isOk());
  Flag* go = new (flags) Flag(5);
  ASSERT_EQ(launchStreamWait(stream, reinterpret_cast<const uint32_t*>(go), 7), cudaSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady) << "the kernel returned before the flag reached 7";
  go->store(8, std::memory_order_release);  // past the value, as GEQ allows
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  freePinned(flags);
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

#endif  // STRATA_HAVE_CUDA

}  // namespace
}  // namespace strata::gpu
