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

#include "host_lane.h"
#include "staging.h"

namespace strata::streams {
namespace {

using test::HostLane;

constexpr size_t kChunk = 4096;

Stager makeStager(size_t cache = 1 << 20) { return Stager({&test::hostAlloc, &test::hostFree}, kChunk, cache); }

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
  ASSERT_TRUE(stager.stage(lane, {part}, {}, &op).isOk());
  StagedPart& gate = op->parts[0];
  EXPECT_NE(gate.hostInput(), static_cast<const char*>(static_cast<void*>(in.data())));
  op->request.start(1);
  ASSERT_TRUE(stager.finishStaging(lane, op, Status::ok()).isOk());

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
  ASSERT_TRUE(stager.stage(lane, {{{in.data(), bytes, true}, {out.data(), bytes, true}}}, {}, &op).isOk());
  StagedPart& gate = op->parts[0];
  ASSERT_TRUE(eventually([&] { return gate.ready(bytes); }));
  EXPECT_TRUE(gate.ready(kChunk));
  EXPECT_TRUE(gate.ready(0));
  op->request.start(1);
  ASSERT_TRUE(stager.finishStaging(lane, op, Status::ok()).isOk());
  op->request.channelDone();
  lane.sync();
  EXPECT_TRUE(op->finished());
}

TEST(Staging, AFailedCollectiveStillReleasesTheStream) {
  Stager stager = makeStager();
  HostLane lane;
  std::vector<int32_t> in(1000, 3), out(1000, 5);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stager.stage(lane, {{{in.data(), 4000, true}, {out.data(), 4000, true}}}, {}, &op).isOk());
  op->request.start(2);  // two channels
  ASSERT_TRUE(stager.finishStaging(lane, op, Status::ok()).isOk());
  op->request.channelFailed(STRATA_ERROR(STRATA_ERR_REMOTE, "peer died"));
  EXPECT_FALSE(op->finished()) << "one channel is still running";
  op->request.channelDone();
  lane.sync();
  EXPECT_TRUE(op->finished()) << "a dead peer must not keep the GPU waiting";
  EXPECT_EQ(op->request.status().code(), STRATA_ERR_REMOTE);
}

TEST(Staging, ASubmissionThatFailsReleasesTheStreamAndLeavesTheOutputAlone) {
  Stager stager = makeStager();
  HostLane lane;
  std::vector<int32_t> in(1000, 3), out(1000, 5);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stager.stage(lane, {{{in.data(), 4000, true}, {out.data(), 4000, true}}}, {}, &op).isOk());
  ASSERT_TRUE(stager.finishStaging(lane, op, STRATA_ERROR(STRATA_ERR_INVALID_USAGE, "refused")).isOk());
  lane.sync();
  EXPECT_TRUE(op->finished());
  EXPECT_EQ(out, std::vector<int32_t>(1000, 5));
  stager.reap();
  EXPECT_EQ(stager.inFlight(), 0u);
}

TEST(Staging, ABrokenStreamFailsTheCallAndTheBlockWaitsForIt) {
  Stager stager = makeStager();
  HostLane lane;
  lane.failCopy(2);
  std::vector<char> in(3 * kChunk, 1), out(3 * kChunk, 0);
  StagedOp* op = nullptr;
  Status s = stager.stage(lane, {{{in.data(), in.size(), true}, {out.data(), out.size(), true}}}, {}, &op);
  EXPECT_EQ(s.code(), STRATA_ERR_CUDA);
  lane.sync();
  stager.reap();
  EXPECT_EQ(stager.inFlight(), 0u) << "the stream said it was done with the block";
}

TEST(Staging, InPlaceBuffersShareOneStagingArea) {
  Stager stager = makeStager();
  HostLane lane;
  // allgather in place: the input is block 2 of the output.
  std::vector<float> buf(4 * 256);
  std::iota(buf.begin(), buf.end(), 0.f);
  const size_t block = 256 * sizeof(float);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stager.stage(lane, {{{buf.data() + 512, block, true}, {buf.data(), 4 * block, true}}}, {}, &op).isOk());
  EXPECT_EQ(op->parts[0].hostInput(), op->parts[0].hostOutput() + 2 * block);
  ASSERT_TRUE(eventually([&] { return op->parts[0].ready(block); }));
  EXPECT_EQ(0, std::memcmp(op->parts[0].hostInput(), buf.data() + 512, block));
  op->request.start(1);
  ASSERT_TRUE(stager.finishStaging(lane, op, Status::ok()).isOk());
  op->request.channelDone();
  lane.sync();
  // reduce_scatter in place: the output is block 1 of the input.
  StagedOp* rs = nullptr;
  ASSERT_TRUE(stager.stage(lane, {{{buf.data(), 4 * block, true}, {buf.data() + 256, block, true}}}, {}, &rs).isOk());
  EXPECT_EQ(rs->parts[0].hostOutput(), rs->parts[0].hostInput() + block);
  rs->request.start(1);
  ASSERT_TRUE(stager.finishStaging(lane, rs, Status::ok()).isOk());
  rs->request.channelDone();
  lane.sync();
}

TEST(Staging, HostBuffersAreUsedWhereTheyAre) {
  Stager stager = makeStager();
  HostLane lane;
  lane.hold();
  std::vector<double> in(100, 1.5), out(100, 0);
  StagedOp* op = nullptr;
  ASSERT_TRUE(stager.stage(lane, {{{in.data(), 800, false}, {out.data(), 800, false}}}, {}, &op).isOk());
  EXPECT_EQ(op->parts[0].hostInput(), reinterpret_cast<const char*>(in.data()));
  EXPECT_EQ(op->parts[0].hostOutput(), reinterpret_cast<char*>(out.data()));
  EXPECT_FALSE(op->parts[0].ready(0)) << "host buffers too wait for the stream's earlier work";
  lane.go();
  ASSERT_TRUE(eventually([&] { return op->parts[0].ready(800); }));
  op->request.start(1);
  ASSERT_TRUE(stager.finishStaging(lane, op, Status::ok()).isOk());
  op->request.channelDone();
  lane.sync();
  EXPECT_TRUE(op->finished());
}

// The pre-multiplied sum's scaling: each landed chunk scaled exactly once,
// whichever of several drivers asks first.
template <typename T>
void checkPremul(strata_datatype_t dt, T scalar, bool scalarOnDevice, const std::vector<T>& in,
                 const std::function<double(T)>& widen, double tolerance) {
  Stager stager = makeStager();
  HostLane lane;
  std::vector<T> out(in.size());
  StagedOp* op = nullptr;
  PreMul premul{&scalar, scalarOnDevice, dt};
  const size_t bytes = in.size() * sizeof(T);
  ASSERT_TRUE(stager.stage(lane, {{{in.data(), bytes, true}, {out.data(), bytes, true}}}, premul, &op).isOk());
  StagedPart& gate = op->parts[0];
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
  ASSERT_TRUE(stager.finishStaging(lane, op, Status::ok()).isOk());
  op->request.channelDone();
  lane.sync();
}

TEST(Staging, PreMultipliesEveryLandedChunkOnce) {
  const size_t n = 5 * kChunk / sizeof(float) + 3;
  checkPremul<float>(STRATA_FLOAT32, 0.25f, true, ramp(n, -100), [](float v) { return double(v); }, 0);
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i) d[i] = 1.0 / (1 + i);
  checkPremul<double>(STRATA_FLOAT64, 3.0, false, d, [](double v) { return v; }, 1e-15);
  std::vector<int32_t> ints(n);
  std::iota(ints.begin(), ints.end(), -7);
  checkPremul<int32_t>(STRATA_INT32, -3, true, ints, [](int32_t v) { return double(v); }, 0);
}

TEST(Staging, CacheKeepsBlocksUpToItsLimit) {
  Stager stager = makeStager(/*cache=*/3 * kChunk);
  HostLane lane;
  std::vector<char> big(16 * kChunk, 1), out(16 * kChunk);
  for (int round = 0; round < 2; ++round) {
    StagedOp* op = nullptr;
    ASSERT_TRUE(stager.stage(lane, {{{big.data(), big.size(), true}, {out.data(), out.size(), true}}}, {}, &op).isOk());
    op->request.start(1);
    ASSERT_TRUE(stager.finishStaging(lane, op, Status::ok()).isOk());
    op->request.channelDone();
    lane.sync();
    stager.reap();
    EXPECT_LE(stager.cachedBytes(), 3 * kChunk) << "a block larger than the cache is not kept";
  }
}

}  // namespace
}  // namespace strata::streams
