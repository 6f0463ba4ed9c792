// strata-latency-floor: the least time a 2-rank 8-byte allreduce can take on
// this machine now, so benchmarks can be compared against it in the same run.
//
// Two processes share a page. Each iteration both publish (sequence, value)
// in a cache line of their own and spin until the other's line shows the same
// sequence, then add the two values: one cache-line transfer each way, both
// at once, and no software at all. Lines alternate between two per process,
// so a value is never overwritten before the other side has read it (writing
// iteration i+2 needs the peer's i+1, which it publishes only after reading i).
// On a VM the time moves with where the two virtual cores sit on the host
// (bench/README.md has what it measures here).
//   strata-latency-floor [--iters N]     default 200000 per run, median of 5 runs
//   strata-latency-floor --ring N [--bind]  N processes pass a token around
// --ring measures what a hop costs when ranks outnumber the cores: each
// process waits for the token as strata's ranks wait then (src/progress/
// wait_policy.h: poll, and give the core away with sched_yield after each
// fruitless poll), so a hop to a process that is not running waits for the
// scheduler to run it. It prints the median time per hop. --bind pins them
// as strata-perf --bind pins its ranks (bench/pin/pin.h).
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sched.h>
#include <vector>

#include "../pin/pin.h"

namespace {

struct alignas(64) Line {
  std::atomic<uint64_t> seq{0};
  double value = 0;
};

struct Shared {
  Line lines[2][2];  // [process][iteration parity]
};

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// One run of `iters` exchanges as process `me`; returns seconds per exchange
// (timed after a tenth of them as warm-up) and checks every sum.
double exchange(Shared* s, int me, uint64_t first, uint64_t iters, bool* ok) {
  double start = 0;
  for (uint64_t k = 0; k < iters; ++k) {
    const uint64_t i = first + k;
    if (k == iters / 10) start = seconds();
    Line& mine = s->lines[me][i & 1];
    mine.value = static_cast<double>(i * 2 + me);
    mine.seq.store(i, std::memory_order_release);
    Line& theirs = s->lines[1 - me][i & 1];
    while (theirs.seq.load(std::memory_order_acquire) != i) {
    }
    if (mine.value + theirs.value != static_cast<double>(i * 4 + 1)) *ok = false;
  }
  return (seconds() - start) / static_cast<double>(iters - iters / 10);
}

struct Ring {
  alignas(64) std::atomic<uint64_t> token{0};
};

// Process `me` of `n` takes the token at each of its turns among `hops`
// (token % n == me) and passes it on; returns seconds per hop of the run.
double ringRun(Ring* ring, int me, int n, uint64_t first, uint64_t hops) {
  const double start = seconds();
  for (uint64_t t = first + me; t < first + hops; t += n) {
    while (ring->token.load(std::memory_order_acquire) != t) sched_yield();
    ring->token.store(t + 1, std::memory_order_release);
  }
  while (ring->token.load(std::memory_order_acquire) < first + hops) sched_yield();
  return (seconds() - start) / static_cast<double>(hops);
}

int ring(int n, bool bind) {
  constexpr int kRuns = 5;
  constexpr uint64_t kHops = 20000;
  void* page = mmap(nullptr, sizeof(Ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    std::perror("strata-latency-floor: mmap");
    return 1;
  }
  auto* r = new (page) Ring();
  const std::vector<int> cpus = bind ? strata::bench::allowedCpus() : std::vector<int>();
  std::vector<pid_t> children;
  int me = 0;
  for (int p = 1; p < n; ++p) {
    const pid_t c = fork();
    if (c < 0) {
      std::perror("strata-latency-floor: fork");
      return 1;
    }
    if (c == 0) {
      me = p;
      break;
    }
    children.push_back(c);
  }
  // A process that could not be pinned still passes the token (its peers
  // would wait for it forever otherwise); the message says the hop is not
  // the pinned one.
  if (bind && strata::bench::pinInBlocks(cpus, me, n) < 0)
    std::perror("strata-latency-floor: --bind, running unpinned");
  std::vector<double> runs;
  for (int k = 0; k < kRuns; ++k) runs.push_back(ringRun(r, me, n, k * kHops, kHops));
  if (me != 0) _exit(0);
  for (pid_t c : children) waitpid(c, nullptr, 0);
  std::sort(runs.begin(), runs.end());
  std::printf("# strata-latency-floor --ring: %d processes%s passing a token, waiting with sched_yield, median of %d "
              "x %llu hops\n",
              n, bind ? " pinned in blocks" : "", kRuns, static_cast<unsigned long long>(kHops));
  std::printf("ring_hop_us %.3f\n", runs[kRuns / 2] * 1e6);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t iters = 200000;
  int ringSize = 0;
  bool bind = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      iters = std::strtoull(argv[++i], nullptr, 10);
    } else if (std::strcmp(argv[i], "--ring") == 0 && i + 1 < argc) {
      ringSize = std::atoi(argv[++i]);
      if (ringSize < 2 || ringSize > 256) {
        std::fprintf(stderr, "strata-latency-floor: --ring takes 2..256 processes\n");
        return 2;
      }
    } else if (std::strcmp(argv[i], "--bind") == 0) {
      bind = true;
    } else {
      std::fprintf(stderr, "usage: strata-latency-floor [--iters N | --ring N [--bind]]\n");
      return 2;
    }
  }
  if (bind && ringSize == 0) {
    std::fprintf(stderr, "strata-latency-floor: --bind pins --ring's processes\n");
    return 2;
  }
  if (ringSize) return ring(ringSize, bind);
  if (iters < 10) iters = 10;
  void* page = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) {
    std::perror("strata-latency-floor: mmap");
    return 1;
  }
  auto* shared = new (page) Shared();
  constexpr int kRuns = 5;
  const pid_t child = fork();
  if (child < 0) {
    std::perror("strata-latency-floor: fork");
    return 1;
  }
  const int me = child == 0 ? 1 : 0;
  bool ok = true;
  std::vector<double> runs;
  for (int r = 0; r < kRuns; ++r) runs.push_back(exchange(shared, me, 1 + r * iters, iters, &ok));
  if (me == 1) _exit(ok ? 0 : 1);
  int status = 0;
  waitpid(child, &status, 0);
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "strata-latency-floor: a sum was wrong\n");
    return 1;
  }
  std::sort(runs.begin(), runs.end());
  std::printf("# strata-latency-floor: 2 processes exchanging one cache line each, median of %d x %llu\n",
              kRuns, static_cast<unsigned long long>(iters));
  std::printf("latency_floor_us %.3f\n", runs[kRuns / 2] * 1e6);
  return 0;
}
