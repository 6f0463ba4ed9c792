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
// With small buffers it measures the caches instead (each thread's a, b and
// c fit its L2 at 256 KiB, both threads' fit the L3 at a few MiB): each
// measurement runs the kernel over the same buffers until it has moved
// 256 MiB per thread, so the buffers stay resident and starting the threads
// is a small part of the time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

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

}  // namespace

int main(int argc, char** argv) {
  size_t bytes = size_t(256) << 20;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--bytes") == 0 && i + 1 < argc) {
      bytes = std::strtoull(argv[++i], nullptr, 0);
    } else {
      std::fprintf(stderr, "usage: %s [--bytes N]\n", argv[0]);
      return 2;
    }
  }
  const size_t n = bytes / sizeof(float);
  // Per thread: its own a, b, c (as two ranks would have).
  std::vector<std::vector<float>> a(2, std::vector<float>(n, 1.0f)), b(2, std::vector<float>(n, 2.0f)),
      c(2, std::vector<float>(n, 0.0f));
  const size_t passes = std::max<size_t>(1, (size_t(256) << 20) / bytes);
  std::vector<double> copyRates, addRates;
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
      float* __restrict out = c[i].data();
      const float* x = a[i].data();
      const float* y = b[i].data();
      for (size_t p = 0; p < passes; ++p) {
        for (size_t k = 0; k < n; ++k) out[k] = x[k] + y[k];
        asm volatile("" ::: "memory");
      }
    });
    addRates.push_back(2.0 * bytes * passes / t / 1e9);
  }
  const double copy = median(copyRates), add = median(addRates);
  const double limit = 1.0 / (1.0 / add + 1.0 / copy);
  std::printf("# strata-membw: 2 threads, %zu KiB per buffer, %zu passes, median of 5\n", bytes >> 10, passes);
  std::printf("%-28s %8.2f GB/s\n", "memcpy (bytes copied)", copy);
  std::printf("%-28s %8.2f GB/s\n", "float32 c=a+b (output)", add);
  std::printf("limit_2rank_allreduce_GBps %.2f\n", limit);
  return 0;
}
