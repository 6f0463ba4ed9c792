// Soak: many small allreduces on local ranks, with a stall report (which
// opens a control-plane connection to every rank) and a dup/destroy every
// so often, printing each rank's resident memory and open descriptors as it
// goes: both must stay flat. Every allreduce's result is checked.
//
//   strata-soak [--ranks 4] [--iters 100000] [--every 10000]
//
// Prints a table (one row per checkpoint, rank 0's and the largest over the
// ranks) and exits 1 if a result was wrong or the last checkpoint's RSS or
// descriptor count grew past the first's by more than a small margin.
#include <dirent.h>
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

constexpr int kMaxRanks = 16;
constexpr int kMaxPoints = 64;

struct Board {
  std::atomic<long> rssKiB[kMaxRanks][kMaxPoints];
  std::atomic<int> fds[kMaxRanks][kMaxPoints];
  std::atomic<double> seconds[kMaxRanks][kMaxPoints];
  std::atomic<int> failed[kMaxRanks];
  char why[kMaxRanks][200];
};

long rssKiB() {
  long pages = 0, resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int openFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') ++n;
    closedir(d);
  }
  return n - 1;  // the directory's own
}

void rankMain(Board* b, int rank, int nranks, long iters, long every, const strata_unique_id_t& id) {
  auto fail = [&](const char* what, strata_comm_t comm) {
    std::snprintf(b->why[rank], sizeof(b->why[rank]), "%s: %s", what,
                  comm ? strata_comm_last_error(comm) : strata_last_error());
    b->failed[rank] = 1;
  };
  strata_comm_t comm;
  if (strata_comm_init_rank(&comm, nranks, id, rank) != STRATA_SUCCESS) return fail("init", nullptr);
  const double start = now();
  const double want = nranks * (nranks + 1) / 2.0;
  char report[2048];
  for (long i = 0; i <= iters; ++i) {
    if (i % every == 0) {
      const int point = static_cast<int>(i / every);
      if (point < kMaxPoints) {
        b->rssKiB[rank][point] = rssKiB();
        b->fds[rank][point] = openFds();
        b->seconds[rank][point] = now() - start;
      }
      if (i == iters) break;
      if (rank == point % nranks && strata_comm_dump(comm, report, sizeof(report)) != STRATA_SUCCESS)
        return fail("dump", comm);
      strata_comm_t dup;
      if (strata_comm_dup(comm, &dup) != STRATA_SUCCESS) return fail("dup", comm);
      strata_comm_destroy(dup);
    }
    double v = rank + 1.0;
    if (strata_allreduce(&v, &v, 1, STRATA_FLOAT64, STRATA_SUM, comm) != STRATA_SUCCESS) return fail("allreduce", comm);
    if (v != want) {
      std::snprintf(b->why[rank], sizeof(b->why[rank]), "allreduce %ld gave %g, want %g", i, v, want);
      b->failed[rank] = 1;
      return;
    }
  }
  strata_comm_destroy(comm);
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 4;
  long iters = 100000, every = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--ranks") nranks = std::atoi(argv[i + 1]);
    else if (flag == "--iters") iters = std::atol(argv[i + 1]);
    else if (flag == "--every") every = std::atol(argv[i + 1]);
    else argc = 0;
  }
  if (argc % 2 == 0 || nranks < 2 || nranks > kMaxRanks || every < 1 || iters < every || iters / every >= kMaxPoints) {
    std::fprintf(stderr, "usage: %s [--ranks 2..%d] [--iters N] [--every K] (N/K < %d)\n", argv[0], kMaxRanks,
                 kMaxPoints);
    return 2;
  }
  auto* b = strata::bench::sharedBoard<Board>();
  if (!strata::bench::runLocalRanks(nranks, 3600, [&](int r, const strata_unique_id_t& id) {
        rankMain(b, r, nranks, iters, every, id);
      }))
    return 1;
  bool ok = true;
  for (int r = 0; r < nranks; ++r)
    if (b->failed[r]) {
      std::fprintf(stderr, "rank %d: %s\n", r, b->why[r]);
      ok = false;
    }
  std::printf("| allreduces | seconds | rank 0 RSS (KiB) | max RSS (KiB) | rank 0 fds | max fds |\n"
              "| --- | --- | --- | --- | --- | --- |\n");
  const int points = static_cast<int>(iters / every) + 1;
  long maxRss[kMaxPoints] = {};
  int maxFds[kMaxPoints] = {};
  for (int p = 0; p < points; ++p) {
    for (int r = 0; r < nranks; ++r) {
      maxRss[p] = std::max(maxRss[p], b->rssKiB[r][p].load());
      maxFds[p] = std::max(maxFds[p], b->fds[r][p].load());
    }
    std::printf("| %ld | %.1f | %ld | %ld | %d | %d |\n", p * every, b->seconds[0][p].load(), b->rssKiB[0][p].load(),
                maxRss[p], b->fds[0][p].load(), maxFds[p]);
  }
  // The first checkpoint comes after init, before any call: later ones may
  // add the plan cache's entries and warmed-up buffers, not a leak's growth.
  const long rssGrowth = maxRss[points - 1] - maxRss[1 < points ? 1 : 0];
  const int fdGrowth = maxFds[points - 1] - maxFds[0];
  std::printf("RSS growth after the first %ld calls: %ld KiB; descriptor growth: %d\n", every, rssGrowth, fdGrowth);
  if (rssGrowth > 1024 || fdGrowth > 0) {
    std::fprintf(stderr, "not flat: RSS grew %ld KiB, descriptors %d\n", rssGrowth, fdGrowth);
    ok = false;
  }
  return ok ? 0 : 1;
}
