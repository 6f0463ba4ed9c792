// The GPU's reduction kernels against the host kernels, bit for bit, for
// every datatype and op, plus the average's division and the pre-multiplied
// scaling. Needs a GPU: elsewhere gpu_test_main.cc reports a skip with
// CUDA's reason (the same arithmetic is checked on the host by
// tests/kernels/element_ops_test.cc).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "cuda_seam.h"
#include "device_kernels.h"
#include "kernels.h"

namespace strata::kernels {
namespace {

constexpr size_t kCount = (1 << 20) + 3;  // several grids' worth, and a ragged end

class DeviceKernels : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), cudaSuccess);
    for (void** p : {&a_, &b_, &out_}) ASSERT_EQ(cudaMalloc(p, kCount * 8), cudaSuccess);
  }
  void TearDown() override {
    for (void* p : {a_, b_, out_}) cudaFree(p);
    if (stream_) cudaStreamDestroy(stream_);
  }
  // Random bit patterns: every NaN payload, subnormal and infinity turns up.
  std::vector<uint8_t> randomBytes(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> v(kCount * 8);
    for (auto& x : v) x = static_cast<uint8_t>(rng());
    return v;
  }
  void upload(void* dst, const std::vector<uint8_t>& src, size_t bytes) {
    ASSERT_EQ(cudaMemcpy(dst, src.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<uint8_t> download(size_t bytes, const void* from = nullptr) {
    std::vector<uint8_t> v(bytes);
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(v.data(), from ? from : out_, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return v;
  }

  cudaStream_t stream_ = nullptr;
  void *a_ = nullptr, *b_ = nullptr, *out_ = nullptr;
};

TEST_F(DeviceKernels, EveryDatatypeAndOpGivesTheHostKernelsBits) {
  for (int dt = 0; dt < STRATA_NUM_DATATYPES; ++dt) {
    const auto type = static_cast<strata_datatype_t>(dt);
    const size_t bytes = kCount * strata_datatype_size(type);
    const std::vector<uint8_t> a = randomBytes(dt), b = randomBytes(100 + dt);
    upload(a_, a, bytes);
    upload(b_, b, bytes);
    for (int op = 0; op < STRATA_NUM_OPS; ++op) {
      const auto o = static_cast<strata_op_t>(op);
      ASSERT_EQ(device::reduce(type, o, out_, a_, b_, kCount, stream_), 0);
      const std::vector<uint8_t> got = download(bytes);
      std::vector<uint8_t> want(bytes);
      kernel(type, o, Isa::Portable)(want.data(), a.data(), b.data(), kCount);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), bytes)) << "datatype " << dt << " op " << op;
    }
    ASSERT_EQ(device::scaleDown(type, out_, a_, kCount, 3, stream_), 0);
    std::vector<uint8_t> want(bytes);
    scaleDown(want.data(), a.data(), kCount, type, 3);
    ASSERT_EQ(0, std::memcmp(download(bytes).data(), want.data(), bytes)) << "datatype " << dt << " / 3";
    // The scalar is element 0 of b, read on the device.
    ASSERT_EQ(device::scaleBy(type, out_, a_, kCount, b_, stream_), 0);
    scaleBy(want.data(), a.data(), kCount, type, b.data());
    ASSERT_EQ(0, std::memcmp(download(bytes).data(), want.data(), bytes)) << "datatype " << dt << " * scalar";
  }
}

// A chunk of a buffer may start anywhere: where a pointer is not 16-byte
// aligned the kernels take single elements, where all are they take packs
// and then the ragged end (packed_items.h).
TEST_F(DeviceKernels, UnalignedChunksAndShortCountsGiveTheHostKernelsBits) {
  for (int dt = 0; dt < STRATA_NUM_DATATYPES; ++dt) {
    const auto type = static_cast<strata_datatype_t>(dt);
    const size_t elem = strata_datatype_size(type);
    const std::vector<uint8_t> a = randomBytes(200 + dt), b = randomBytes(300 + dt);
    upload(a_, a, kCount * elem);
    upload(b_, b, kCount * elem);
    for (size_t count : {1, 7, 8, 9, 15, 16, 17, 4099})
      for (int shift = 0; shift < 4; ++shift) {
        const size_t inAt = (shift & 1) * elem, outAt = ((shift >> 1) & 1) * elem;
        const void* in = static_cast<const char*>(a_) + inAt;
        void* out = static_cast<char*>(out_) + outAt;
        ASSERT_EQ(device::reduce(type, STRATA_SUM, out, in, b_, count, stream_), 0);
        std::vector<uint8_t> want(count * elem);
        kernel(type, STRATA_SUM, Isa::Portable)(want.data(), a.data() + inAt, b.data(), count);
        ASSERT_EQ(0, std::memcmp(download(count * elem, out).data(), want.data(), count * elem))
            << "datatype " << dt << " count " << count << " shift " << shift;
        ASSERT_EQ(device::scaleDown(type, out, in, count, 3, stream_), 0);
        scaleDown(want.data(), a.data() + inAt, count, type, 3);
        ASSERT_EQ(0, std::memcmp(download(count * elem, out).data(), want.data(), count * elem))
            << "datatype " << dt << " / 3, count " << count << " shift " << shift;
      }
  }
}

// The hazard preload() removes (device_kernels.h): in a process whose
// kernels have not run, one stream waits for a flag the host raises while a
// reduction is enqueued on another, as a stream-ordered call holds the
// caller's stream while the channel's stream reduces. Without the preload
// the launch may load its module by waiting for every stream, the waiting
// one too. Its own test in meson (device_kernels_parked), so that no earlier
// case has loaded the kernels; a launch stuck past 20 s fails it, and the
// flag is raised either way so the process can end. Until the launch has
// returned this thread calls no CUDA function: a thread loading a module
// holds the context's lock, and a query from here would wait behind it with
// the flag still down. STRATA_TEST_SKIP_PRELOAD=1 leaves the preload out, to
// learn on a GPU whether its driver has the hazard at all
// (scripts/gpu-triage.sh runs it so).
TEST_F(DeviceKernels, AReductionRunsWhileAnotherStreamWaitsForTheHost) {
  const bool preloaded = std::getenv("STRATA_TEST_SKIP_PRELOAD") == nullptr;
  if (preloaded) {
    ASSERT_EQ(device::preload(), 0);
  }
  const std::vector<float> a(kCount, 1.5f), b(kCount, -4.0f);
  ASSERT_EQ(cudaMemcpy(a_, a.data(), kCount * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(b_, b.data(), kCount * 4, cudaMemcpyHostToDevice), cudaSuccess);
  void* flagMemory = nullptr;
  ASSERT_TRUE(gpu::allocPinned(sizeof(gpu::Flag), &flagMemory).isOk());
  auto* flag = new (flagMemory) gpu::Flag(0);
  cudaStream_t parked = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&parked, cudaStreamNonBlocking), cudaSuccess);
  std::unique_ptr<gpu::StreamLane> lane = gpu::cudaLane(parked);
  ASSERT_TRUE(lane->wait(flag, 1).isOk());

  std::atomic<int> launched{-1};
  std::thread reducer([&] {
    launched = device::reduce(STRATA_FLOAT32, STRATA_SUM, out_, a_, b_, kCount, stream_);
  });
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool returned = false, finished = false;
  for (; !returned && std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(std::chrono::milliseconds(1)))
    returned = launched.load() != -1;
  for (; returned && !finished && std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(std::chrono::milliseconds(1)))
    finished = cudaStreamQuery(stream_) == cudaSuccess;
  flag->store(1);
  reducer.join();
  EXPECT_EQ(cudaStreamSynchronize(parked), cudaSuccess);
  cudaStreamDestroy(parked);
  gpu::freePinned(flagMemory);
  const char* how = preloaded ? "" : " (STRATA_TEST_SKIP_PRELOAD: the kernels were not preloaded)";
  ASSERT_TRUE(returned) << "the reduction's launch did not return within 20 s while another stream waited for the "
                           "host" << how;
  ASSERT_EQ(launched.load(), 0) << "launching the reduction failed" << how;
  ASSERT_TRUE(finished) << "the reduction did not finish within 20 s while another stream waited for the host" << how;
  const std::vector<uint8_t> out = download(kCount * 4);
  for (size_t i = 0; i < kCount; i += 4099) {
    float v;
    std::memcpy(&v, out.data() + i * 4, 4);
    ASSERT_EQ(v, -2.5f) << "element " << i;
  }
}

}  // namespace
}  // namespace strata::kernels
