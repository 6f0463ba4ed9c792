// The staging state machine (src/streams/staging.h) on host memory: a host
// lane stands for the CUDA stream, plain memory marked "staged" for device
// buffers. Each test plays the host collective's part by hand: it reads the
// staged input through the gate, writes the staged output, and completes
// (or fails) the request.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <thread>
#include <vector>

#include "clock.h"
#include "host_lane.h"
#include "staging.h"

namespace strata::streams {
namespace {

using test::HostLane;

constexpr size_t kChunk = 4096;

Stager makeStager(size_t cache = 1 << 20) { return Stager({&test::hostAlloc, &test::hostFree}, kChunk, cache); }

// What Comm does for a call: lay it out, then put all its stream work on the lane.
Status stage(Stager& stager, HostLane& lane, const std::vector<PartSpec>& parts, const PreMul& premul,
             StagedOp** op) {
  STRATA_CHECK(stager.reserve(parts, premul, op));
  return stager.enqueue(lane, *op);
}

std::vector<float> ramp(size_t n, float base) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = base + static_cast<float>(i);
  return v;
}

bool eventually(const std::function<bool()>& cond) {
  for (int i = 0; i < 20000; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return false;
}

TEST(Staging, InputLandsChunkByChunkOnlyOnceTheStreamGetsThere) {
  Stager stager = makeStager();
  HostLane lane;
  lane.hold();  // the stream is busy with earlier work
  const size_t n = 3 * kChunk / sizeof(float) + 100;  // three chunks and a bit
  std::vector<float> in = ramp(n, 1), out(n, -1);
  PartSpec part{{in.data(), n * sizeof(float), true}, {out.data(), n * sizeof(float), true}};
  StagedOp* op = nullptr;
  ASSERT_TRUE(stage(stager, lane, {part}, {}, &op).isOk());
  StagedPart& gate = op->parts[0];
  EXPECT_NE(gate.hostInput(), static_cast<const char*>(static_cast<void*>(in.data())));
  op->request.start(1);

  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(gate.ready(0)) << "nothing may run before the stream reaches the operation";
  EXPECT_NE(gate.describeWait().find("has not reached"), std::string::npos) << gate.describeWait();

  lane.go();
  ASSERT_TRUE(eventually([&] { return gate.ready(n * sizeof(float)); }));
  EXPECT_EQ(0, std::memcmp(gate.hostInput(), in.data(), n * sizeof(float)));
  // The host collective: output = 2 * input, then done.
  const auto* hin = reinterpret_cast<const float*>(gate.hostInput());
  auto* hout = reinterpret_cast<float*>(gate.hostOutput());
  for (size_t i = 0; i < n; ++i) hout[i] = 2 * hin[i];
  EXPECT_EQ(out[0], -1) << "the output is copied back only once the collective ended";
  op->request.channelDone();
  lane.sync();
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2 * in[i]) << i;
  EXPECT_TRUE(op->finished());
  stager.reap();
  EXPECT_EQ(stager.inFlight(), 0u);
  EXPECT_GT(stager.cachedBytes(), 0u) << "the block is kept for the next call";
}

TEST(Staging, GateOpensPerChunk) {
  Stager stager = makeStager();
  HostLane lane;
  const size_t bytes = 4 * kChunk;
  std::vector<char> in(bytes, 7), out(bytes, 0);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stage(stager, lane, {{{in.data(), bytes, true}, {out.data(), bytes, true}}}, {}, &op).isOk());
  StagedPart& gate = op->parts[0];
  ASSERT_TRUE(eventually([&] { return gate.ready(bytes); }));
  EXPECT_TRUE(gate.ready(kChunk));
  EXPECT_TRUE(gate.ready(0));
  op->request.start(1);
  op->request.channelDone();
  lane.sync();
  EXPECT_TRUE(op->finished());
}

TEST(Staging, AFailedCollectiveStillReleasesTheStream) {
  Stager stager = makeStager();
  HostLane lane;
  std::vector<int32_t> in(1000, 3), out(1000, 5);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stage(stager, lane, {{{in.data(), 4000, true}, {out.data(), 4000, true}}}, {}, &op).isOk());
  op->request.start(2);  // two channels
  op->request.channelFailed(STRATA_ERROR(STRATA_ERR_REMOTE, "peer died"));
  EXPECT_FALSE(op->finished()) << "one channel is still running";
  op->request.channelDone();
  lane.sync();
  EXPECT_TRUE(op->finished()) << "a dead peer must not keep the GPU waiting";
  EXPECT_EQ(op->request.status().code(), STRATA_ERR_REMOTE);
}

// A device operation (the cuda transport's): nothing staged; the caller's
// stream signals that it reached the call, then waits for the host's end
// and for each channel stream's `done` before it signals `finished`.
TEST(Staging, ADeviceOperationWaitsForEveryChannelsDone) {
  Stager stager = makeStager();
  HostLane lane;
  std::vector<int32_t> in(1000, 3), out(1000, 5);
  StagedOp* op = nullptr;
  const PartSpec part{{in.data(), 4000, false}, {out.data(), 4000, false}};
  ASSERT_TRUE(stager.reserve({part}, {}, &op, 2).isOk());
  ASSERT_TRUE(stager.enqueue(lane, op).isOk());
  EXPECT_EQ(op->parts[0].hostInput(), static_cast<const char*>(static_cast<void*>(in.data())))
      << "device buffers are used where they are";
  EXPECT_TRUE(eventually([&] { return op->parts[0].landedFlag()->load() >= 1; }))
      << "the channels' streams start once the caller's stream reaches the call";
  op->request.start(2);
  op->request.channelDone();
  op->request.channelDone();  // the host has enqueued everything
  op->deviceDone(0)->store(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(op->finished()) << "channel 1's stream has not finished its copies";
  op->deviceDone(1)->store(1);
  EXPECT_TRUE(eventually([&] { return op->finished(); }));
  EXPECT_EQ(out[0], 5) << "nothing is copied back: the channels wrote the output in place";
}

TEST(Staging, AFailedDeviceOperationReleasesTheCallersStreamWithoutItsChannels) {
  Stager stager = makeStager();
  HostLane lane;
  lane.hold();  // the caller's stream has not reached the call yet
  std::vector<int32_t> buf(1000, 3);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stager.reserve({{{buf.data(), 4000, false}, {buf.data(), 4000, false}}}, {}, &op, 3).isOk());
  ASSERT_TRUE(stager.enqueue(lane, op).isOk());
  op->request.start(3);
  op->request.channelFailed(STRATA_ERROR(STRATA_ERR_REMOTE, "peer died"));
  op->request.channelDone();
  op->request.channelDone();
  // The host stands in for every channel stream that may never signal, and
  // lets those still waiting for the caller's stream go.
  for (int ch = 0; ch < 3; ++ch) EXPECT_EQ(op->deviceDone(ch)->load(), 1u) << ch;
  EXPECT_GE(op->parts[0].landedFlag()->load(), 1u);
  lane.go();
  EXPECT_TRUE(eventually([&] { return op->finished(); })) << "a dead peer must not keep the GPU waiting";
}

TEST(Staging, ACallThatCannotBeQueuedIsCancelledBeforeTheStreamSeesIt) {
  Stager stager = makeStager();
  HostLane lane;
  std::vector<int32_t> in(1000, 3), out(1000, 5);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stager.reserve({{{in.data(), 4000, true}, {out.data(), 4000, true}}}, {}, &op).isOk());
  stager.cancel(op);
  lane.sync();
  EXPECT_EQ(out, std::vector<int32_t>(1000, 5));
  EXPECT_EQ(stager.inFlight(), 0u);
  EXPECT_GT(stager.cachedBytes(), 0u);
}

TEST(Staging, ABrokenStreamFailsTheCallAndTheBlockWaitsForIt) {
  Stager stager = makeStager();
  HostLane lane;
  lane.failCopy(2);
  std::vector<char> in(3 * kChunk, 1), out(3 * kChunk, 0);
  StagedOp* op = nullptr;
  Status s = stage(stager, lane, {{{in.data(), in.size(), true}, {out.data(), out.size(), true}}}, {}, &op);
  EXPECT_EQ(s.code(), STRATA_ERR_CUDA);
  lane.sync();  // the stream got past its wait: the failed call released it
  stager.reap();
  EXPECT_EQ(stager.inFlight(), 0u) << "the stream said it was done with the block";
  // A stream that refuses the very first command holds nothing: the block
  // goes back at once.
  lane.failCopy(1);
  s = stage(stager, lane, {{{in.data(), in.size(), true}, {out.data(), out.size(), true}}}, {}, &op);
  EXPECT_EQ(s.code(), STRATA_ERR_CUDA);
  EXPECT_EQ(stager.inFlight(), 0u);
}

// Whether p lies in the caller's buffer: a staged ("device") buffer is
// never touched by the host, only by the stream's copies.
bool inCaller(const void* p, const std::vector<float>& buf) {
  auto* c = reinterpret_cast<const char*>(p);
  auto* b = reinterpret_cast<const char*>(buf.data());
  return c >= b && c < b + buf.size() * sizeof(float);
}

TEST(Staging, InPlaceBuffersShareOneStagingArea) {
  Stager stager = makeStager();
  HostLane lane;
  // allgather in place: the input is block 2 of the output.
  std::vector<float> buf(4 * 256);
  std::iota(buf.begin(), buf.end(), 0.f);
  const size_t block = 256 * sizeof(float);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stage(stager, lane, {{{buf.data() + 512, block, true}, {buf.data(), 4 * block, true}}}, {}, &op).isOk());
  EXPECT_FALSE(inCaller(op->parts[0].hostOutput(), buf)) << "the output is staged, not the caller's memory";
  EXPECT_EQ(op->parts[0].hostInput(), op->parts[0].hostOutput() + 2 * block);
  ASSERT_TRUE(eventually([&] { return op->parts[0].ready(block); }));
  EXPECT_EQ(0, std::memcmp(op->parts[0].hostInput(), buf.data() + 512, block));
  op->request.start(1);
  op->request.channelDone();
  lane.sync();
  // reduce_scatter in place: the output is block 1 of the input.
  StagedOp* rs = nullptr;
  ASSERT_TRUE(stage(stager, lane, {{{buf.data(), 4 * block, true}, {buf.data() + 256, block, true}}}, {}, &rs).isOk());
  EXPECT_FALSE(inCaller(rs->parts[0].hostInput(), buf)) << "the input is staged, not the caller's memory";
  EXPECT_EQ(rs->parts[0].hostOutput(), rs->parts[0].hostInput() + block);
  rs->request.start(1);
  rs->request.channelDone();
  lane.sync();
}

// An allreduce in place (sendbuf == recvbuf), pre-multiplied as PyTorch's
// average is: one staging area, the input copied in and scaled there, the
// result copied back over the caller's buffer.
TEST(Staging, AnAllreduceInPlaceIsStagedAndCopiedBack) {
  Stager stager = makeStager();
  HostLane lane;
  std::vector<float> buf = ramp(3000, 1.f);  // three chunks
  const std::vector<float> before = buf;
  const size_t bytes = buf.size() * sizeof(float);
  PreMul half;
  half.set = true;
  half.datatype = STRATA_FLOAT32;
  const float scalar = 0.5f;
  std::memcpy(half.value, &scalar, sizeof(scalar));
  StagedOp* op = nullptr;
  ASSERT_TRUE(stage(stager, lane, {{{buf.data(), bytes, true}, {buf.data(), bytes, true}}}, half, &op).isOk());
  StagedPart& part = op->parts[0];
  EXPECT_FALSE(inCaller(part.hostInput(), buf));
  EXPECT_EQ(part.hostInput(), part.hostOutput());
  ASSERT_TRUE(eventually([&] { return part.ready(bytes); }));
  const auto* in = reinterpret_cast<const float*>(part.hostInput());
  for (size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(in[i], before[i] * 0.5f) << i;
  EXPECT_EQ(buf, before) << "the caller's buffer is untouched until the stream copies the result back";
  auto* out = reinterpret_cast<float*>(part.hostOutput());
  for (size_t i = 0; i < buf.size(); ++i) out[i] = in[i] + 1.f;  // the host collective's result
  op->request.start(1);
  op->request.channelDone();
  lane.sync();
  ASSERT_TRUE(eventually([&] { return op->finished(); }));
  for (size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf[i], before[i] * 0.5f + 1.f) << i;
}

TEST(Staging, HostBuffersAreUsedWhereTheyAre) {
  Stager stager = makeStager();
  HostLane lane;
  lane.hold();
  std::vector<double> in(100, 1.5), out(100, 0);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stage(stager, lane, {{{in.data(), 800, false}, {out.data(), 800, false}}}, {}, &op).isOk());
  EXPECT_EQ(op->parts[0].hostInput(), reinterpret_cast<const char*>(in.data()));
  EXPECT_EQ(op->parts[0].hostOutput(), reinterpret_cast<char*>(out.data()));
  EXPECT_FALSE(op->parts[0].ready(0)) << "host buffers too wait for the stream's earlier work";
  lane.go();
  ASSERT_TRUE(eventually([&] { return op->parts[0].ready(800); }));
  op->request.start(1);
  op->request.channelDone();
  lane.sync();
  EXPECT_TRUE(op->finished());
}

// The pre-multiplied sum's scaling: each landed chunk scaled exactly once,
// whichever of several drivers asks first.
template <typename T>
void checkPremul(strata_datatype_t dt, T scalar, bool scalarOnDevice, bool inputOnDevice, const std::vector<T>& in,
                 const std::function<double(T)>& widen, double tolerance) {
  Stager stager = makeStager();
  HostLane lane;
  std::vector<T> out(in.size());
  StagedOp* op = nullptr;
  PreMul premul;
  premul.set = true;
  premul.datatype = dt;
  if (scalarOnDevice) premul.onDevice = &scalar;
  else std::memcpy(premul.value, &scalar, sizeof(T));
  const size_t bytes = in.size() * sizeof(T);
  ASSERT_TRUE(stage(stager, lane, {{{in.data(), bytes, inputOnDevice}, {out.data(), bytes, true}}}, premul, &op).isOk());
  StagedPart& gate = op->parts[0];
  EXPECT_NE(gate.hostInput(), reinterpret_cast<const char*>(in.data())) << "the caller's input is never scaled in place";
  std::vector<std::thread> drivers;
  for (int t = 0; t < 3; ++t)
    drivers.emplace_back([&] { eventually([&] { return gate.ready(bytes); }); });
  for (auto& d : drivers) d.join();
  ASSERT_TRUE(gate.ready(bytes));
  const T* scaled = reinterpret_cast<const T*>(gate.hostInput());
  for (size_t i = 0; i < in.size(); ++i)
    ASSERT_NEAR(widen(scaled[i]), widen(in[i]) * widen(scalar), tolerance * std::fabs(widen(in[i]) * widen(scalar)) + 1e-30)
        << "element " << i;
  op->request.start(1);
  op->request.channelDone();
  lane.sync();
}

TEST(Staging, PreMultipliesEveryLandedChunkOnce) {
  const size_t n = 5 * kChunk / sizeof(float) + 3;
  checkPremul<float>(STRATA_FLOAT32, 0.25f, true, true, ramp(n, -100), [](float v) { return double(v); }, 0);
  // A host input is scaled into pinned memory by the host, not copied by the stream.
  checkPremul<float>(STRATA_FLOAT32, -2.f, false, false, ramp(n, 3), [](float v) { return double(v); }, 0);
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = 1.0 / (1 + i);
  checkPremul<double>(STRATA_FLOAT64, 3.0, false, true, d, [](double v) { return v; }, 1e-15);
  std::vector<int32_t> ints(n);
  std::iota(ints.begin(), ints.end(), -7);
  checkPremul<int32_t>(STRATA_INT32, -3, true, false, ints, [](int32_t v) { return double(v); }, 0);
}

TEST(Staging, CacheKeepsTheLastBlockAndOthersUpToItsLimit) {
  Stager stager = makeStager(/*cache=*/3 * kChunk);
  HostLane lane;
  auto runOne = [&](std::vector<char>& in, std::vector<char>& out) {
    StagedOp* op = nullptr;
    ASSERT_TRUE(stage(stager, lane, {{{in.data(), in.size(), true}, {out.data(), out.size(), true}}}, {}, &op).isOk());
    op->request.start(1);
    op->request.channelDone();
    lane.sync();
    stager.reap();
  };
  std::vector<char> big(16 * kChunk, 1), bigOut(16 * kChunk), small(kChunk, 2), smallOut(kChunk);
  runOne(big, bigOut);
  const size_t kept = stager.cachedBytes();
  EXPECT_GE(kept, 32 * kChunk) << "the block just used stays, however large: the next step needs it again";
  runOne(big, bigOut);
  EXPECT_EQ(stager.cachedBytes(), kept) << "the same size again reuses it";
  // Two in flight at once take two blocks; once both are back, the older
  // one goes: the cache is over its limit.
  StagedOp *a = nullptr, *b = nullptr;
  ASSERT_TRUE(stage(stager, lane, {{{big.data(), big.size(), true}, {bigOut.data(), bigOut.size(), true}}}, {}, &a).isOk());
  ASSERT_TRUE(stage(stager, lane, {{{small.data(), small.size(), true}, {smallOut.data(), small.size(), true}}}, {}, &b).isOk());
  for (StagedOp* op : {a, b}) {
    op->request.start(1);
    op->request.channelDone();
  }
  lane.sync();
  stager.reap();
  EXPECT_LE(stager.cachedBytes(), 3 * kChunk) << "other blocks go once the cache is over its limit";
}

// Freeing pinned memory may wait for the GPU, and a device operation's
// caller's stream waits for CUDA calls of the thread driving it: while one
// is in flight the cache grows past its limit instead, and is trimmed at the
// first return after (up to twice its limit: 192 KiB here).
TEST(Staging, NothingIsFreedWhileADeviceOperationIsInFlight) {
  const size_t limit = 24 * kChunk;
  Stager stager = makeStager(limit);
  HostLane deviceLane, lane;  // the device operation's stream waits; the others' move
  std::vector<char> big(16 * kChunk, 1), bigOut(16 * kChunk), small(kChunk, 2), smallOut(kChunk);
  auto staged = [&](std::vector<char>& in, std::vector<char>& out) {
    StagedOp* op = nullptr;
    EXPECT_TRUE(stage(stager, lane, {{{in.data(), in.size(), true}, {out.data(), out.size(), true}}}, {}, &op).isOk());
    return op;
  };
  std::vector<int32_t> dev(1000, 3);
  StagedOp* device = nullptr;
  ASSERT_TRUE(stager.reserve({{{dev.data(), 4000, false}, {dev.data(), 4000, false}}}, {}, &device, 1).isOk());
  ASSERT_TRUE(stager.enqueue(deviceLane, device).isOk());
  device->request.start(1);
  device->request.channelDone();  // the host is done; the channel's stream is not
  StagedOp* a = staged(big, bigOut);
  StagedOp* b = staged(small, smallOut);
  for (StagedOp* op : {a, b}) {
    op->request.start(1);
    op->request.channelDone();
  }
  ASSERT_TRUE(eventually([&] { return a->finished() && b->finished(); }));
  stager.reap();
  const size_t held = stager.cachedBytes();
  EXPECT_GT(held, limit) << "pinned memory was freed while a device operation's streams were waiting";
  device->deviceDone(0)->store(1);
  ASSERT_TRUE(eventually([&] { return device->finished(); }));
  StagedOp* c = staged(small, smallOut);
  c->request.start(1);
  c->request.channelDone();
  lane.sync();
  stager.reap();
  EXPECT_LT(stager.cachedBytes(), held) << "the cache is trimmed once no device operation is in flight";
}

// What StuckWatch does when a thread driving a device operation is stuck in
// CUDA: the caller's stream goes on at once, and the operation is never
// freed, since that thread still holds its request.
TEST(Staging, AnAbandonedOperationLetsItsStreamGoAndIsNeverFreed) {
  // Kept for the process's life: an abandoned stager leaks its operations
  // by design, which LeakSanitizer would otherwise report.
  static Stager& stager = *new Stager(makeStager());
  HostLane lane;
  std::vector<int32_t> dev(1000, 3);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stager.reserve({{{dev.data(), 4000, false}, {dev.data(), 4000, false}}}, {}, &op, 2).isOk());
  ASSERT_TRUE(stager.enqueue(lane, op).isOk());
  op->request.start(2);  // the channels hold it, and never end it here
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(op->finished());
  std::thread watch([&] { stager.abandon(); });  // from another thread, as StuckWatch
  watch.join();
  EXPECT_TRUE(eventually([&] { return op->finished(); })) << "the caller's stream was not let go";
  stager.reap();
  EXPECT_EQ(stager.inFlight(), 1u) << "an abandoned operation was freed while its channels hold its request";
  EXPECT_FALSE(stager.drain(nowSeconds() + 0.05));
}

}  // namespace
}  // namespace strata::streams
