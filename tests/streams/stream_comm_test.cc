// Stream-ordered collectives through a real communicator of real processes:
// the communicator's own staging, channels and progress threads, with a
// host lane for the CUDA stream and memory marked "staged" for device
// buffers (Comm::setPinnedAllocator lets host memory stand for pinned).
// Results are checked against a double-precision reference.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include "api_state.h"
#include "host_lane.h"
#include "multiproc.h"

namespace strata::test {
namespace {

using streams::PartSpec;

float valueOf(int rank, size_t i) { return static_cast<float>((rank + 1) * 0.5 + (i % 97) * 0.25); }

// Rank bodies: init, then `body(comm, rank, nranks, r)`.
void runOnComm(int nranks, const std::function<void(Comm&, strata_comm_t, int, int, Reporter&)>& body,
               const std::vector<std::pair<std::string, std::string>>& env = {}) {
  strata_unique_id_t id;
  ASSERT_EQ(strata_get_unique_id(&id), STRATA_SUCCESS);
  std::vector<ChildBody> bodies;
  for (int rank = 0; rank < nranks; ++rank)
    bodies.push_back([&, rank](Reporter& r) {
      strata_comm_t comm = nullptr;
      if (strata_comm_init_rank(&comm, nranks, id, rank) != STRATA_SUCCESS) {
        r.fail("rank %d: init: %s", rank, strata_last_error());
        return;
      }
      comm->impl->setPinnedAllocator({&hostAlloc, &hostFree});
      body(*comm->impl, comm, rank, nranks, r);
      strata_comm_destroy(comm);
    });
  auto outcomes = runChildren(bodies, 120, env);
  expectAllPassed(outcomes);
}

CollCall callOf(Coll coll, size_t count, strata_datatype_t dt, strata_op_t op = STRATA_SUM) {
  return CollCall{coll, nullptr, nullptr, count, dt, op, 0, nullptr, nullptr, nullptr, nullptr};
}

TEST(StreamComm, AllreduceRunsWhenTheStreamGetsThereAndMatchesTheReference) {
  runOnComm(2, [](Comm& comm, strata_comm_t, int rank, int nranks, Reporter& r) {
    for (size_t count : {size_t(1), size_t(1000), size_t(70000)}) {
      HostLane lane;  // its own gate each round
      std::vector<float> in(count), out(count, -7.f);
      for (size_t i = 0; i < count; ++i) in[i] = valueOf(rank, i);
      // Rank 0 passes "device" memory both ways, rank 1 a device input and a
      // host output: ranks may mix memory types.
      PartSpec part{{in.data(), count * 4, true}, {out.data(), count * 4, rank == 0}};
      lane.hold();
      Status s = comm.submitOnStream(callOf(Coll::Allreduce, count, STRATA_FLOAT32), lane, part, {});
      if (!s.isOk()) return r.fail("submitOnStream: %s", s.message().c_str());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (out[0] != -7.f) r.fail("count %zu: the output changed before the stream reached the call", count);
      lane.go();
      lane.sync();
      for (size_t i = 0; i < count; ++i) {
        double want = 0;
        for (int p = 0; p < nranks; ++p) want += valueOf(p, i);
        if (std::fabs(out[i] - want) > 1e-6 * std::fabs(want))
          return r.fail("count %zu: out[%zu]=%g, want %g", count, i, out[i], want);
      }
    }
  }, {{"STRATA_GPU_CHUNK_BYTES", "4096"}});
}

// A communicator of one rank: the stream copies the input to the output in
// its order (after what it was busy with), and nothing else; a
// pre-multiplied sum still scales.
TEST(StreamComm, OneRankCopiesOnTheStream) {
  runOnComm(1, [](Comm& comm, strata_comm_t, int, int, Reporter& r) {
    HostLane lane;
    std::vector<float> in(5000), out(5000, -7.f);
    for (size_t i = 0; i < in.size(); ++i) in[i] = valueOf(0, i);
    const size_t bytes = in.size() * 4;
    lane.hold();
    for (Coll coll : {Coll::Allreduce, Coll::Allgather, Coll::ReduceScatter}) {
      PartSpec part{{in.data(), bytes, true}, {out.data(), bytes, true}};
      Status s = comm.submitOnStream(callOf(coll, in.size(), STRATA_FLOAT32, STRATA_MAX), lane, part, {});
      if (!s.isOk()) return r.fail("%s: %s", collName(coll), s.message().c_str());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (out[0] != -7.f) return r.fail("the output changed before the stream reached the call");
    lane.go();
    lane.sync();
    if (out != in) return r.fail("one rank's output is not its input");
    PartSpec inPlace{{out.data(), bytes, true}, {out.data(), bytes, true}};
    if (Status s = comm.submitOnStream(callOf(Coll::Allreduce, out.size(), STRATA_FLOAT32), lane, inPlace, {});
        !s.isOk())
      return r.fail("in place: %s", s.message().c_str());
    streams::PreMul twice;
    twice.set = true;
    twice.datatype = STRATA_FLOAT32;
    const float two = 2.f;
    std::memcpy(twice.value, &two, sizeof(two));
    PartSpec part{{in.data(), bytes, true}, {out.data(), bytes, true}};
    if (Status s = comm.submitOnStream(callOf(Coll::Allreduce, in.size(), STRATA_FLOAT32), lane, part, twice);
        !s.isOk())
      return r.fail("pre-multiplied: %s", s.message().c_str());
    lane.sync();
    for (size_t i = 0; i < in.size(); ++i)
      if (out[i] != 2.f * in[i]) return r.fail("pre-multiplied: out[%zu]=%g, want %g", i, out[i], 2.f * in[i]);
  });
}

// The pinned memory the communicator reports (strata_comm_memory) is what
// it took from its pinned allocator and has not given back, counted here by
// the allocator: while operations hold their blocks, and once they are done
// and the blocks sit in the cache.
std::map<void*, size_t> gLivePinned;
Status countingAlloc(size_t bytes, void** out) {
  STRATA_CHECK(hostAlloc(bytes, out));
  gLivePinned[*out] = bytes;
  return Status::ok();
}
void countingFree(void* p) {
  gLivePinned.erase(p);
  hostFree(p);
}
uint64_t livePinned() {
  uint64_t total = 0;
  for (const auto& [p, bytes] : gLivePinned) total += bytes;
  return total;
}

TEST(StreamComm, ThePinnedMemoryReportedIsWhatWasAllocated) {
  runOnComm(2, [](Comm& comm, strata_comm_t handle, int rank, int, Reporter& r) {
    comm.setPinnedAllocator({&countingAlloc, &countingFree});
    auto reported = [&] {
      strata_memory_t m = STRATA_MEMORY_INITIALIZER;
      if (strata_comm_memory(handle, &m) != STRATA_SUCCESS) r.fail("strata_comm_memory: %s", strata_last_error());
      return m.pinned_bytes;
    };
    if (reported() != 0) r.fail("pinned %" PRIu64 " before any stream-ordered call", reported());
    HostLane lane;
    std::vector<std::vector<float>> in, out;
    for (size_t count : {size_t(1000), size_t(30000), size_t(5000)}) {
      in.emplace_back(count, 1.0f + rank);
      out.emplace_back(count, 0.0f);
    }
    lane.hold();
    for (size_t k = 0; k < in.size(); ++k) {
      const size_t bytes = in[k].size() * 4;
      PartSpec part{{in[k].data(), bytes, true}, {out[k].data(), bytes, true}};
      if (Status s = comm.submitOnStream(callOf(Coll::Allreduce, in[k].size(), STRATA_FLOAT32), lane, part, {});
          !s.isOk())
        return r.fail("submitOnStream: %s", s.message().c_str());
    }
    if (livePinned() == 0 || reported() != livePinned())
      r.fail("in flight: reported %" PRIu64 ", allocated %" PRIu64, reported(), livePinned());
    lane.go();
    lane.sync();
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k].back() != 3.0f) r.fail("op %zu: %g, want 3", k, out[k].back());
    // One more call reaps the finished operations into the cache.
    PartSpec part{{in[0].data(), in[0].size() * 4, true}, {out[0].data(), out[0].size() * 4, true}};
    if (Status s = comm.submitOnStream(callOf(Coll::Allreduce, in[0].size(), STRATA_FLOAT32), lane, part, {});
        !s.isOk())
      return r.fail("submitOnStream: %s", s.message().c_str());
    lane.sync();
    if (reported() != livePinned()) r.fail("done: reported %" PRIu64 ", allocated %" PRIu64, reported(), livePinned());
  }, {{"STRATA_GPU_CHUNK_BYTES", "4096"}});
}

TEST(StreamComm, OperationsPipelineOnOneStreamInOrder) {
  runOnComm(2, [](Comm& comm, strata_comm_t, int rank, int nranks, Reporter& r) {
    HostLane lane;
    constexpr int kOps = 6;
    const size_t count = 20000;
    std::vector<std::vector<double>> in(kOps, std::vector<double>(count)), out(kOps, std::vector<double>(count));
    for (int k = 0; k < kOps; ++k)
      for (size_t i = 0; i < count; ++i) in[k][i] = (rank + 1) * (k + 1) + i * 1e-3;
    for (int k = 0; k < kOps; ++k) {
      PartSpec part{{in[k].data(), count * 8, true}, {out[k].data(), count * 8, true}};
      Status s = comm.submitOnStream(callOf(Coll::Allreduce, count, STRATA_FLOAT64, STRATA_MAX), lane, part, {});
      if (!s.isOk()) return r.fail("op %d: %s", k, s.message().c_str());
    }
    lane.sync();
    for (int k = 0; k < kOps; ++k)
      for (size_t i = 0; i < count; ++i)
        if (out[k][i] != nranks * (k + 1) + i * 1e-3) return r.fail("op %d: out[%zu]=%g", k, i, out[k][i]);
  }, {{"STRATA_GPU_CHUNK_BYTES", "8192"}});
}

// This rank's line of a stall report (strata_comm_dump): its recent
// operations, each "done" or "(pending ...)".
std::string ownLine(strata_comm_t handle, int rank) {
  std::vector<char> report(1 << 16);
  if (strata_comm_dump(handle, report.data(), report.size()) != STRATA_SUCCESS) return "dump failed";
  const std::string text(report.data());
  const std::string head = "  rank " + std::to_string(rank) + ":";
  const size_t at = text.find(head);
  if (at == std::string::npos) return "no line for this rank in: " + text;
  return text.substr(at, text.find('\n', at) - at);
}

TEST(StreamComm, AllgatherInPlaceReduceScatterAndAnExchangeOnAStream) {
  runOnComm(3, [](Comm& comm, strata_comm_t handle, int rank, int nranks, Reporter& r) {
    HostLane lane;
    const size_t count = 5000;
    // allgather in place: this rank's block sits in the output already.
    std::vector<int32_t> gathered(count * nranks, -1);
    for (size_t i = 0; i < count; ++i) gathered[rank * count + i] = rank * 100000 + int32_t(i);
    PartSpec ag{{gathered.data() + rank * count, count * 4, true}, {gathered.data(), count * nranks * 4, true}};
    Status s = comm.submitOnStream(callOf(Coll::Allgather, count, STRATA_INT32), lane, ag, {});
    // reduce_scatter out of place.
    std::vector<int64_t> rsIn(count * nranks), rsOut(count, 0);
    for (size_t i = 0; i < rsIn.size(); ++i) rsIn[i] = (rank + 1) * int64_t(i);
    PartSpec rs{{rsIn.data(), rsIn.size() * 8, true}, {rsOut.data(), count * 8, true}};
    if (s.isOk()) s = comm.submitOnStream(callOf(Coll::ReduceScatter, count, STRATA_INT64), lane, rs, {});
    // a ring exchange: send to the next rank, receive from the previous.
    std::vector<float> sendBuf(3000, float(rank)), recvBuf(3000, -1.f);
    const int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    std::vector<P2pOp> ops{{true, next, sendBuf.data(), nullptr, 3000, STRATA_FLOAT32},
                           {false, prev, nullptr, recvBuf.data(), 3000, STRATA_FLOAT32}};
    std::vector<PartSpec> parts{{{sendBuf.data(), 12000, true}, {}}, {{}, {recvBuf.data(), 12000, true}}};
    if (s.isOk()) s = comm.submitGroupOnStream(ops, lane, parts);
    if (!s.isOk()) return r.fail("%s", s.message().c_str());
    lane.sync();
    for (int p = 0; p < nranks; ++p)
      for (size_t i = 0; i < count; ++i)
        if (gathered[p * count + i] != p * 100000 + int32_t(i)) return r.fail("allgather: block %d [%zu]", p, i);
    const int64_t factor = int64_t(nranks) * (nranks + 1) / 2;
    for (size_t i = 0; i < count; ++i)
      if (rsOut[i] != factor * int64_t(rank * count + i)) return r.fail("reduce_scatter [%zu]=%lld", i, (long long)rsOut[i]);
    for (float v : recvBuf)
      if (v != float(prev)) return r.fail("exchange: got %g from rank %d", v, prev);
    // Nobody waits on a stream-ordered request: its end must still reach the
    // operation log, or a stall report would call it pending forever.
    const std::string line = ownLine(handle, rank);
    if (line.find("#2 reduce_scatter") == std::string::npos || line.find("pending") != std::string::npos ||
        line.find(formatText("send of 12000 B to rank %d done", next)) == std::string::npos)
      r.fail("after the stream synchronised, the operation log says: %s", line.c_str());
  }, {{"STRATA_GPU_CHUNK_BYTES", "4096"}});
}

// Over tcp a receive may land straight in the output (RecvConnector::post),
// but not before the stream reaches the call: rank 1's host output stays
// as it was while its stream is held, though rank 0 has sent its block.
TEST(StreamComm, NothingLandsInAHostOutputBeforeTheStreamGetsThere) {
  runOnComm(2, [](Comm& comm, strata_comm_t, int rank, int nranks, Reporter& r) {
    HostLane lane;
    const size_t count = 70000;
    std::vector<int32_t> in(count), out(count * nranks, -7);
    for (size_t i = 0; i < count; ++i) in[i] = rank * 1000000 + int32_t(i);
    // Rank 1's output is host memory the stream does not stage: where
    // landing would write.
    PartSpec part{{in.data(), count * 4, true}, {out.data(), out.size() * 4, rank == 0}};
    if (rank == 1) lane.hold();
    Status s = comm.submitOnStream(callOf(Coll::Allgather, count, STRATA_INT32), lane, part, {});
    if (!s.isOk()) return r.fail("submitOnStream: %s", s.message().c_str());
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // rank 0's block has come by now
      for (size_t i = 0; i < out.size(); ++i)
        if (out[i] != -7) return r.fail("out[%zu] was written before the stream reached the call", i);
      lane.go();
    }
    lane.sync();
    for (int p = 0; p < nranks; ++p)
      for (size_t i = 0; i < count; ++i)
        if (out[p * count + i] != p * 1000000 + int32_t(i)) return r.fail("block %d [%zu] = %d", p, i, out[p * count + i]);
  }, {{"STRATA_TRANSPORT", "tcp"}, {"STRATA_GPU_CHUNK_BYTES", "65536"}});
}

TEST(StreamComm, AStreamBusyLongerThanTheTimeoutIsNoFailure) {
  runOnComm(2, [](Comm& comm, strata_comm_t handle, int rank, int nranks, Reporter& r) {
    HostLane lane;
    std::vector<int32_t> in(5000, rank + 1), out(5000, 0);
    // Every rank's GPU is busy for 2.5 s (the same long step before the
    // call, as in data-parallel training), with STRATA_TIMEOUT=1: waiting
    // for one's own stream is no timeout. (A rank whose peer's GPU lags
    // that long does time out, as it would behind a slow host.)
    lane.hold();
    Status s = comm.submitOnStream(callOf(Coll::Allreduce, in.size(), STRATA_INT32), lane,
                                   {{in.data(), 20000, true}, {out.data(), 20000, true}}, {});
    if (!s.isOk()) return r.fail("submitOnStream: %s", s.message().c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    lane.go();
    lane.sync();
    strata_result_t async = STRATA_SUCCESS;
    strata_comm_get_async_error(handle, &async);
    if (async != STRATA_SUCCESS) return r.fail("async error %s: %s", strata_result_string(async), strata_comm_last_error(handle));
    for (int32_t v : out)
      if (v != nranks * (nranks + 1) / 2) return r.fail("out=%d", v);
  }, {{"STRATA_TIMEOUT", "1"}});
}

TEST(StreamComm, APeerThatAbortsReleasesTheStreamAndReachesTheAsyncError) {
  runOnComm(2, [](Comm& comm, strata_comm_t handle, int rank, int, Reporter& r) {
    if (rank == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      strata_comm_abort(handle);
      _exit(0);  // the runner's destroy must not run on a freed communicator
    }
    HostLane lane;
    std::vector<float> in(100000, 1.f), out(100000, 0.f);
    Status s = comm.submitOnStream(callOf(Coll::Allreduce, in.size(), STRATA_FLOAT32), lane,
                                   {{in.data(), 400000, true}, {out.data(), 400000, true}}, {});
    if (!s.isOk()) return r.fail("submitOnStream: %s", s.message().c_str());
    lane.sync();  // returns only because the failure released the stream
    strata_result_t async = STRATA_SUCCESS;
    strata_comm_get_async_error(handle, &async);
    if (async == STRATA_SUCCESS) r.fail("the peer's abort did not reach strata_comm_get_async_error");
  }, {{"STRATA_TIMEOUT", "20"}});
}

}  // namespace
}  // namespace strata::test
