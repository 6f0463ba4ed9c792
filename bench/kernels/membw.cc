// strata-membw: what this machine's memory allows a 2-rank allreduce, measured
// now, so benchmarks can be compared against it in the same run.
//
// A 2-rank allreduce of N bytes at best has one rank reduce half the buffer
// (c = a + b over N/2 bytes) while the other copies the other half, and then
// each copies the half it lacks: per byte of result, the pair does one add
// and one copy. With both cores busy, the time per byte is at least
// 1/add_rate + 1/copy_rate, hence the limit 1 / (1/add + 1/copy) with the
// 2-thread rates (add in bytes of output per second, copy in bytes copied).
//   strata-membw [--bytes N]     default 256 MiB per buffer
//   strata-membw --handoff [--bytes N] [--between N] [--nt]
//   strata-membw --procs P [--bytes N] [--piece N] [--bind]
// It also times writing c from a 256 KiB piece that stays in cache, with
// strata's copy kernel and, from STRATA_NT_BYTES' default of 8 MiB, its
// non-temporal stores: a rank writing its output from a slot; and the
// reverse, reading a into such a piece: a rank filling a slot from its
// input, which past the caches moves half a memcpy's DRAM traffic.
// --handoff measures what shared memory between two ranks adds: each thread
// writes N bytes into its outbox, both meet, and each then copies (or adds
// into its own data) the outbox the other thread just wrote, so every line
// it reads comes from the other core's cache (or, past the caches, DRAM).
// It prints each phase's rate per thread (the write, the copy, the add), the
// two threads at once. --between N has each thread then read N bytes of its
// own before the next round, as a rank streams its input and output between
// two fills of one slot: past an L2's worth, the outbox a thread refills has
// left the other core's L2, and the write no longer waits for that core to
// let its lines go (bench/sim/calibrate.py passes an L2 at the L3's working
// set). --nt writes the outboxes with non-temporal stores, strata's copy
// kernel's, as a shared-memory connector fills its slots where it timed
// them faster (transports/shm/shm_slot_stores.h): to DRAM, from where the
// other core reads them.
// --procs P measures what sharing the cores costs when ranks outnumber
// them: P processes, left to the scheduler, each fold their own a, b and c
// of N bytes a piece at a time (default 256 KiB, a slot), yielding after
// each piece as strata's oversubscribed ranks yield between steps; it
// prints their fold rate together. With P the cores it is the rate of
// ranks that have a core each; 4 and 8 processes on this machine's 2 cores
// fold a 12 MiB set at about 0.72 and 0.74 of that (2026-11-29). --bind pins
// them as strata-perf --bind pins its ranks (bench/pin/pin.h): 0.86 and 0.84,
// and steadier (0.82-0.88 and 0.72-0.91 where unpinned gave 0.68-0.95).
// With small buffers it measures the caches instead (each thread's a, b and
// c fit its L2 at 256 KiB, both threads' fit the L3 at a few MiB): each
// measurement runs the kernel over the same buffers until it has moved
// 256 MiB per thread, so the buffers stay resident and starting the threads
// is a small part of the time.
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "kernels.h"
#include "../pin/pin.h"

namespace {

double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Runs `work(thread)` on two threads at once; returns the wall time.
template <typename F>
double onTwoThreads(F work) {
  double start = seconds();
  std::thread t([&] { work(1); });
  work(0);
  t.join();
  return seconds() - start;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void touch(void* p) { asm volatile("" : : "r"(p) : "memory"); }

// Two threads meet: each arrival waits until the other has arrived as often.
struct Meeting {
  std::atomic<long> arrived[2] = {0, 0};
  void meet(int i) {
    const long mine = arrived[i].fetch_add(1, std::memory_order_acq_rel) + 1;
    while (arrived[1 - i].load(std::memory_order_acquire) < mine) {
    }
  }
};

// c = a + b, the fold every mode times.
void fold(float* __restrict out, const float* x, const float* y, size_t n) {
  for (size_t k = 0; k < n; ++k) out[k] = x[k] + y[k];
}

struct HandoffRates {
  double write;  // copying own data into the outbox the other thread read last
  double copy;   // copying the other thread's outbox into own data
  double add;    // adding it to own data
};

// Per thread: rounds of (write own outbox; meet; read the other's outbox
// into own data; read `between` bytes of its own; meet), timing the first
// two phases. Returns the median rates (GB/s per thread, the slower
// thread's each round).
HandoffRates handoff(size_t bytes, size_t between, bool nonTemporal) {
  const size_t n = bytes / sizeof(float);
  std::vector<std::vector<float>> src(2, std::vector<float>(n, 1.0f)), outbox(2, std::vector<float>(n, 0.0f)),
      mine(2, std::vector<float>(n, 2.0f)), dst(2, std::vector<float>(n, 0.0f));
  std::vector<std::vector<char>> streamed(2, std::vector<char>(between, 1));
  // Enough rounds to move 256 MiB per thread and kind, at least 20.
  const size_t rounds = std::max<size_t>(20, (size_t(256) << 20) / bytes);
  // [phase][thread]: the write, then the read by copy or add.
  std::vector<double> elapsed[3][2];
  Meeting m;
  onTwoThreads([&](int i) {
    // One thread per core, as two spinning ranks end up: left to the
    // scheduler, both threads now and then share a core for a while.
    strata::bench::setAffinity({i});
    for (int kind = 0; kind < 2; ++kind)
      for (size_t r = 0; r < rounds; ++r) {
        double start = seconds();
        strata::kernels::copy(outbox[i].data(), src[i].data(), bytes, nonTemporal);
        touch(outbox[i].data());
        if (kind == 0) elapsed[2][i].push_back(seconds() - start);
        m.meet(i);
        const float* x = outbox[1 - i].data();
        float* out = dst[i].data();
        start = seconds();
        if (kind == 0)
          std::memcpy(out, x, bytes);
        else
          fold(out, x, mine[i].data(), n);
        touch(out);
        elapsed[kind][i].push_back(seconds() - start);
        // A line per 64 bytes is enough to bring each into the cache.
        volatile char sink = 0;
        for (size_t k = 0; k < between; k += 64) sink = sink + streamed[i][k];
        m.meet(i);
      }
  });
  double rate[3];
  for (int phase = 0; phase < 3; ++phase) {
    std::vector<double> r;
    for (size_t k = 0; k < rounds; ++k)
      r.push_back(bytes / std::max(elapsed[phase][0][k], elapsed[phase][1][k]) / 1e9);
    rate[phase] = median(r);
  }
  return {rate[2], rate[0], rate[1]};
}

// --procs: the processes' fold rate together (GB/s of output), timed from
// the moment all have their buffers until the last exits; < 0 if one
// failed or computed a wrong sum.
double interleaved(int procs, size_t bytes, size_t piece, bool bind) {
  const size_t n = bytes / sizeof(float), step = std::max<size_t>(1, piece / sizeof(float));
  // Every process moves its share of 1 GiB, in whole passes.
  const size_t passes = std::max<size_t>(1, (size_t(1) << 30) / (bytes * procs));
  void* shared = mmap(nullptr, 2 * sizeof(std::atomic<int>), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) return -1;
  auto* ready = new (shared) std::atomic<int>(0);
  auto* go = new (ready + 1) std::atomic<int>(0);
  const std::vector<int> cpus = bind ? strata::bench::allowedCpus() : std::vector<int>();
  std::vector<pid_t> children;
  for (int p = 0; p < procs; ++p) {
    const pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      if (bind && strata::bench::pinInBlocks(cpus, p, procs) < 0) {
        std::perror("strata-membw: --bind");
        ready->fetch_add(1);  // the parent must not wait for it; it reads the failure from the exit status
        _exit(1);
      }
      std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n, 0.0f);
      fold(c.data(), a.data(), b.data(), n);
      ready->fetch_add(1);
      while (go->load() == 0) sched_yield();
      for (size_t r = 0; r < passes; ++r)
        for (size_t k = 0; k < n; k += step) {
          fold(c.data() + k, a.data() + k, b.data() + k, std::min(step, n - k));
          sched_yield();
        }
      _exit(c[n / 2] == 3.0f ? 0 : 1);
    }
    children.push_back(pid);
  }
  while (ready->load() < int(children.size())) sched_yield();
  const double start = seconds();
  go->store(1);
  bool ok = int(children.size()) == procs;
  for (pid_t pid : children) {
    int status = 0;
    ok = waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok;
  }
  const double t = seconds() - start;
  munmap(shared, 2 * sizeof(std::atomic<int>));
  return ok ? double(procs) * passes * bytes / t / 1e9 : -1;
}

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = size_t(256) << 20;
  size_t between = 0, yieldEvery = 256 << 10;
  int procs = 0;
  bool handoffMode = false, bind = false, nonTemporal = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
      bytes = std::strtoull(argv[++i], nullptr, 0);
    } else if (std::strcmp(argv[i], "--between") == 0 && i + 1 < argc) {
      between = std::strtoull(argv[++i], nullptr, 0);
    } else if (std::strcmp(argv[i], "--handoff") == 0) {
      handoffMode = true;
    } else if (std::strcmp(argv[i], "--nt") == 0) {
      nonTemporal = true;
    } else if (std::strcmp(argv[i], "--procs") == 0 && i + 1 < argc) {
      procs = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--piece") == 0 && i + 1 < argc) {
      yieldEvery = std::strtoull(argv[++i], nullptr, 0);
    } else if (std::strcmp(argv[i], "--bind") == 0) {
      bind = true;
    } else {
      std::fprintf(stderr, "usage: %s [--handoff [--between N] [--nt] | --procs P [--piece N] [--bind]] [--bytes N]\n",
                   argv[0]);
      return 2;
    }
  }
  if (bytes < 4096) {
    std::fprintf(stderr, "%s: --bytes must be at least 4096\n", argv[0]);
    return 2;
  }
  if (procs < 0 || procs > 256 || yieldEvery < 64 || (bind && procs == 0) || (nonTemporal && !handoffMode)) {
    std::fprintf(stderr, "%s: --procs takes 1-256, --piece at least 64, --bind only with --procs, --nt only with "
                 "--handoff\n", argv[0]);
    return 2;
  }
  if (procs > 0) {
    std::vector<double> rates;
    for (int rep = 0; rep < 5; ++rep) {
      const double r = interleaved(procs, bytes, yieldEvery, bind);
      if (r < 0) {
        std::fprintf(stderr, "%s: a process failed or folded a wrong sum\n", argv[0]);
        return 1;
      }
      rates.push_back(r);
    }
    std::printf("# strata-membw --procs: %d processes%s, %zu KiB per buffer, yielding every %zu KiB, median of 5\n",
                procs, bind ? " pinned in blocks" : "", bytes >> 10, yieldEvery >> 10);
    std::printf("%-28s %8.2f GB/s\n", "interleaved c=a+b", median(rates));
    return 0;
  }
  if (handoffMode) {
    const HandoffRates r = handoff(bytes, between, nonTemporal);
    std::printf("# strata-membw --handoff: 2 threads, %zu KiB outboxes%s, %zu KiB read between rounds, median GB/s "
                "per thread\n",
                bytes >> 10, nonTemporal ? " written non-temporally" : "", between >> 10);
    std::printf("%-28s %8.2f GB/s\n", "handoff write", r.write);
    std::printf("%-28s %8.2f GB/s\n", "handoff memcpy", r.copy);
    std::printf("%-28s %8.2f GB/s\n", "handoff c=a+b", r.add);
    return 0;
  }
  const size_t n = bytes / sizeof(float);
  // Per thread: its own a, b, c (as two ranks would have).
  std::vector<std::vector<float>> a(2, std::vector<float>(n, 1.0f)), b(2, std::vector<float>(n, 2.0f)),
      c(2, std::vector<float>(n, 0.0f));
  const size_t passes = std::max<size_t>(1, (size_t(256) << 20) / bytes);
  std::vector<double> copyRates, addRates, writeRates, readRates;
  const size_t piece = std::min<size_t>(bytes, 256 << 10);
  const bool outputNonTemporal = bytes >= (size_t(8) << 20);
  // GB/s of c written piece by piece from a's first piece, which stays in
  // cache (a rank's output from a slot), or of a read piece by piece into
  // c's first (a rank's input into a slot).
  auto throughPiece = [&](bool write) {
    const double t = onTwoThreads([&](int i) {
      char* out = reinterpret_cast<char*>(c[i].data());
      const char* in = reinterpret_cast<const char*>(a[i].data());
      for (size_t p = 0; p < passes; ++p) {
        for (size_t off = 0; off + piece <= bytes; off += piece)
          strata::kernels::copy(write ? out + off : out, write ? in : in + off, piece, write && outputNonTemporal);
        asm volatile("" ::: "memory");
      }
    });
    return 2.0 * (bytes / piece * piece) * passes / t / 1e9;
  };
  for (int rep = 0; rep < 5; ++rep) {
    double t = onTwoThreads([&](int i) {
      for (size_t p = 0; p < passes; ++p) {
        std::memcpy(c[i].data(), a[i].data(), n * sizeof(float));
        // Each pass's stores must happen: the same copy again is not dead.
        asm volatile("" ::: "memory");
      }
    });
    copyRates.push_back(2.0 * bytes * passes / t / 1e9);
    t = onTwoThreads([&](int i) {
      for (size_t p = 0; p < passes; ++p) {
        fold(c[i].data(), a[i].data(), b[i].data(), n);
        asm volatile("" ::: "memory");
      }
    });
    addRates.push_back(2.0 * bytes * passes / t / 1e9);
    writeRates.push_back(throughPiece(true));
    readRates.push_back(throughPiece(false));
  }
  const double copy = median(copyRates), add = median(addRates);
  const double limit = 1.0 / (1.0 / add + 1.0 / copy);
  std::printf("# strata-membw: 2 threads, %zu KiB per buffer, %zu passes, median of 5\n", bytes >> 10, passes);
  std::printf("%-28s %8.2f GB/s\n", "memcpy (bytes copied)", copy);
  std::printf("%-28s %8.2f GB/s\n", "float32 c=a+b (output)", add);
  std::printf("%-28s %8.2f GB/s\n", nonTemporal ? "write from cache (NT)" : "write from cache", median(writeRates));
  std::printf("%-28s %8.2f GB/s\n", "read into cache", median(readRates));
  std::printf("limit_2rank_allreduce_GBps %.2f\n", limit);
  return 0;
}
