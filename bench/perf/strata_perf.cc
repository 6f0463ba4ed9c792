// strata-perf: the collectives' bandwidth/latency benchmark, with nccl-tests'
// flags and columns so results read side by side with all_reduce_perf,
// all_gather_perf, ... (size is the whole buffer, as there; busbw applies
// nccl-tests' factor for each collective).
//
//   strata-perf --ranks 2 -b 8 -e 256M -f 2      allreduce on 2 forked local ranks
//   strata-perf all_gather --ranks 4 ...         another collective
//   strata-perf --all --ranks 2 ...              every collective in turn
//   RANK=.. WORLD_SIZE=.. MASTER_ADDR=.. MASTER_PORT=.. strata-perf ...
//
// Written against the public C API only.
#include <dirent.h>
#include <getopt.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "strata/strata.h"
#include "../pin/pin.h"

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
  int root = 0;
  int agg = 1;    // calls per timed iteration, issued in one group (nccl-tests' -m)
  bool showAlgo = false;  // -A: an algorithm column
  bool resources = false; // --resources: what each rank's init, first call and process cost
  int ranks = 0;  // 0: join a launch from the environment
  bool bind = false;  // --bind: pin each forked rank to a cpu
  bool poll = false;  // --poll: non-blocking calls finished by polling strata_test
  std::vector<int> colls;  // indexes into kColls
};

enum class Kind { AllReduce, Broadcast, Reduce, AllGather, ReduceScatter, AllToAll, SendRecv, Barrier };

struct CollInfo {
  const char* name;  // nccl-tests' binary name without _perf
  Kind kind;
  const char* apiName;  // for strata_comm_algorithm; null: point-to-point
  double busFactor(int n) const {  // nccl-tests' busbw / algbw
    if (n <= 1) return kind == Kind::Broadcast || kind == Kind::Reduce || kind == Kind::SendRecv ? 1 : 0;
    switch (kind) {
      case Kind::AllReduce: return 2.0 * (n - 1) / n;
      case Kind::AllGather: case Kind::ReduceScatter: case Kind::AllToAll: return double(n - 1) / n;
      default: return 1;
    }
  }
  bool perRankBlocks() const {
    return kind == Kind::AllGather || kind == Kind::ReduceScatter || kind == Kind::AllToAll;
  }
  bool reduces() const {
    return kind == Kind::AllReduce || kind == Kind::Reduce || kind == Kind::ReduceScatter;
  }
  bool hasInPlace() const { return kind != Kind::AllToAll && kind != Kind::SendRecv && kind != Kind::Barrier; }
  // No buffer: one row, of size 0, whatever -b and -e say.
  bool sizeless() const { return kind == Kind::Barrier; }
};

const CollInfo kColls[] = {
    {"all_reduce", Kind::AllReduce, "allreduce"},  {"broadcast", Kind::Broadcast, "broadcast"},
    {"reduce", Kind::Reduce, "reduce"},             {"all_gather", Kind::AllGather, "allgather"},
    {"reduce_scatter", Kind::ReduceScatter, "reduce_scatter"}, {"alltoall", Kind::AllToAll, "alltoall"},
    {"sendrecv", Kind::SendRecv, nullptr},          {"barrier", Kind::Barrier, nullptr},
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
               "usage: %s [collective | --all] [--ranks N] [-b minbytes] [-e maxbytes] [-f stepfactor]\n"
               "          [-n iters] [-w warmup_iters] [-c 0|1] [-d datatype] [-o op] [-r root]\n"
               "  collective          all_reduce (default), broadcast, reduce, all_gather, reduce_scatter,\n"
               "                      alltoall, sendrecv, barrier (one row, size 0); --all runs each in turn\n"
               "  --ranks N           fork N local ranks (else join the launcher's job: mpirun/srun, or RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT)\n"
               "  --bind              with --ranks: pin rank r to cpu r*C/N of the C in the affinity mask (consecutive\n"
               "                      ranks share a cpu), as mpirun --bind-to core pins its ranks\n"
               "  -b/--minbytes       smallest size in bytes (K/M/G suffixes), default 8\n"
               "  -e/--maxbytes       largest size, default 256M\n"
               "  -f/--stepfactor     multiply the size by this each row, default 2\n"
               "  -n/--iters          timed iterations per size, default 20\n"
               "  -w/--warmup_iters   untimed iterations first, default 5\n"
               "  -c/--check          check results against a reference, default 1\n"
               "  -d/--datatype       int8 uint8 int32 uint32 int64 uint64 half bfloat16 float double\n"
               "  -o/--op             sum prod min max avg\n"
               "  -r/--root           root of broadcast and reduce, default 0\n"
               "  -m/--agg_iters      calls per iteration, issued in one group (fused when small), default 1\n"
               "  -A/--show_algo      add a column with the algorithm and channels each row used\n"
               "  --poll              issue each timed call non-blocking (strata_iallreduce, ...; -m of them\n"
               "                      back to back, not grouped) and finish it by polling strata_test\n"
               "  --resources         after the table, each rank's init time, first 8-byte allreduce, open\n"
               "                      files, threads, RSS and what strata holds for transfers\n"
               "                      (strata_comm_memory): the largest and the mean over the ranks\n",
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
      {"root", required_argument, nullptr, 'r'}, {"all", no_argument, nullptr, 'L'},
      {"agg_iters", required_argument, nullptr, 'm'}, {"show_algo", no_argument, nullptr, 'a'},
      {"resources", no_argument, nullptr, 'U'}, {"bind", no_argument, nullptr, 'B'},
      {"poll", no_argument, nullptr, 'P'},
      {nullptr, 0, nullptr, 0}};
  int c;
  bool all = false;
  while ((c = getopt_long(argc, argv, "b:e:f:n:w:c:d:o:r:m:Ah", longOpts, nullptr)) != -1) {
    bool ok = true;
    switch (c) {
      case 'b': ok = parseSize(optarg, &o.minBytes); break;
      case 'e': ok = parseSize(optarg, &o.maxBytes); break;
      case 'f': o.stepFactor = std::atof(optarg); ok = o.stepFactor > 1; break;
      case 'n': o.iters = std::atoi(optarg); ok = o.iters > 0; break;
      case 'w': o.warmup = std::atoi(optarg); ok = o.warmup >= 0; break;
      case 'c': o.check = std::atoi(optarg); ok = o.check == 0 || o.check == 1; break;
      case 'R': o.ranks = std::atoi(optarg); ok = o.ranks > 0 && o.ranks <= 1024; break;
      case 'r': o.root = std::atoi(optarg); ok = o.root >= 0; break;
      case 'm': o.agg = std::atoi(optarg); ok = o.agg >= 1 && o.agg <= 1024; break;
      case 'A': case 'a': o.showAlgo = true; break;
      case 'L': all = true; break;
      case 'U': o.resources = true; break;
      case 'B': o.bind = true; break;
      case 'P': o.poll = true; break;
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
  for (; optind < argc; ++optind) {
    int found = -1;
    for (int i = 0; i < int(sizeof(kColls) / sizeof(kColls[0])); ++i)
      if (std::strcmp(argv[optind], kColls[i].name) == 0) found = i;
    if (found < 0) {
      std::fprintf(stderr, "%s: unknown collective '%s'\n", argv[0], argv[optind]);
      usage(argv[0], 2);
    }
    o.colls.push_back(found);
  }
  if (all)
    for (int i = 0; i < int(sizeof(kColls) / sizeof(kColls[0])); ++i) o.colls.push_back(i);
  if (o.colls.empty()) o.colls.push_back(0);
  if (o.minBytes > o.maxBytes) {
    std::fprintf(stderr, "%s: -b (%zu) is larger than -e (%zu)\n", argv[0], o.minBytes, o.maxBytes);
    std::exit(2);
  }
  if (o.bind && o.ranks == 0) {
    std::fprintf(stderr, "%s: --bind pins the ranks --ranks forks; under a launcher, bind with it (mpirun "
                 "--bind-to core)\n", argv[0]);
    std::exit(2);
  }
  return o;
}

// "hd/2": the algorithm strata runs this row with, and its channels.
std::string algorithmOf(strata_comm_t comm, const CollInfo& coll, size_t count, strata_datatype_t datatype) {
  if (!coll.apiName) return coll.sizeless() ? "-" : "p2p";
  char name[32];
  int channels = 0;
  if (strata_comm_algorithm(comm, coll.apiName, count, datatype, name, sizeof(name), &channels) != STRATA_SUCCESS)
    return "?";
  return std::string(name) + "/" + std::to_string(channels);
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

// The buffers of one call: `count` elements in all (nccl-tests' size), `block`
// of them per rank for the collectives that split the buffer by rank.
struct Call {
  const CollInfo* coll;
  size_t count;
  size_t block;
  int rank;
  int nranks;
};

// Issues one call: blocking, or with `req` non-blocking (its request there;
// a send and receive pair fills req[0] and req[1]).
strata_result_t issue(const Call& c, void* send, void* recv, bool inPlace, const Options& o, strata_comm_t comm,
                      strata_request_t* req) {
  const size_t elem = strata_datatype_size(o.datatype);
  char* out = static_cast<char*>(inPlace ? send : recv);
  switch (c.coll->kind) {
    case Kind::AllReduce:
      return req ? strata_iallreduce(send, out, c.count, o.datatype, o.op, comm, req)
                 : strata_allreduce(send, out, c.count, o.datatype, o.op, comm);
    case Kind::Broadcast:
      return req ? strata_ibroadcast(send, out, c.count, o.datatype, o.root, comm, req)
                 : strata_broadcast(send, out, c.count, o.datatype, o.root, comm);
    case Kind::Reduce:
      return req ? strata_ireduce(send, out, c.count, o.datatype, o.op, o.root, comm, req)
                 : strata_reduce(send, out, c.count, o.datatype, o.op, o.root, comm);
    case Kind::AllGather: {  // in place: the own block already sits in the output
      const void* in = inPlace ? static_cast<char*>(recv) + c.rank * c.block * elem : send;
      return req ? strata_iallgather(in, recv, c.block, o.datatype, comm, req)
                 : strata_allgather(in, recv, c.block, o.datatype, comm);
    }
    case Kind::ReduceScatter: {
      void* to = inPlace ? static_cast<char*>(send) + c.rank * c.block * elem : recv;
      return req ? strata_ireduce_scatter(send, to, c.block, o.datatype, o.op, comm, req)
                 : strata_reduce_scatter(send, to, c.block, o.datatype, o.op, comm);
    }
    case Kind::AllToAll:
      return req ? strata_ialltoall(send, recv, c.block, o.datatype, comm, req)
                 : strata_alltoall(send, recv, c.block, o.datatype, comm);
    case Kind::SendRecv: {
      const int next = (c.rank + 1) % c.nranks, prev = (c.rank + c.nranks - 1) % c.nranks;
      if (req) {
        strata_result_t rc = strata_isend(send, c.count, o.datatype, next, comm, &req[0]);
        return rc != STRATA_SUCCESS ? rc : strata_irecv(recv, c.count, o.datatype, prev, comm, &req[1]);
      }
      strata_group_start();
      strata_send(send, c.count, o.datatype, next, comm);
      strata_recv(recv, c.count, o.datatype, prev, comm);
      return strata_group_end();
    }
    case Kind::Barrier:
      return req ? strata_ibarrier(comm, req) : strata_barrier(comm);
  }
  return STRATA_ERR_INVALID_ARGUMENT;
}

// Polls strata_test until the request is done, as a caller that overlaps
// its own work with the call does.
strata_result_t pollUntilDone(strata_request_t req) {
  int done = 0;
  strata_result_t rc = STRATA_SUCCESS;
  while (!done && rc == STRATA_SUCCESS) rc = strata_test(req, &done);
  return rc;
}

// `n` calls, each finished before this returns: blocking (several in one
// group), or with --poll each issued non-blocking, then each polled to its end.
void calls(int n, const Call& c, void* send, void* recv, bool inPlace, const Options& o, strata_comm_t comm) {
  if (o.poll) {
    std::vector<strata_request_t> reqs(2 * static_cast<size_t>(n), nullptr);
    for (int k = 0; k < n; ++k) must(issue(c, send, recv, inPlace, o, comm, &reqs[2 * k]), comm, c.coll->name);
    for (strata_request_t r : reqs)
      if (r) must(pollUntilDone(r), comm, "strata_test");
    return;
  }
  if (n == 1) return must(issue(c, send, recv, inPlace, o, comm, nullptr), comm, c.coll->name);
  must(strata_group_start(), comm, "group start");
  for (int k = 0; k < n; ++k) must(issue(c, send, recv, inPlace, o, comm, nullptr), comm, c.coll->name);
  must(strata_group_end(), comm, "group end");
}

// Seconds per call (the slowest rank's mean), as nccl-tests reports with -m.
double timeCall(const Call& c, void* send, void* recv, bool inPlace, const Options& o, strata_comm_t comm) {
  for (int i = 0; i < o.warmup; ++i) calls(o.agg, c, send, recv, inPlace, o, comm);
  barrier(comm);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) calls(o.agg, c, send, recv, inPlace, o, comm);
  std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  return maxAcrossRanks(elapsed.count() / (double(o.iters) * o.agg), comm);
}

// This rank's inputs where the call reads them: sendbuf, and for an in-place
// allgather also the own block of recvbuf.
void fillInputs(const Call& c, void* send, void* recv, bool inPlace, const Options& o) {
  for (size_t i = 0; i < c.count; ++i) store(send, i, inputValue(c.rank, i, o.op), o.datatype);
  if (inPlace && c.coll->kind == Kind::AllGather) {
    const size_t blockBytes = c.block * strata_datatype_size(o.datatype);
    std::memcpy(static_cast<char*>(recv) + c.rank * blockBytes, send, blockBytes);
  }
}

// Runs one checked call on fresh inputs; returns the number of wrong elements
// on all ranks.
long checkCall(const Call& c, void* send, void* recv, bool inPlace, const Options& o, strata_comm_t comm) {
  const size_t elem = strata_datatype_size(o.datatype);
  fillInputs(c, send, recv, inPlace, o);
  char* out = static_cast<char*>(inPlace && c.coll->kind != Kind::AllGather ? send : recv);
  if (inPlace && c.coll->kind == Kind::ReduceScatter) out += c.rank * c.block * elem;
  calls(1, c, send, recv, inPlace, o, comm);
  double wrong = 0;
  auto expect = [&](size_t i, double want) { wrong += matches(out, i, want, o.datatype) ? 0 : 1; };
  switch (c.coll->kind) {
    case Kind::AllReduce:
      for (size_t i = 0; i < c.count; ++i) expect(i, expectedValue(c.nranks, i, o.op, o.datatype));
      break;
    case Kind::Broadcast:
      for (size_t i = 0; i < c.count; ++i) expect(i, inputValue(o.root, i, o.op));
      break;
    case Kind::Reduce:
      if (c.rank == o.root)
        for (size_t i = 0; i < c.count; ++i) expect(i, expectedValue(c.nranks, i, o.op, o.datatype));
      break;
    case Kind::AllGather:
      for (int p = 0; p < c.nranks; ++p)
        for (size_t i = 0; i < c.block; ++i) expect(p * c.block + i, inputValue(p, i, o.op));
      break;
    case Kind::ReduceScatter:
      for (size_t i = 0; i < c.block; ++i)
        expect(i, expectedValue(c.nranks, c.rank * c.block + i, o.op, o.datatype));
      break;
    case Kind::AllToAll:
      for (int p = 0; p < c.nranks; ++p)
        for (size_t i = 0; i < c.block; ++i) expect(p * c.block + i, inputValue(p, c.rank * c.block + i, o.op));
      break;
    case Kind::SendRecv:
      for (size_t i = 0; i < c.count; ++i) expect(i, inputValue((c.rank + c.nranks - 1) % c.nranks, i, o.op));
      break;
    case Kind::Barrier:  // nothing to compare; a failed call fails the run
      break;
  }
  must(strata_allreduce(&wrong, &wrong, 1, STRATA_FLOAT64, STRATA_SUM, comm), comm, "allreduce(sum)");
  return static_cast<long>(wrong);
}

// "# transports: ib 0-1 2-3; shm 0-2 1-3" (pairs listed up to 16 ranks,
// counted beyond), from every rank's view of its own peers.
void printTransports(strata_comm_t comm, int rank, int nranks) {
  constexpr size_t kName = 8;
  const bool everyone = nranks <= 256;  // beyond: rank 0's own peers only
  std::vector<char> mine(nranks * kName, 0), all(everyone ? size_t(nranks) * nranks * kName : 0);
  for (int p = 0; p < nranks; ++p) must(strata_comm_peer_transport(comm, p, &mine[p * kName], kName), comm, "peer_transport");
  if (everyone) must(strata_allgather(mine.data(), all.data(), mine.size(), STRATA_UINT8, comm), comm, "allgather");
  if (rank != 0) return;
  std::map<std::string, std::vector<std::string>> pairs;
  for (int a = 0; a < (everyone ? nranks : 1); ++a)
    for (int b = a + 1; b < nranks; ++b)
      pairs[everyone ? &all[(size_t(a) * nranks + b) * kName] : &mine[b * kName]].push_back(
          std::to_string(a) + "-" + std::to_string(b));
  std::string line = "# transports:";
  for (const auto& [name, list] : pairs) {
    line += " " + name;
    if (nranks <= 16)
      for (const auto& pair : list) line += " " + pair;
    else
      line += " (" + std::to_string(list.size()) + " pairs)";
    line += ";";
  }
  if (!pairs.empty()) line.pop_back();
  std::printf("%s\n", line.c_str());
}

int runCollective(const CollInfo& coll, const Options& o, strata_comm_t comm, void* send, void* recv) {
  int rank = 0, nranks = 0;
  strata_comm_rank(comm, &rank);
  strata_comm_size(comm, &nranks);
  const size_t elem = strata_datatype_size(o.datatype);
  if ((coll.kind == Kind::Broadcast || coll.kind == Kind::Reduce) && o.root >= nranks) {
    if (rank == 0) std::fprintf(stderr, "strata-perf: -r %d is not a rank (%d ranks)\n", o.root, nranks);
    return 1;
  }
  if (rank == 0) {
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    std::printf("# strata-perf: %s, %d ranks, host %s, pid %d\n", coll.name, nranks, host, getpid());
  }
  if (nranks > 1) printTransports(comm, rank, nranks);
  if (rank == 0) {
    std::printf("#\n");
    std::printf("# %10s %12s %8s %6s %5s   %s   %s\n", "", "", "", "", "", "               out-of-place",
                "                in-place");
    std::printf("# %10s %12s %8s %6s %5s %9s %7s %7s %6s %9s %7s %7s %6s%s\n", "size", "count", "type", "redop",
                "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
                o.showAlgo ? "  algo" : "");
    std::printf("# %10s %12s %8s %6s %5s %9s %7s %7s %6s %9s %7s %7s %6s%s\n", "(B)", "(elements)", "", "", "",
                "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", o.showAlgo ? "  (channels)" : "");
    std::fflush(stdout);
  }

  long totalWrong = 0;
  double busSum = 0;
  int rows = 0;
  const double busFactor = coll.busFactor(nranks);
  const bool rooted = coll.kind == Kind::Broadcast || coll.kind == Kind::Reduce;
  // -b 0 would never grow; start at one byte (rows under one element are
  // skipped). A sizeless collective has the first row alone.
  const double first = static_cast<double>(std::max<size_t>(o.minBytes, 1));
  const double last = coll.sizeless() ? first : static_cast<double>(o.maxBytes);
  for (double size = first; size <= last; size *= o.stepFactor) {
    size_t count = coll.sizeless() ? 0 : static_cast<size_t>(size) / elem;
    if (coll.perRankBlocks()) count = count / nranks * nranks;
    if (count == 0 && !coll.sizeless()) continue;
    Call c{&coll, count, coll.perRankBlocks() ? count / nranks : count, rank, nranks};
    const size_t bytes = count * elem;
    fillInputs(c, send, recv, false, o);
    double tOut = timeCall(c, send, recv, false, o, comm);
    long wrongOut = o.check ? checkCall(c, send, recv, false, o, comm) : -1;
    double tIn = 0;
    long wrongIn = -1;
    if (coll.hasInPlace()) {
      fillInputs(c, send, recv, true, o);
      tIn = timeCall(c, send, recv, true, o, comm);
      wrongIn = o.check ? checkCall(c, send, recv, true, o, comm) : -1;
    }
    totalWrong += std::max(0L, wrongOut) + std::max(0L, wrongIn);
    double algOut = bytes / tOut / 1e9, algIn = tIn > 0 ? bytes / tIn / 1e9 : 0;
    busSum += (coll.hasInPlace() ? (algOut + algIn) / 2 : algOut) * busFactor;
    ++rows;
    if (rank == 0) {
      char wOut[16], wIn[16], rootText[8];
      std::snprintf(wOut, sizeof(wOut), o.check ? "%ld" : "N/A", wrongOut);
      std::snprintf(wIn, sizeof(wIn), o.check ? "%ld" : "N/A", wrongIn);
      std::snprintf(rootText, sizeof(rootText), rooted ? "%d" : "-1", o.root);
      // Sub-microsecond times get a third decimal: 0.14 and 0.15 differ by 7%.
      auto digits = [](double seconds) { return seconds < 1e-6 ? 3 : 2; };
      std::printf("  %10zu %12zu %8s %6s %5s %9.*f %7.2f %7.2f %6s", bytes, count, typeName(o.datatype),
                  coll.reduces() ? kOpNames[o.op] : "none", rootText, digits(tOut), tOut * 1e6, algOut,
                  algOut * busFactor, wOut);
      if (coll.hasInPlace())
        std::printf(" %9.*f %7.2f %7.2f %6s", digits(tIn), tIn * 1e6, algIn, algIn * busFactor, wIn);
      else
        std::printf(" %9s %7s %7s %6s", "N/A", "N/A", "N/A", "N/A");
      if (o.showAlgo) std::printf("  %s", algorithmOf(comm, coll, c.block, o.datatype).c_str());
      std::printf("\n");
      std::fflush(stdout);
    }
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %ld %s\n", totalWrong, totalWrong ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %.4g \n#\n", rows ? busSum / rows : 0.0);
    std::fflush(stdout);
  }
  return totalWrong ? 1 : 0;
}

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A line of /proc/self/status ("Threads", "VmRSS"): its number.
double procStatus(const char* key) {
  FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  double v = -1;
  const size_t n = std::strlen(key);
  while (f && std::fgets(line, sizeof(line), f))
    if (std::strncmp(line, key, n) == 0 && line[n] == ':') v = std::atof(line + n + 1);
  if (f) std::fclose(f);
  return v;
}

double openFiles() {
  DIR* d = opendir("/proc/self/fd");
  double n = 0;
  while (d && readdir(d)) ++n;
  if (d) closedir(d);
  return d ? n - 3 : -1;  // ".", ".." and the directory's own descriptor
}

// The peers this rank holds connections to (strata_comm_explain's
// "connected_peers"); -1 if it cannot say.
double connectedPeers(strata_comm_t comm) {
  std::vector<char> record(1 << 20);
  if (strata_comm_explain(comm, "allreduce", 1, STRATA_FLOAT64, record.data(), record.size(), nullptr) !=
      STRATA_SUCCESS)
    return -1;
  const char* at = std::strstr(record.data(), "\"connected_peers\":");
  return at ? std::atof(at + 18) : -1;
}

// --resources: what this rank's init took, its first 8-byte allreduce (the
// first call builds plans and, lazily, anything else it needs), and the
// process's open files, threads and resident memory after the table, the
// peers it holds connections to and its open files per such peer, and what
// the communicator holds for its transfers (strata_comm_memory, every
// kind); rank 0 prints the largest and the mean over the ranks.
void reportResources(strata_comm_t comm, double initSeconds, double firstSeconds) {
  int rank = 0, nranks = 1;
  strata_comm_rank(comm, &rank);
  strata_comm_size(comm, &nranks);
  const double peers = connectedPeers(comm), files = openFiles();
  strata_memory_t held = STRATA_MEMORY_INITIALIZER;
  if (strata_comm_memory(comm, &held) != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata-perf: rank %d: strata_comm_memory: %s\n", rank, strata_comm_last_error(comm));
    throw Fail{};
  }
  const double heldKiB =
      (held.shared_bytes + held.host_bytes + held.pinned_bytes + held.device_bytes) / 1024.0;
  const double mine[8] = {initSeconds * 1e3, firstSeconds * 1e3, files, procStatus("Threads"),
                          procStatus("VmRSS"), peers, files / std::max(1.0, peers), heldKiB};
  double most[8], sum[8];
  if (strata_allreduce(mine, most, 8, STRATA_FLOAT64, STRATA_MAX, comm) != STRATA_SUCCESS ||
      strata_allreduce(mine, sum, 8, STRATA_FLOAT64, STRATA_SUM, comm) != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata-perf: rank %d: gathering --resources: %s\n", rank, strata_comm_last_error(comm));
    throw Fail{};
  }
  if (rank != 0) return;
  auto mean = [&](int i) { return sum[i] / nranks; };
  std::printf("# resources over %d ranks (largest / mean): init %.1f / %.1f ms; first 8-byte allreduce %.2f / %.2f "
              "ms; open files %.0f / %.1f; threads %.0f / %.1f; RSS %.0f / %.0f KiB; connected peers %.0f / %.1f; "
              "open files per connected peer %.2f / %.2f; held for transfers %.0f / %.0f KiB\n",
              nranks, most[0], mean(0), most[1], mean(1), most[2], mean(2), most[3], mean(3), most[4], mean(4),
              most[5], mean(5), most[6], mean(6), most[7], mean(7));
  std::fflush(stdout);
}

int runRank(const Options& o, strata_comm_t comm, double initSeconds) {
  int rank = 0;
  strata_comm_rank(comm, &rank);
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
  double firstSeconds = 0;
  if (o.resources) {
    double in = 1, out = 0;
    const auto start = std::chrono::steady_clock::now();
    if (strata_allreduce(&in, &out, 1, STRATA_FLOAT64, STRATA_SUM, comm) != STRATA_SUCCESS) {
      std::fprintf(stderr, "strata-perf: first allreduce: %s\n", strata_comm_last_error(comm));
      return 1;
    }
    firstSeconds = secondsSince(start);
  }
  int rc = 0;
  for (int i : o.colls) rc |= runCollective(kColls[i], o, comm, send, recv);
  if (o.resources) reportResources(comm, initSeconds, firstSeconds);
  std::free(send);
  std::free(recv);
  return rc;
}

int runWithComm(const Options& o, strata_comm_t comm, double initSeconds) {
  int rc;
  try {
    rc = runRank(o, comm, initSeconds);
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
  const std::vector<int> cpus = o.bind ? strata::bench::allowedCpus() : std::vector<int>();
  std::vector<pid_t> pids;
  // The ranks already started would wait for a missing one until
  // STRATA_TIMEOUT; a rank that cannot start stops them now.
  auto stopStarted = [&pids]() {
    for (pid_t started : pids) kill(started, SIGTERM);
    for (pid_t started : pids) waitpid(started, nullptr, 0);
    return 1;
  };
  for (int r = 0; r < o.ranks; ++r) {
    // Pinned before the fork, so the rank starts on its cpu (its topology
    // probe reads the mask at init).
    if (o.bind && strata::bench::pinInBlocks(cpus, r, o.ranks) < 0) {
      std::fprintf(stderr, "strata-perf: --bind: could not pin rank %d to a cpu: %s\n", r, std::strerror(errno));
      return stopStarted();
    }
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("strata-perf: fork");
      return stopStarted();
    }
    if (pid == 0) {
      strata_comm_t comm;
      int rc = 1;
      const auto start = std::chrono::steady_clock::now();
      if (strata_comm_init_rank(&comm, o.ranks, id, r) == STRATA_SUCCESS)
        rc = runWithComm(o, comm, secondsSince(start));  // reports its own errors
      else
        std::fprintf(stderr, "strata-perf: rank %d: strata_comm_init_rank: %s\n", r, strata_last_error());
      std::fflush(stdout);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  if (o.bind) strata::bench::setAffinity(cpus);
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
  const auto start = std::chrono::steady_clock::now();
  if (strata_comm_init_world(&comm) != STRATA_SUCCESS) {
    std::fprintf(stderr, "strata-perf: %s\n(use --ranks N to fork local ranks, run under mpirun, or set "
                 "RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT)\n", strata_last_error());
    return 1;
  }
  return runWithComm(o, comm, secondsSince(start));
}
