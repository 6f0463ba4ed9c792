// The stream-ordered C API (strata_*_ex) where no GPU is usable: what can be
// checked without one must still hold. A stream gets STRATA_ERR_CUDA with
// CUDA's reason, GPU-looking pointers get an error instead of a crash, host
// buffers keep working (with a pre-multiplier too, checked against a
// double-precision reference), and nothing hangs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "multiproc.h"
#include "process_tools.h"

namespace strata::test {
namespace {

// A pointer to memory this process does not map: what a device pointer is
// to a process without a GPU. The last page of the address space belongs to
// the kernel on every 64-bit Linux, so no mapping here can ever cover it; a
// page mmapped and then unmapped could be handed out again, to an allocation
// on the communicator's own threads, before the call looked at it.
void* unmappedPage() { return reinterpret_cast<void*>(UINTPTR_MAX & ~uintptr_t{4095}); }

TEST(StreamApi, WithoutAGpuStreamsFailCleanlyAndHostBuffersWork) {
  auto outcomes = runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    std::vector<float> in(1000), out(1000, 0.f);
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>((rank + 1) * (i % 13)) * 0.5f;

    strata_call_options_t opts = STRATA_CALL_OPTIONS_INIT;
    opts.stream = reinterpret_cast<strata_stream_t>(0x1234);
    strata_result_t rc = strata_allreduce_ex(in.data(), out.data(), in.size(), STRATA_FLOAT32, STRATA_SUM, comm, &opts);
    if (rc != STRATA_ERR_CUDA) rep.fail("a stream without a GPU: got %s", strata_result_string(rc));
    if (!mentions(strata_last_error(), "options->stream")) rep.fail("message '%s' does not name the stream", strata_last_error());
    rc = strata_send_ex(in.data(), 10, STRATA_FLOAT32, 1 - rank, comm, &opts);
    if (rc != STRATA_ERR_CUDA) rep.fail("send on a stream without a GPU: got %s", strata_result_string(rc));

    strata_call_options_t tiny = STRATA_CALL_OPTIONS_INIT;
    tiny.size = 4;
    rc = strata_allreduce_ex(in.data(), out.data(), in.size(), STRATA_FLOAT32, STRATA_SUM, comm, &tiny);
    if (rc != STRATA_ERR_INVALID_ARGUMENT || !mentions(strata_last_error(), "options->size"))
      rep.fail("options->size=4: got %s '%s'", strata_result_string(rc), strata_last_error());

    rc = strata_allreduce_ex(unmappedPage(), out.data(), 16, STRATA_FLOAT32, STRATA_SUM, comm, nullptr);
    if (rc != STRATA_ERR_INVALID_ARGUMENT || !mentions(strata_last_error(), "sendbuf"))
      rep.fail("a device-looking sendbuf: got %s '%s'", strata_result_string(rc), strata_last_error());
    rc = strata_recv_ex(unmappedPage(), 16, STRATA_FLOAT32, 1 - rank, comm, nullptr);
    if (rc != STRATA_ERR_INVALID_ARGUMENT || !mentions(strata_last_error(), "recvbuf"))
      rep.fail("a device-looking recvbuf: got %s '%s'", strata_result_string(rc), strata_last_error());

    const float half = 0.5f;
    strata_call_options_t premul = STRATA_CALL_OPTIONS_INIT;
    premul.premul_scalar = &half;
    rc = strata_allreduce_ex(in.data(), out.data(), in.size(), STRATA_FLOAT32, STRATA_MAX, comm, &premul);
    if (rc != STRATA_ERR_INVALID_ARGUMENT || !mentions(strata_last_error(), "STRATA_SUM"))
      rep.fail("premul with max: got %s '%s'", strata_result_string(rc), strata_last_error());
    rc = strata_allgather_ex(in.data(), out.data(), 10, STRATA_FLOAT32, comm, &premul);
    if (rc != STRATA_ERR_INVALID_ARGUMENT || !mentions(strata_last_error(), "premul_scalar"))
      rep.fail("premul on allgather: got %s '%s'", strata_result_string(rc), strata_last_error());

    // Every rank made the same failed calls, none of which reached the
    // others; the communicator still works, and pre-multiplies.
    if (!rep.ok(strata_allreduce_ex(in.data(), out.data(), in.size(), STRATA_FLOAT32, STRATA_SUM, comm, &premul),
                comm, "premul allreduce"))
      return;
    for (size_t i = 0; i < in.size(); ++i) {
      double want = 0;
      for (int p = 0; p < nranks; ++p) want += 0.5 * ((p + 1) * (i % 13)) * 0.5;
      if (std::fabs(out[i] - want) > 1e-6) return rep.fail("premul out[%zu]=%g want %g", i, out[i], want);
    }
    std::vector<int64_t> mine(3, rank + 1), all(6, 0);
    if (!rep.ok(strata_allgather_ex(mine.data(), all.data(), 3, STRATA_INT64, comm, nullptr), comm, "allgather_ex"))
      return;
    for (size_t i = 0; i < all.size(); ++i)
      if (all[i] != int64_t(i / 3 + 1)) return rep.fail("allgather_ex [%zu]=%lld", i, (long long)all[i]);

    void* mem = nullptr;
    rc = strata_mem_alloc(&mem, 1 << 20);
    if (rc != STRATA_ERR_CUDA || mem != nullptr) rep.fail("strata_mem_alloc without a GPU: got %s", strata_result_string(rc));
    if (strata_mem_free(nullptr) != STRATA_SUCCESS) rep.fail("strata_mem_free(NULL)");
    strata_comm_destroy(comm);
  });
  expectAllPassed(outcomes);
}

}  // namespace
}  // namespace strata::test
