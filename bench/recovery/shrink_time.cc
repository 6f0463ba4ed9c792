// How long a job takes to be working again after a rank dies: N local ranks
// run large allreduces, one of them SIGKILLs itself in the middle of one,
// and each survivor calls strata_comm_shrink(STRATA_SHRINK_ABORT) on its
// error and checks one allreduce on the shrunk communicator against sums
// computed here. Per round it prints, over the survivors, the slowest
// detection (kill to error), the slowest shrink (error to new
// communicator), and kill to a checked allreduce on it, against the
// budget STRATA_TIMEOUT + 1 s.
//
//   strata-shrink-time [--ranks 8] [--victims 0,3,7] [--rounds 3] [--count 1048576]
//
// STRATA_TIMEOUT (default here: 4 s) and STRATA_TRANSPORT apply as usual.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "local_ranks.h"
#include "strata/strata.h"

namespace {

using strata::bench::now;

constexpr int kMaxRanks = 64;

struct Board {
  std::atomic<double> killedAt;
  std::atomic<double> errorAt[kMaxRanks];
  std::atomic<double> shrunkAt[kMaxRanks];
  std::atomic<double> checkedAt[kMaxRanks];
  std::atomic<int> verdict[kMaxRanks];  // 1 checked, -1 failed
  char why[kMaxRanks][160];
};

void failed(Board* b, int rank, const char* what, strata_comm_t comm) {
  std::snprintf(b->why[rank], sizeof(b->why[rank]), "%s: %s", what,
                comm ? strata_comm_last_error(comm) : strata_last_error());
  b->verdict[rank] = -1;
}

void rankMain(Board* b, int rank, int nranks, int victim, size_t count, const strata_unique_id_t& id) {
  std::vector<float> buf(count, 1.0f);
  strata_comm_t comm;
  if (strata_comm_init_rank(&comm, nranks, id, rank) != STRATA_SUCCESS) return failed(b, rank, "init", nullptr);
  const double start = now();
  strata_result_t rc = STRATA_SUCCESS;
  while (rc == STRATA_SUCCESS) {
    if (rank == victim && now() - start > 0.3) {
      b->killedAt = now();
      raise(SIGKILL);
    }
    rc = strata_allreduce(buf.data(), buf.data(), count, STRATA_FLOAT32, STRATA_MAX, comm);
  }
  b->errorAt[rank] = now();
  strata_comm_t shrunk;
  if (strata_comm_shrink(comm, nullptr, 0, STRATA_SHRINK_ABORT, &shrunk) != STRATA_SUCCESS)
    return failed(b, rank, "shrink", comm);
  b->shrunkAt[rank] = now();
  std::vector<double> v(1024, rank + 1.0);
  if (strata_allreduce(v.data(), v.data(), v.size(), STRATA_FLOAT64, STRATA_SUM, shrunk) != STRATA_SUCCESS)
    return failed(b, rank, "allreduce on the shrunk communicator", shrunk);
  const double want = nranks * (nranks + 1) / 2.0 - (victim + 1);
  if (std::any_of(v.begin(), v.end(), [&](double x) { return x != want; })) {
    std::snprintf(b->why[rank], sizeof(b->why[rank]), "shrunk allreduce gave %g, want %g", v[0], want);
    b->verdict[rank] = -1;
    return;
  }
  b->checkedAt[rank] = now();
  b->verdict[rank] = 1;
  strata_comm_destroy(shrunk);
  strata_comm_destroy(comm);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 8, rounds = 3;
  size_t count = 1 << 20;
  std::vector<int> victims{0, 3, 7};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--ranks") nranks = std::atoi(argv[i + 1]);
    else if (flag == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (flag == "--count") count = std::strtoull(argv[i + 1], nullptr, 10);
    else if (flag == "--victims") {
      victims.clear();
      for (const char* p = argv[i + 1]; *p;) {
        victims.push_back(std::atoi(p));
        while (*p && *p != ',') ++p;
        if (*p == ',') ++p;
      }
    } else {
      std::fprintf(stderr, "usage: %s [--ranks N] [--victims a,b] [--rounds R] [--count floats]\n", argv[0]);
      return 2;
    }
  }
  if (argc % 2 == 0 || nranks < 2 || nranks > kMaxRanks || rounds < 1 || victims.empty() ||
      std::any_of(victims.begin(), victims.end(), [&](int v) { return v < 0 || v >= nranks; })) {
    std::fprintf(stderr, "%s: bad arguments (ranks 2..%d, victims among them)\n", argv[0], kMaxRanks);
    return 2;
  }
  setenv("STRATA_TIMEOUT", "4", 0);
  const double timeout = std::atof(getenv("STRATA_TIMEOUT"));
  const char* transport = getenv("STRATA_TRANSPORT");
  std::printf("| transport | ranks | killed | round | slowest detect (ms) | slowest shrink (ms) | kill to checked "
              "allreduce (ms) | budget (ms) |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  bool allOk = true;
  for (int victim : victims) {
    std::vector<double> totals;
    for (int round = 0; round < rounds; ++round) {
      auto* b = strata::bench::sharedBoard<Board>();
      if (!strata::bench::runLocalRanks(nranks, 60, [&](int r, const strata_unique_id_t& id) {
            rankMain(b, r, nranks, victim, count, id);
          }))
        return 1;
      double detect = 0, shrink = 0, total = 0;
      bool ok = true;
      for (int r = 0; r < nranks; ++r) {
        if (r == victim) continue;
        if (b->verdict[r] != 1) {
          std::fprintf(stderr, "rank %d (victim %d, round %d): %s\n", r, victim, round,
                       b->why[r][0] ? b->why[r] : "did not finish");
          ok = false;
          continue;
        }
        detect = std::max(detect, b->errorAt[r] - b->killedAt);
        shrink = std::max(shrink, b->shrunkAt[r] - b->errorAt[r]);
        total = std::max(total, b->checkedAt[r] - b->killedAt);
      }
      allOk &= ok;
      if (ok) totals.push_back(total);
      std::printf("| %s | %d | rank %d | %d | %.0f | %.0f | %.0f%s | %.0f |\n", transport ? transport : "auto", nranks,
                  victim, round + 1, detect * 1e3, shrink * 1e3, total * 1e3, ok ? "" : " (failed)",
                  (timeout + 1) * 1e3);
      std::fflush(stdout);
      munmap(b, sizeof(Board));
    }
    std::printf("| %s | %d | rank %d | median | | | %.0f | %.0f |\n", transport ? transport : "auto", nranks, victim,
                median(totals) * 1e3, (timeout + 1) * 1e3);
  }
  return allOk ? 0 : 1;
}
