// One rank of a job that may mix machines: started from torchrun's variables
// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), it allreduces inputs in each
// floating datatype (sum, prod, min, max, avg) and int32 (sum, min, max),
// checks each result against a double-precision reference computed here from
// every rank's inputs, and checks that every rank holds the same bits (each
// result's hash, allgathered). Ranks built for different CPUs (x86-64 with
// AVX-512, aarch64 with the portable kernels; mixed_job.py starts them) fold
// with their own kernels: under the one-shot algorithm (the smallest count)
// and recursive doubling (STRATA_ALGO=rd, a pass of mixed_job.py) every rank
// folds every element itself, so their results agree bit for bit only if the
// kernels do; under the others each element is folded once, by one rank's
// kernel, and checked against the reference. Prints the algorithms used, one
// line per failed check, then a summary; exits 1 on any failure.
#include <sys/utsname.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "strata/strata.h"

namespace {

// Inputs exactly representable in every type they are stored in: k/64 with
// |k| <= 256 (bfloat16 holds 8 significant bits, float16 11); products
// multiply values near 1 so that every rank's count stays in range.
double inputOf(int rank, size_t i, strata_op_t op) {
  uint64_t x = (uint64_t(rank) + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t(i) + 1) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 29;
  const int k = static_cast<int>(x % 513) - 256;
  if (op == STRATA_PROD) return 1.0 + (k % 16) / 64.0;
  return k / 64.0;
}

uint16_t toHalf(double v) {  // v is k/64 or 1 + k/64: a normal half, or zero
  if (v == 0) return 0;
  const uint16_t sign = v < 0 ? 0x8000 : 0;
  int e;
  const double m = std::frexp(std::fabs(v), &e);  // v = m * 2^e, m in [0.5, 1)
  const uint16_t mant = static_cast<uint16_t>((m * 2 - 1) * 1024);
  return static_cast<uint16_t>(sign | (e - 1 + 15) << 10 | mant);
}
double fromHalf(uint16_t h) {
  const int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0x1f) return m ? NAN : (h & 0x8000 ? -INFINITY : INFINITY);
  const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
  return h & 0x8000 ? -mag : mag;
}
uint16_t toBf16(double v) {  // exact: the input has at most 8 significant bits
  const float f = static_cast<float>(v);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>(u >> 16);
}
double fromBf16(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

void store(void* buf, size_t i, double v, strata_datatype_t t) {
  switch (t) {
    case STRATA_INT32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v * 64); break;
    case STRATA_FLOAT16: static_cast<uint16_t*>(buf)[i] = toHalf(v); break;
    case STRATA_BFLOAT16: static_cast<uint16_t*>(buf)[i] = toBf16(v); break;
    case STRATA_FLOAT32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    default: static_cast<double*>(buf)[i] = v; break;
  }
}
double load(const void* buf, size_t i, strata_datatype_t t) {
  switch (t) {
    case STRATA_INT32: return static_cast<const int32_t*>(buf)[i] / 64.0;
    case STRATA_FLOAT16: return fromHalf(static_cast<const uint16_t*>(buf)[i]);
    case STRATA_BFLOAT16: return fromBf16(static_cast<const uint16_t*>(buf)[i]);
    case STRATA_FLOAT32: return static_cast<const float*>(buf)[i];
    default: return static_cast<const double*>(buf)[i];
  }
}

// How far a result may be from the exact value, relative to the sum of the
// magnitudes that went into it: each of the nranks - 1 additions (and the
// average's division) rounds once in the type's precision. min and max
// round nothing: they must give one of the inputs exactly.
double tolerance(strata_datatype_t t, strata_op_t op, int nranks) {
  if (op == STRATA_MIN || op == STRATA_MAX) return 0;
  const double ulp = t == STRATA_FLOAT16 ? std::ldexp(1, -10)
                   : t == STRATA_BFLOAT16 ? std::ldexp(1, -7)
                   : t == STRATA_FLOAT32 ? std::ldexp(1, -23)
                   : t == STRATA_FLOAT64 ? std::ldexp(1, -52) : 0;
  return ulp * (nranks + 1);
}

uint64_t fnv1a(const void* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace

int main() {
  strata_comm_t comm;
  strata_result_t rc = strata_comm_init_env(&comm);
  if (rc != STRATA_SUCCESS) {
    std::printf("init: %s: %s\n", strata_result_string(rc), strata_last_error());
    return 1;
  }
  int rank = 0, nranks = 0;
  strata_comm_rank(comm, &rank);
  strata_comm_size(comm, &nranks);
  utsname u{};
  uname(&u);

  const strata_datatype_t types[] = {STRATA_INT32, STRATA_FLOAT16, STRATA_BFLOAT16, STRATA_FLOAT32, STRATA_FLOAT64};
  const char* typeNames[] = {"int32", "float16", "bfloat16", "float32", "float64"};
  const strata_op_t ops[] = {STRATA_SUM, STRATA_PROD, STRATA_MIN, STRATA_MAX, STRATA_AVG};
  const char* opNames[] = {"sum", "prod", "min", "max", "avg"};
  // A one-cache-line message, a few slots' worth and more than a ring's
  // chunk per rank, each with an odd tail.
  const size_t counts[] = {7, 65539, 1000003};
  if (rank == 0) {
    std::printf("rank 0: float32 allreduce algorithms:");
    for (size_t count : counts) {
      char name[32] = "?";
      int channels = 0;
      strata_comm_algorithm(comm, "allreduce", count, STRATA_FLOAT32, name, sizeof(name), &channels);
      std::printf(" %zu -> %s", count, name);
    }
    std::printf("\n");
  }
  int checks = 0, failures = 0;
  for (size_t ti = 0; ti < 5; ++ti) {
    for (size_t oi = 0; oi < 5; ++oi) {
      const strata_datatype_t t = types[ti];
      const strata_op_t op = ops[oi];
      if (t == STRATA_INT32 && (op == STRATA_PROD || op == STRATA_AVG)) continue;  // wraps, truncates
      for (size_t count : counts) {
        const size_t elem = strata_datatype_size(t);
        std::vector<unsigned char> buf(count * elem);
        for (size_t i = 0; i < count; ++i) store(buf.data(), i, inputOf(rank, i, op), t);
        rc = strata_allreduce(buf.data(), buf.data(), count, t, op, comm);
        ++checks;
        if (rc != STRATA_SUCCESS) {
          std::printf("rank %d: allreduce(%zu, %s, %s): %s: %s\n", rank, count, typeNames[ti], opNames[oi],
                      strata_result_string(rc), strata_comm_last_error(comm));
          ++failures;
          break;
        }
        size_t wrong = 0, first = 0;
        double got0 = 0, want0 = 0;
        for (size_t i = 0; i < count; ++i) {
          double want = op == STRATA_PROD ? 1 : op == STRATA_MIN ? INFINITY : op == STRATA_MAX ? -INFINITY : 0;
          double magnitude = 0;
          for (int r = 0; r < nranks; ++r) {
            const double x = inputOf(r, i, op);
            magnitude += std::fabs(x);
            if (op == STRATA_PROD) want *= x;
            else if (op == STRATA_MIN) want = std::fmin(want, x);
            else if (op == STRATA_MAX) want = std::fmax(want, x);
            else want += x;
          }
          if (op == STRATA_AVG) want /= nranks, magnitude /= nranks;
          if (op == STRATA_PROD) magnitude = std::fabs(want) * nranks;
          const double got = load(buf.data(), i, t);
          if (std::fabs(got - want) > tolerance(t, op, nranks) * magnitude) {
            if (wrong++ == 0) first = i, got0 = got, want0 = want;
          }
        }
        if (wrong) {
          std::printf("rank %d (%s): allreduce(%zu, %s, %s): %zu wrong elements, first [%zu] = %.9g, want %.9g\n",
                      rank, u.machine, count, typeNames[ti], opNames[oi], wrong, first, got0, want0);
          ++failures;
        }
        // Every rank's result, bit for bit: its hash, gathered.
        uint64_t mine = fnv1a(buf.data(), buf.size());
        std::vector<uint64_t> all(nranks);
        rc = strata_allgather(&mine, all.data(), 1, STRATA_UINT64, comm);
        if (rc != STRATA_SUCCESS) {
          std::printf("rank %d: allgather: %s\n", rank, strata_comm_last_error(comm));
          ++failures;
          break;
        }
        if (mine != all[0]) {
          std::printf("rank %d (%s): allreduce(%zu, %s, %s): its result's bits differ from rank 0's\n", rank,
                      u.machine, count, typeNames[ti], opNames[oi]);
          ++failures;
        }
      }
    }
  }
  std::printf("rank %d of %d (%s): %d allreduces checked, %d failed\n", rank, nranks, u.machine, checks, failures);
  strata_comm_destroy(comm);
  return failures ? 1 : 0;
}
