// strata_comm_memory against what the kernel says a rank maps, over real
// shared memory and real sockets: each rank is a process.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cinttypes>
#include <cstddef>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "multiproc.h"
#include "process_tools.h"

namespace strata::test {
namespace {

// What this process maps of its own shared-memory segments (named
// "strata-<tag>-r<rank>-p<pid>-..."), by /proc/self/maps: pages, whole.
uint64_t ownSegmentsMapped(int rank) {
  char own[64];
  std::snprintf(own, sizeof(own), "-r%d-p%d-", rank, static_cast<int>(getpid()));
  uint64_t total = 0;
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (!maps) return 0;
  char line[512];
  while (std::fgets(line, sizeof(line), maps)) {
    if (!std::strstr(line, "/dev/shm/strata-") || !std::strstr(line, own)) continue;
    uint64_t begin = 0, end = 0;
    if (std::sscanf(line, "%" SCNx64 "-%" SCNx64, &begin, &end) == 2) total += end - begin;
  }
  std::fclose(maps);
  return total;
}

uint64_t pagesOf(uint64_t bytes) { return (bytes + 4095) / 4096 * 4096; }

TEST(CommMemory, SharedBytesAreTheRanksOwnSegment) {
  expectAllPassed(runRanks(3, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    strata_memory_t m = STRATA_MEMORY_INITIALIZER;
    if (!rep.ok(strata_comm_memory(comm, &m), comm, "strata_comm_memory")) return;
    const uint64_t mapped = ownSegmentsMapped(rank);
    if (mapped == 0 || pagesOf(m.shared_bytes) != mapped)
      rep.fail("shared_bytes %" PRIu64 " (%" PRIu64 " in pages), but this rank maps %" PRIu64
               " bytes of its own segments",
               m.shared_bytes, pagesOf(m.shared_bytes), mapped);
    // shm slots live in the segment; no call has run: no staging, no scratch.
    if (m.host_bytes != 0 || m.pinned_bytes != 0 || m.device_bytes != 0)
      rep.fail("host %" PRIu64 ", pinned %" PRIu64 ", device %" PRIu64 " before any call", m.host_bytes,
               m.pinned_bytes, m.device_bytes);
    if (strata_comm_memory(comm, nullptr) != STRATA_ERR_INVALID_ARGUMENT || !mentions(strata_last_error(), "usage"))
      rep.fail("a NULL usage: '%s'", strata_last_error());
    // A program built against a struct of one field gets that field alone.
    strata_memory_t older = {offsetof(strata_memory_t, host_bytes), 0, 7, 7, 7};
    if (!rep.ok(strata_comm_memory(comm, &older), comm, "strata_comm_memory (one field)")) return;
    if (older.shared_bytes != m.shared_bytes || older.host_bytes != 7 || older.pinned_bytes != 7 ||
        older.device_bytes != 7)
      rep.fail("a struct of one field: shared %" PRIu64 " (want %" PRIu64 "), past it %" PRIu64 " %" PRIu64
               " %" PRIu64 " (want 7)", older.shared_bytes, m.shared_bytes, older.host_bytes, older.pinned_bytes,
               older.device_bytes);
    strata_memory_t tiny = STRATA_MEMORY_INITIALIZER;
    tiny.size = sizeof(size_t);
    if (strata_comm_memory(comm, &tiny) != STRATA_ERR_INVALID_ARGUMENT ||
        !mentions(strata_last_error(), "usage->size"))
      rep.fail("a usage too small: '%s'", strata_last_error());
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }));
}

// Over tcp each pair connects at its first call: nothing is held before it.
// Afterwards the slots a connector used exist, each a whole ring of
// STRATA_NSLOTS x STRATA_SLOT_BYTES, beside 16 KiB read-ahead buffers: the
// count must be a ring count and a buffer count within what 2 channels, one
// peer and both directions can hold (a ring of 2 x 17 pages is no multiple of
// 16 KiB, so the split is unique).
TEST(CommMemory, TcpSlotsAppearWithTheFirstCall) {
  constexpr uint64_t kRing = 2 * 69632, kReadAhead = 16384;
  constexpr int kChannels = 2;
  expectAllPassed(runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    strata_memory_t before = STRATA_MEMORY_INITIALIZER;
    if (!rep.ok(strata_comm_memory(comm, &before), comm, "strata_comm_memory")) return;
    if (before.host_bytes != 0 || before.shared_bytes != 0)
      rep.fail("before any call: host %" PRIu64 ", shared %" PRIu64, before.host_bytes, before.shared_bytes);
    std::vector<float> data(1 << 20, 1.0f + rank);
    if (!rep.ok(strata_allreduce(data.data(), data.data(), data.size(), STRATA_FLOAT32, STRATA_SUM, comm), comm,
                "allreduce"))
      return;
    if (data[12345] != 3.0f) rep.fail("allreduce: %g, want 3", data[12345]);
    strata_memory_t after = STRATA_MEMORY_INITIALIZER;
    if (!rep.ok(strata_comm_memory(comm, &after), comm, "strata_comm_memory")) return;
    bool split = false;
    for (uint64_t rings = 1; rings <= 2 * kChannels && !split; ++rings)
      split = after.host_bytes >= rings * kRing && (after.host_bytes - rings * kRing) % kReadAhead == 0 &&
              (after.host_bytes - rings * kRing) / kReadAhead <= kChannels;
    if (!split)
      rep.fail("host_bytes %" PRIu64 " after an allreduce over tcp is not 1 to %d rings of %" PRIu64
               " bytes and up to %d read-ahead buffers",
               after.host_bytes, 2 * kChannels, kRing, kChannels);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }, {{"STRATA_TRANSPORT", "tcp"}, {"STRATA_NCHANNELS", "2"}, {"STRATA_SLOT_BYTES", "69632"}, {"STRATA_NSLOTS", "2"}}));
}

uint64_t total(const strata_memory_t& m) { return m.shared_bytes + m.host_bytes + m.pinned_bytes; }

// Every rank's sum of `values`, element by element, against a double-precision reference.
void allreduceChecked(strata_comm_t comm, int rank, int nranks, size_t count, Reporter& rep) {
  std::vector<float> data(count);
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<float>((i * 7 + rank * 3) % 17);
  if (!rep.ok(strata_allreduce(data.data(), data.data(), count, STRATA_FLOAT32, STRATA_SUM, comm), comm, "allreduce"))
    return;
  for (size_t i = 0; i < count; ++i) {
    double want = 0;
    for (int r = 0; r < nranks; ++r) want += (i * 7 + r * 3) % 17;
    if (data[i] != static_cast<float>(want)) return rep.fail("allreduce of %zu: [%zu] = %g, want %g", count, i, data[i], want);
  }
}

// STRATA_MEM_BUDGET: 4 ranks of one host, whose default slots (8 of 256 KiB
// per FIFO, a FIFO per channel and local rank) need several MiB each, fit in
// 1 MiB: what they report and what the kernel says they map stay within it,
// and allreduces of every size still match the reference.
TEST(CommMemory, ABudgetShrinksTheSlotsAndResultsHold) {
  constexpr uint64_t kBudget = 1 << 20;
  expectAllPassed(runRanks(4, 120, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    for (size_t count : {size_t(1), size_t(1000), size_t(300000), size_t(2000000)})
      allreduceChecked(comm, rank, nranks, count, rep);
    strata_memory_t m = STRATA_MEMORY_INITIALIZER;
    if (!rep.ok(strata_comm_memory(comm, &m), comm, "strata_comm_memory")) return;
    if (total(m) > kBudget || m.shared_bytes == 0)
      rep.fail("holds %" PRIu64 " bytes (shared %" PRIu64 "), budget %" PRIu64, total(m), m.shared_bytes, kBudget);
    if (ownSegmentsMapped(rank) > kBudget)
      rep.fail("maps %" PRIu64 " bytes of its own segments, budget %" PRIu64, ownSegmentsMapped(rank), kBudget);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }, {{"STRATA_MEM_BUDGET", std::to_string(kBudget)}, {"STRATA_NCHANNELS", "2"}}));
}

// Over tcp the budget covers every peer a rank may connect to, connected or
// not yet: after calls that reach them all, it still holds.
TEST(CommMemory, ABudgetCoversEveryTcpPeer) {
  constexpr uint64_t kBudget = 3 << 20;
  expectAllPassed(runRanks(3, 120, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    std::vector<int32_t> out(3 * 50000), in(out.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>(rank * 1000000 + i);
    if (!rep.ok(strata_alltoall(in.data(), out.data(), 50000, STRATA_INT32, comm), comm, "alltoall")) return;
    for (int r = 0; r < nranks; ++r)
      if (out[r * 50000 + 7] != r * 1000000 + rank * 50000 + 7)
        rep.fail("alltoall: block %d holds %d", r, out[r * 50000 + 7]);
    allreduceChecked(comm, rank, nranks, 1000000, rep);
    strata_memory_t m = STRATA_MEMORY_INITIALIZER;
    if (!rep.ok(strata_comm_memory(comm, &m), comm, "strata_comm_memory")) return;
    if (total(m) > kBudget || m.host_bytes == 0)
      rep.fail("holds %" PRIu64 " bytes (host %" PRIu64 "), budget %" PRIu64, total(m), m.host_bytes, kBudget);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }, {{"STRATA_MEM_BUDGET", std::to_string(kBudget)}, {"STRATA_TRANSPORT", "tcp"}, {"STRATA_NCHANNELS", "2"}}));
}

// A budget on one rank sizes every rank's slots alike (plans assume it):
// both then hold the same segment, within that budget.
TEST(CommMemory, ABudgetOnOneRankSizesEveryRank) {
  constexpr uint64_t kBudget = 1 << 20;
  expectAllPassed(runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    if (rank == 0) setenv("STRATA_MEM_BUDGET", std::to_string(kBudget).c_str(), 1);
    strata_comm_t comm = nullptr;
    if (!rep.ok(strata_comm_init_rank(&comm, nranks, id, rank), nullptr, "init")) return;
    strata_memory_t m = STRATA_MEMORY_INITIALIZER;
    if (!rep.ok(strata_comm_memory(comm, &m), comm, "strata_comm_memory")) return;
    uint64_t shared[2] = {0, 0};
    if (!rep.ok(strata_allgather(&m.shared_bytes, shared, 1, STRATA_UINT64, comm), comm, "allgather")) return;
    if (shared[0] != shared[1] || shared[0] > kBudget)
      rep.fail("shared bytes %" PRIu64 " and %" PRIu64 " with a budget of %" PRIu64 " on rank 0 alone", shared[0],
               shared[1], kBudget);
    allreduceChecked(comm, rank, nranks, 500000, rep);
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }));
}

// A communicator's own budget (strata_config_t.memory_budget), kept by its
// dup; the variable is not set.
TEST(CommMemory, AConfigsBudgetIsTheCommunicatorsOwn) {
  constexpr uint64_t kBudget = 1 << 20;
  expectAllPassed(runRanks(3, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_config_t config = STRATA_CONFIG_INITIALIZER;
    config.memory_budget = kBudget;
    strata_comm_t comm = nullptr, dup = nullptr;
    if (!rep.ok(strata_comm_init_rank_config(&comm, nranks, id, rank, &config), nullptr, "init")) return;
    if (!rep.ok(strata_comm_dup(comm, &dup), comm, "dup")) return;
    for (strata_comm_t c : {comm, dup}) {
      allreduceChecked(c, rank, nranks, 400000, rep);
      strata_memory_t m = STRATA_MEMORY_INITIALIZER;
      if (rep.ok(strata_comm_memory(c, &m), c, "strata_comm_memory") && (total(m) > kBudget || m.shared_bytes == 0))
        rep.fail("%s holds %" PRIu64 " bytes, its config's budget %" PRIu64, c == comm ? "comm" : "its dup", total(m),
                 kBudget);
    }
    rep.ok(strata_comm_destroy(dup), nullptr, "destroy dup");
    rep.ok(strata_comm_destroy(comm), nullptr, "destroy");
  }));
}

// A budget below the least any sizing needs fails creation on every rank,
// saying what that least is.
TEST(CommMemory, ABudgetTooSmallFailsOnEveryRankSayingTheLeast) {
  expectAllPassed(runRanks(2, 60, [](int rank, int nranks, const strata_unique_id_t& id, Reporter& rep) {
    strata_comm_t comm = nullptr;
    const strata_result_t rc = strata_comm_init_rank(&comm, nranks, id, rank);
    if (rc != STRATA_ERR_INVALID_ARGUMENT || !mentions(strata_last_error(), "budget of 4096 bytes on rank") ||
        !mentions(strata_last_error(), "needs at least"))
      rep.fail("init under a 4 KiB budget: %s: '%s'", strata_result_string(rc), strata_last_error());
    if (comm) strata_comm_destroy(comm);
  }, {{"STRATA_MEM_BUDGET", "4096"}}));
}

}  // namespace
}  // namespace strata::test
