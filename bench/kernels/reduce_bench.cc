// Reduction kernels against memcpy, in bytes read plus written per second:
// sum reads two inputs and writes one output, memcpy reads one and writes
// one, so the two rates compare the memory traffic each sustains.
//   build/bench/kernels/strata-reduce-bench [--benchmark_filter=float32]
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "kernels.h"

namespace {

using strata::kernels::Isa;

const char* kTypeNames[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64"};
const char* kOpNames[] = {"sum", "prod", "min", "max", "avg"};

struct Buffers {
  std::vector<char> a, b, out;
  explicit Buffers(size_t bytes) : a(bytes, 1), b(bytes, 2), out(bytes, 0) {}
};

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  Buffers buf(bytes);
  for (auto _ : state) {
    std::memcpy(buf.out.data(), buf.a.data(), bytes);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes * 2);
}

void BM_NonTemporalCopy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  Buffers buf(bytes);
  for (auto _ : state) {
    strata::kernels::copy(buf.out.data(), buf.a.data(), bytes, true);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes * 2);
}

// range(0): bytes, range(1): datatype, range(2): op
void BM_Reduce(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  const auto dt = static_cast<strata_datatype_t>(state.range(1));
  const auto op = static_cast<strata_op_t>(state.range(2));
  const Isa isa = strata::kernels::selectedIsa();
  const size_t count = bytes / strata_datatype_size(dt);
  Buffers buf(bytes);
  auto fn = strata::kernels::kernel(dt, op, isa);
  for (auto _ : state) {
    fn(buf.out.data(), buf.a.data(), buf.b.data(), count);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes * 3);
  state.SetLabel(std::string(kTypeNames[dt]) + " " + kOpNames[op] + " " + strata::kernels::isaName(isa));
}

constexpr int64_t kBig = 64 << 20;

BENCHMARK(BM_Memcpy)->Arg(64 << 10)->Arg(1 << 20)->Arg(kBig)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_NonTemporalCopy)->Arg(kBig)->Unit(benchmark::kMicrosecond);
// float32 sum at three sizes.
BENCHMARK(BM_Reduce)
    ->Args({64 << 10, STRATA_FLOAT32, STRATA_SUM})
    ->Args({1 << 20, STRATA_FLOAT32, STRATA_SUM})
    ->Args({kBig, STRATA_FLOAT32, STRATA_SUM})
    ->Unit(benchmark::kMicrosecond);
// Every datatype and op at 64 MiB.
BENCHMARK(BM_Reduce)
    ->ArgsProduct({{kBig}, benchmark::CreateDenseRange(0, STRATA_NUM_DATATYPES - 1, 1),
                   benchmark::CreateDenseRange(0, STRATA_NUM_OPS - 1, 1)})
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
