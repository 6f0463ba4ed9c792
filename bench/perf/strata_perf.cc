// strata-perf: the allreduce bandwidth/latency benchmark, with nccl-tests'
// flags and columns so results read side by side with all_reduce_perf.
//
//   strata-perf --ranks 2 -b 8 -e 256M -f 2      fork 2 local ranks
//   RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. strata-perf ...
//
// Written against the public C API only.
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "strata/strata.h"

namespace {

struct Options {
  size_t minBytes = 8;
  size_t maxBytes = 256u << 20;
  double stepFactor = 2;
  int iters = 20;
  int warmup = 5;
  int check = 1;
  strata_datatype_t datatype = STRATA_FLOAT32;
  strata_op_t op = STRATA_SUM;
  int ranks = 0;  // 0: join a launch from the environment
};

struct TypeName {
  const char* name;
  strata_datatype_t type;
};
// nccl-tests' names first (they are what -d prints), then aliases.
const TypeName kTypes[] = {
    {"int8", STRATA_INT8},       {"uint8", STRATA_UINT8},     {"int32", STRATA_INT32},
    {"uint32", STRATA_UINT32},   {"int64", STRATA_INT64},     {"uint64", STRATA_UINT64},
    {"half", STRATA_FLOAT16},    {"bfloat16", STRATA_BFLOAT16}, {"float", STRATA_FLOAT32},
    {"double", STRATA_FLOAT64},  {"float16", STRATA_FLOAT16}, {"float32", STRATA_FLOAT32},
    {"float64", STRATA_FLOAT64}, {"int", STRATA_INT32},
};
const char* kOpNames[] = {"sum", "prod", "min", "max", "avg"};

const char* typeName(strata_datatype_t t) {
  for (const auto& n : kTypes)
    if (n.type == t) return n.name;
  return "?";
}

bool parseSize(const char* text, size_t* out) {
  char* end = nullptr;
  double v = std::strtod(text, &end);
  if (end == text || v < 0) return false;
  switch (*end) {
    case 'G': case 'g': v *= 1024.0 * 1024 * 1024; ++end; break;
    case 'M': case 'm': v *= 1024.0 * 1024; ++end; break;
    case 'K': case 'k': v *= 1024.0; ++end; break;
    default: break;
  }
  if (*end != '\0') return false;
  *out = static_cast<size_t>(v);
  return true;
}

[[noreturn]] void usage(const char* argv0, int code) {
  std::fprintf(code ? stderr : stdout,
               "usage: %s [--ranks N] [-b minbytes] [-e maxbytes] [-f stepfactor] [-n iters]\n"
               "          [-w warmup_iters] [-c 0|1] [-d datatype] [-o op]\n"
               "  --ranks N           fork N local ranks (else join via RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT)\n"
               "  -b/--minbytes       smallest size in bytes (K/M/G suffixes), default 8\n"
               "  -e/--maxbytes       largest size, default 256M\n"
               "  -f/--stepfactor     multiply the size by this each row, default 2\n"
               "  -n/--iters          timed iterations per size, default 20\n"
               "  -w/--warmup_iters   untimed iterations first, default 5\n"
               "  -c/--check          check results against a reference, default 1\n"
               "  -d/--datatype       int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double\n"
               "  -o/--op             sum prod min max avg\n",
               argv0);
  std::exit(code);
}

Options parseOptions(int argc, char** argv) {
  Options o;
  static const option longOpts[] = {
      {"minbytes", required_argument, nullptr, 'b'}, {"maxbytes", required_argument, nullptr, 'e'},
      {"stepfactor", required_argument, nullptr, 'f'}, {"iters", required_argument, nullptr, 'n'},
      {"warmup_iters", required_argument, nullptr, 'w'}, {"check", required_argument, nullptr, 'c'},
      {"datatype", required_argument, nullptr, 'd'}, {"op", required_argument, nullptr, 'o'},
      {"ranks", required_argument, nullptr, 'R'}, {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:n:w:c:d:o:h", longOpts, nullptr)) != -1) {
    bool ok = true;
    switch (c) {
      case 'b': ok = parseSize(optarg, &o.minBytes); break;
      case 'e': ok = parseSize(optarg, &o.maxBytes); break;
      case 'f': o.stepFactor = std::atof(optarg); ok = o.stepFactor > 1; break;
      case 'n': o.iters = std::atoi(optarg); ok = o.iters > 0; break;
      case 'w': o.warmup = std::atoi(optarg); ok = o.warmup >= 0; break;
      case 'c': o.check = std::atoi(optarg); ok = o.check == 0 || o.check == 1; break;
      case 'R': o.ranks = std::atoi(optarg); ok = o.ranks > 0 && o.ranks <= 1024; break;
      case 'd': {
        ok = false;
        for (const auto& t : kTypes)
          if (std::strcmp(optarg, t.name) == 0) { o.datatype = t.type; ok = true; }
        break;
      }
      case 'o': {
        ok = false;
        for (int i = 0; i < STRATA_NUM_OPS; ++i)
          if (std::strcmp(optarg, kOpNames[i]) == 0) { o.op = static_cast<strata_op_t>(i); ok = true; }
        break;
      }
      case 'h': usage(argv[0], 0);
      default: usage(argv[0], 2);
    }
    if (!ok) {
      if (c == 'R') std::fprintf(stderr, "%s: bad value '%s' for --ranks\n", argv[0], optarg);
      else std::fprintf(stderr, "%s: bad value '%s' for -%c\n", argv[0], optarg, c);
      usage(argv[0], 2);
    }
  }
  if (optind < argc) usage(argv[0], 2);
  if (o.minBytes > o.maxBytes) {
    std::fprintf(stderr, "%s: -b (%zu) is larger than -e (%zu)\n", argv[0], o.minBytes, o.maxBytes);
    std::exit(2);
  }
  return o;
}

// ---- inputs and the independent expected result ----

// Small integers, so every sum and product is exact in every datatype.
double inputValue(int rank, size_t i, strata_op_t op) {
  if (op == STRATA_PROD) return (rank < 6 && (i + rank) % 5 == 0) ? 2.0 : 1.0;
  return static_cast<double>((i * 7 + rank * 3) % 11) + 1.0;
}

double expectedValue(int nranks, size_t i, strata_op_t op, strata_datatype_t dt) {
  double acc = inputValue(0, i, op);
  for (int r = 1; r < nranks; ++r) {
    double v = inputValue(r, i, op);
    if (op == STRATA_SUM || op == STRATA_AVG) acc += v;
    else if (op == STRATA_PROD) acc *= v;
    else if (op == STRATA_MIN) acc = std::min(acc, v);
    else acc = std::max(acc, v);
  }
  if (op != STRATA_AVG) return acc;
  bool integer = dt <= STRATA_UINT64;
  return integer ? std::trunc(acc / nranks) : acc / nranks;
}

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

float fromBf16(uint16_t b) {
  uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float fromHalf(uint16_t h) {
  int exp = (h >> 10) & 31, mant = h & 1023;
  float v = exp == 0 ? std::ldexp(static_cast<float>(mant), -24) : std::ldexp(static_cast<float>(1024 + mant), exp - 25);
  return (h & 0x8000) ? -v : v;
}

// Inputs are small integers: exact in half, so plain scaling encodes them.
uint16_t toHalfInt(double v) {
  if (v == 0) return 0;
  int e;
  double m = std::frexp(v, &e);  // v = m * 2^e, m in [0.5, 1)
  return static_cast<uint16_t>(((e + 14) << 10) | (static_cast<int>(m * 2048) & 1023));
}

void store(void* buf, size_t i, double v, strata_datatype_t dt) {
  switch (dt) {
    case STRATA_INT8: static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v); break;
    case STRATA_UINT8: static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v); break;
    case STRATA_INT32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case STRATA_UINT32: static_cast<uint32_t*>(buf)[i] = static_cast<uint32_t>(v); break;
    case STRATA_INT64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
    case STRATA_UINT64: static_cast<uint64_t*>(buf)[i] = static_cast<uint64_t>(v); break;
    case STRATA_FLOAT16: static_cast<uint16_t*>(buf)[i] = toHalfInt(v); break;
    case STRATA_BFLOAT16: static_cast<uint16_t*>(buf)[i] = toBf16(static_cast<float>(v)); break;
    case STRATA_FLOAT32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    default: static_cast<double*>(buf)[i] = v; break;
  }
}

bool matches(const void* buf, size_t i, double want, strata_datatype_t dt) {
  switch (dt) {
    case STRATA_INT8: return static_cast<const int8_t*>(buf)[i] == static_cast<int8_t>(want);
    case STRATA_UINT8: return static_cast<const uint8_t*>(buf)[i] == static_cast<uint8_t>(want);
    case STRATA_INT32: return static_cast<const int32_t*>(buf)[i] == static_cast<int32_t>(want);
    case STRATA_UINT32: return static_cast<const uint32_t*>(buf)[i] == static_cast<uint32_t>(want);
    case STRATA_INT64: return static_cast<const int64_t*>(buf)[i] == static_cast<int64_t>(want);
    case STRATA_UINT64: return static_cast<const uint64_t*>(buf)[i] == static_cast<uint64_t>(want);
    // Floats: sums, products, min and max of these inputs are exact; an
    // average is rounded once, so allow one unit in the last place.
    case STRATA_FLOAT16: return std::fabs(fromHalf(static_cast<const uint16_t*>(buf)[i]) - want) <= std::fabs(want) * 0x1p-10;
    case STRATA_BFLOAT16: return std::fabs(fromBf16(static_cast<const uint16_t*>(buf)[i]) - want) <= std::fabs(want) * 0x1p-7;
    case STRATA_FLOAT32: return std::fabs(static_cast<const float*>(buf)[i] - want) <= std::fabs(want) * 0x1p-23;
    default: return std::fabs(static_cast<const double*>(buf)[i] - want) <= std::fabs(want) * 0x1p-52;
  }
}

// ---- one rank's run ----

struct Fail {};

void must(strata_result_t rc, strata_comm_t comm, const char* what) {
  if (rc == STRATA_SUCCESS) return;
  int rank = -1;
  strata_comm_rank(comm, &rank);
  std::fprintf(stderr, "strata-perf: rank %d: %s failed: %s: %s\n", rank, what, strata_result_string(rc),
               strata_comm_last_error(comm));
  throw Fail();
}

double maxAcrossRanks(double v, strata_comm_t comm) {
  must(strata_allreduce(&v, &v, 1, STRATA_FLOAT64, STRATA_MAX, comm), comm, "allreduce(max)");
  return v;
}

void barrier(strata_comm_t comm) { maxAcrossRanks(0, comm); }

double timeAllreduce(const void* send, void* recv, size_t count, const Options& o, strata_comm_t comm) {
  for (int i = 0; i < o.warmup; ++i)
    must(strata_allreduce(send, recv, count, o.datatype, o.op, comm), comm, "allreduce");
  barrier(comm);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i)
    must(strata_allreduce(send, recv, count, o.datatype, o.op, comm), comm, "allreduce");
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return maxAcrossRanks(elapsed.count() / o.iters, comm);
}

// Runs one checked allreduce; returns the number of wrong elements on all ranks.
long checkAllreduce(void* send, void* recv, size_t count, bool inPlace, int rank, int nranks,
                    const Options& o, strata_comm_t comm) {
  for (size_t i = 0; i < count; ++i) store(send, i, inputValue(rank, i, o.op), o.datatype);
  void* out = inPlace ? send : recv;
  must(strata_allreduce(send, out, count, o.datatype, o.op, comm), comm, "allreduce");
  double wrong = 0;
  for (size_t i = 0; i < count; ++i)
    if (!matches(out, i, expectedValue(nranks, i, o.op, o.datatype), o.datatype)) wrong += 1;
  must(strata_allreduce(&wrong, &wrong, 1, STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce(sum)");
  return static_cast<long>(wrong);
}

int runRank(const Options& o, strata_comm_t comm) {
  int rank = 0, nranks = 0;
  strata_comm_rank(comm, &rank);
  strata_comm_size(comm, &nranks);
  const size_t elem = strata_datatype_size(o.datatype);
  const size_t maxCount = o.maxBytes / elem;
  void* send = nullptr;
  void* recv = nullptr;
  if (posix_memalign(&send, 64, std::max<size_t>(maxCount * elem, 64)) != 0 ||
      posix_memalign(&recv, 64, std::max<size_t>(maxCount * elem, 64)) != 0) {
    std::fprintf(stderr, "strata-perf: cannot allocate %zu bytes\n", o.maxBytes);
    return 1;
  }
  std::memset(send, 0, maxCount * elem);  // touch every page before timing
  std::memset(recv, 0, maxCount * elem);
  for (size_t i = 0; i < maxCount; ++i) store(send, i, inputValue(rank, i, o.op), o.datatype);

  if (rank == 0) {
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    std::printf("# strata-perf: allreduce, %d ranks, host %s, pid %d\n#\n", nranks, host, getpid());
    std::printf("# %10s %12s %8s %6s   %s   %s\n", "", "", "", "", "               out-of-place", "                in-place");
    std::printf("# %10s %12s %8s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop",
                "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    std::printf("# %10s %12s %8s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n", "(B)", "(elements)", "", "",
                "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    std::fflush(stdout);
  }

  long totalWrong = 0;
  double busSum = 0;
  int rows = 0;
  const double busFactor = nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0.0;
  // -b 0 would never grow; start at one byte (rows under one element are skipped).
  for (double size = static_cast<double>(std::max<size_t>(o.minBytes, 1)); size <= static_cast<double>(o.maxBytes);
       size *= o.stepFactor) {
    const size_t count = static_cast<size_t>(size) / elem;
    if (count == 0) continue;
    const size_t bytes = count * elem;
    double tOut = timeAllreduce(send, recv, count, o, comm);
    long wrongOut = o.check ? checkAllreduce(send, recv, count, false, rank, nranks, o, comm) : -1;
    std::memcpy(recv, send, bytes);
    double tIn = timeAllreduce(recv, recv, count, o, comm);
    long wrongIn = o.check ? checkAllreduce(recv, recv, count, true, rank, nranks, o, comm) : -1;
    // Restore the inputs the next row times with.
    for (size_t i = 0; i < count; ++i) store(send, i, inputValue(rank, i, o.op), o.datatype);
    totalWrong += std::max(0L, wrongOut) + std::max(0L, wrongIn);
    double algOut = bytes / tOut / 1e9, algIn = bytes / tIn / 1e9;
    busSum += (algOut + algIn) / 2 * busFactor;
    ++rows;
    if (rank == 0) {
      char wOut[16], wIn[16];
      std::snprintf(wOut, sizeof(wOut), o.check ? "%ld" : "N/A", wrongOut);
      std::snprintf(wIn, sizeof(wIn), o.check ? "%ld" : "N/A", wrongIn);
      std::printf("  %10zu %12zu %8s %6s %9.2f %7.2f %7.2f %6s %9.2f %7.2f %7.2f %6s\n", bytes, count,
                  typeName(o.datatype), kOpNames[o.op], tOut * 1e6, algOut, algOut * busFactor, wOut,
                  tIn * 1e6, algIn, algIn * busFactor, wIn);
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %ld %s\n", totalWrong, totalWrong ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %.4g \n#\n", rows ? busSum / rows : 0.0);
    std::fflush(stdout);
  }
  std::free(send);
  std::free(recv);
  return totalWrong ? 1 : 0;
}

int runWithComm(const Options& o, strata_comm_t comm) {
  int rc;
  try {
    rc = runRank(o, comm);
  } catch (const Fail&) {
    rc = 1;
  }
  strata_comm_destroy(comm);
  return rc;
}

int forkRanks(const Options& o) {
  strata_unique_id_t id;
  if (strata_get_unique_id(&id) != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata-perf: strata_get_unique_id: %s\n", strata_last_error());
    return 1;
  }
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("strata-perf: fork");
      // The ranks already started would wait for the missing ones until
      // STRATA_TIMEOUT; stop them now.
      for (pid_t started : pids) kill(started, SIGTERM);
      for (pid_t started : pids) waitpid(started, nullptr, 0);
      return 1;
    }
    if (pid == 0) {
      strata_comm_t comm;
      int rc = 1;
      if (strata_comm_init_rank(&comm, o.ranks, id, r) == STRATA_SUCCESS)
        rc = runWithComm(o, comm);  // reports its own errors
      else
        std::fprintf(stderr, "strata-perf: rank %d: strata_comm_init_rank: %s\n", r, strata_last_error());
      std::fflush(stdout);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (int r = 0; r < o.ranks; ++r) {
    int status = 0;
    if (waitpid(pids[r], &status, 0) < 0) {
      std::perror("strata-perf: waitpid");
      failed = 1;
    } else if (WIFSIGNALED(status)) {
      std::fprintf(stderr, "strata-perf: rank %d (pid %d) killed by signal %d (%s)\n", r, pids[r],
                   WTERMSIG(status), strsignal(WTERMSIG(status)));
      failed = 1;
    } else if (WEXITSTATUS(status) != 0) {
      failed = 1;
    }
  }
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parseOptions(argc, argv);
  if (o.ranks > 0) return forkRanks(o);
  strata_comm_t comm;
  if (strata_comm_init_env(&comm) != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata-perf: %s\n(use --ranks N to fork local ranks, or set RANK, WORLD_SIZE, "
                 "MASTER_ADDR and MASTER_PORT)\n", strata_last_error());
    return 1;
  }
  return runWithComm(o, comm);
}
