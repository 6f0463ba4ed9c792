// gloo-allreduce-perf: Gloo's TCP allreduce timed exactly as strata-perf
// times strata_allreduce (same rows and columns), for bench/compare-net.
//   RANK=0 WORLD_SIZE=2 GLOO_STORE=/tmp/dir GLOO_IFACE=eth0 gloo-allreduce-perf -b 8 -e 256M
// Ranks meet through a FileStore directory shared by all of them (ranks in
// network namespaces of one machine share the filesystem).
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

size_t parseSize(const char* text) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024;
  if (*end == 'K' || *end == 'k') v *= 1024.0;
  return static_cast<size_t>(v);
}

const char* envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

int main(int argc, char** argv) {
  size_t minBytes = 8, maxBytes = size_t(256) << 20;
  double step = 2;
  int iters = 20, warmup = 5, opt;
  while ((opt = getopt(argc, argv, "b:e:f:n:w:c:")) != -1) {
    switch (opt) {
      case 'b': minBytes = parseSize(optarg); break;
      case 'e': maxBytes = parseSize(optarg); break;
      case 'f': step = std::atof(optarg); break;
      case 'n': iters = std::atoi(optarg); break;
      case 'w': warmup = std::atoi(optarg); break;
      case 'c': break;  // results are checked below regardless
      default:
        std::fprintf(stderr, "usage: %s [-b min] [-e max] [-f step] [-n iters] [-w warmup]\n", argv[0]);
        return 2;
    }
  }
  const int rank = std::atoi(envOr("RANK", "0"));
  const int nranks = std::atoi(envOr("WORLD_SIZE", "1"));
  gloo::transport::tcp::attr attr;
  attr.iface = envOr("GLOO_IFACE", "");
  if (attr.iface.empty()) attr.hostname = envOr("GLOO_HOST", "127.0.0.1");
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(envOr("GLOO_STORE", "/tmp/gloo-store"));
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  context->connectFullMesh(store, device);

  std::vector<float> send(std::max<size_t>(maxBytes / 4, 1)), recv(send.size());
  for (size_t i = 0; i < send.size(); ++i) send[i] = static_cast<float>((i * 7 + rank * 3) % 11);
  auto allreduce = [&](float* out, size_t count) {
    gloo::AllreduceOptions opts(context);
    opts.setInput(send.data(), count);
    opts.setOutput(out, count);
    opts.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    gloo::allreduce(opts);
  };
  if (rank == 0) {
    std::printf("# gloo-allreduce-perf: gloo::allreduce over tcp, %d ranks\n#\n", nranks);
    std::printf("# %10s %12s %8s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop", "time",
                "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
  }
  const double factor = nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0;
  long wrongTotal = 0;
  for (double size = static_cast<double>(std::max<size_t>(minBytes, 4)); size <= static_cast<double>(maxBytes);
       size *= step) {
    const size_t count = static_cast<size_t>(size) / 4;
    for (int i = 0; i < warmup; ++i) allreduce(recv.data(), count);
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) allreduce(recv.data(), count);
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
    // The slowest rank's time, as strata-perf reports it.
    std::vector<float> times(nranks, 0.0f);
    {
      float mine = static_cast<float>(t);
      gloo::AllreduceOptions opts(context);
      opts.setInput(&mine, 1);
      opts.setOutput(times.data(), 1);
      opts.setReduceFunction(static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::max<float>));
      gloo::allreduce(opts);
      t = times[0];
    }
    long wrong = 0;
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int r = 0; r < nranks; ++r) want += static_cast<float>((i * 7 + r * 3) % 11);
      if (recv[i] != want) ++wrong;
    }
    wrongTotal += wrong;
    const double alg = count * 4.0 / t / 1e9;
    if (rank == 0)
      std::printf("  %10zu %12zu %8s %6s %9.2f %7.2f %7.2f %6ld %9s %7s %7s %6s\n", count * 4, count, "float", "sum",
                  t * 1e6, alg, alg * factor, wrong, "-", "-", "-", "-");
    std::fflush(stdout);
  }
  if (rank == 0) std::printf("# Out of bounds values : %ld %s\n", wrongTotal, wrongTotal ? "FAILED" : "OK");
  return wrongTotal ? 1 : 0;
}
