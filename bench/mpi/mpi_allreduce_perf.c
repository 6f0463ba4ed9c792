/* mpi-allreduce-perf: Open MPI's MPI_Allreduce timed exactly as strata-perf
 * times strata_allreduce (same flags subset, rows, columns and footer), so
 * bench/compare can put the two side by side.
 *
 *   mpirun -np 2 mpi-allreduce-perf -b 8 -e 256M -f 2 -n 20 -w 5 -c 1
 *
 * Per size: warm-up calls, a barrier, the timed calls (the mean per call,
 * maximum over ranks, is the reported time), then one checked call outside
 * the timed loop; out-of-place first, then in-place with MPI_IN_PLACE.
 * Only float32 sum is offered: it is what the comparison needs. */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
  size_t min_bytes;
  size_t max_bytes;
  double step_factor;
  int iters;
  int warmup;
  int check;
} options_t;

static int parse_size(const char* text, size_t* out) {
  char* end = NULL;
  double v = strtod(text, &end);
  if (end == text || v < 0) return 0;
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024, ++end;
  else if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024, ++end;
  else if (*end == 'K' || *end == 'k') v *= 1024.0, ++end;
  if (*end != '\0') return 0;
  *out = (size_t)v;
  return 1;
}

static void usage(FILE* f, const char* argv0) {
  fprintf(f,
          "usage: mpirun -np N %s [-b minbytes] [-e maxbytes] [-f stepfactor] [-n iters]\n"
          "          [-w warmup_iters] [-c 0|1] [-d float] [-o sum]\n"
          "  flags as strata-perf; only -d float (float32) and -o sum\n",
          argv0);
}

/* Returns 0 on success, 1 for -h, 2 for a bad flag (message on stderr from rank 0). */
static int parse_options(int argc, char** argv, int rank, options_t* o) {
  static const struct option long_opts[] = {
      {"minbytes", required_argument, NULL, 'b'}, {"maxbytes", required_argument, NULL, 'e'},
      {"stepfactor", required_argument, NULL, 'f'}, {"iters", required_argument, NULL, 'n'},
      {"warmup_iters", required_argument, NULL, 'w'}, {"check", required_argument, NULL, 'c'},
      {"datatype", required_argument, NULL, 'd'}, {"op", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
  o->min_bytes = 8;
  o->max_bytes = (size_t)256 << 20;
  o->step_factor = 2;
  o->iters = 20;
  o->warmup = 5;
  o->check = 1;
  if (rank != 0) opterr = 0; /* one "unrecognized option" message, not one per rank */
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:n:w:c:d:o:h", long_opts, NULL)) != -1) {
    int ok = 1;
    switch (c) {
      case 'b': ok = parse_size(optarg, &o->min_bytes); break;
      case 'e': ok = parse_size(optarg, &o->max_bytes); break;
      case 'f': o->step_factor = atof(optarg); ok = o->step_factor > 1; break;
      case 'n': o->iters = atoi(optarg); ok = o->iters > 0; break;
      case 'w': o->warmup = atoi(optarg); ok = o->warmup >= 0; break;
      case 'c': o->check = atoi(optarg); ok = o->check == 0 || o->check == 1; break;
      case 'd': ok = strcmp(optarg, "float") == 0 || strcmp(optarg, "float32") == 0; break;
      case 'o': ok = strcmp(optarg, "sum") == 0; break;
      case 'h':
        if (rank == 0) usage(stdout, argv[0]);
        return 1;
      default:
        if (rank == 0) usage(stderr, argv[0]);
        return 2;
    }
    if (!ok) {
      if (rank == 0) fprintf(stderr, "mpi-allreduce-perf: bad value '%s' for -%c\n", optarg, c);
      return 2;
    }
  }
  if (optind < argc || o->min_bytes > o->max_bytes) {
    if (rank == 0) usage(stderr, argv[0]);
    return 2;
  }
  if (o->max_bytes / sizeof(float) > INT_MAX) {
    if (rank == 0) fprintf(stderr, "mpi-allreduce-perf: -e too large for an int count\n");
    return 2;
  }
  return 0;
}

/* Small integers: every partial sum is exact in float32 whatever the order. */
static float input_value(int rank, size_t i) { return (float)((i * 7 + (size_t)rank * 3) % 11 + 1); }

static float expected_value(int nranks, size_t i) {
  float acc = 0;
  for (int r = 0; r < nranks; ++r) acc += input_value(r, i);
  return acc;
}

static void fill(float* buf, size_t count, int rank) {
  for (size_t i = 0; i < count; ++i) buf[i] = input_value(rank, i);
}

static double time_allreduce(const float* send, float* recv, int count, const options_t* o) {
  const void* in = send ? (const void*)send : MPI_IN_PLACE;
  for (int i = 0; i < o->warmup; ++i) MPI_Allreduce(in, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < o->iters; ++i) MPI_Allreduce(in, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double mean = (MPI_Wtime() - start) / o->iters, slowest = 0;
  MPI_Allreduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* One checked call; returns the wrong elements summed over ranks. send NULL: in place. */
static long check_allreduce(float* send, float* recv, int count, int rank, int nranks) {
  fill(send ? send : recv, (size_t)count, rank);
  MPI_Allreduce(send ? (const void*)send : MPI_IN_PLACE, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  long wrong = 0, total = 0;
  for (int i = 0; i < count; ++i)
    if (recv[i] != expected_value(nranks, (size_t)i)) ++wrong;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  return total;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  options_t o;
  int parsed = parse_options(argc, argv, rank, &o);
  if (parsed != 0) {
    MPI_Finalize();
    return parsed == 1 ? 0 : 2;
  }

  const size_t max_count = o.max_bytes / sizeof(float);
  const size_t alloc = max_count * sizeof(float) > 64 ? max_count * sizeof(float) : 64;
  void* send_mem = NULL;
  void* recv_mem = NULL;
  if (posix_memalign(&send_mem, 64, alloc) != 0 || posix_memalign(&recv_mem, 64, alloc) != 0) {
    fprintf(stderr, "mpi-allreduce-perf: rank %d: cannot allocate %zu bytes\n", rank, alloc);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  float* send = send_mem;
  float* recv = recv_mem;
  fill(send, max_count, rank); /* touches every page before timing */
  memset(recv, 0, alloc);

  if (rank == 0) {
    char host[64] = "";
    gethostname(host, sizeof(host) - 1);
    int version = 0, subversion = 0;
    MPI_Get_version(&version, &subversion);
    printf("# mpi-allreduce-perf: MPI_Allreduce (MPI %d.%d), %d ranks, host %s, pid %d\n#\n", version,
           subversion, nranks, host, (int)getpid());
    printf("# %10s %12s %8s %6s   %s   %s\n", "", "", "", "", "               out-of-place",
           "                in-place");
    printf("# %10s %12s %8s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop", "time",
           "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("# %10s %12s %8s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "(us)",
           "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
  }

  const double bus_factor = nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0;
  double bus_sum = 0;
  long total_wrong = 0;
  int rows = 0;
  for (double size = o.min_bytes ? (double)o.min_bytes : 1; size <= (double)o.max_bytes; size *= o.step_factor) {
    int count = (int)((size_t)size / sizeof(float));
    if (count == 0) continue;
    size_t bytes = (size_t)count * sizeof(float);
    double t_out = time_allreduce(send, recv, count, &o);
    long wrong_out = o.check ? check_allreduce(send, recv, count, rank, nranks) : -1;
    memcpy(recv, send, bytes);
    double t_in = time_allreduce(NULL, recv, count, &o);
    long wrong_in = o.check ? check_allreduce(NULL, recv, count, rank, nranks) : -1;
    total_wrong += (wrong_out > 0 ? wrong_out : 0) + (wrong_in > 0 ? wrong_in : 0);
    double alg_out = bytes / t_out / 1e9, alg_in = bytes / t_in / 1e9;
    bus_sum += (alg_out + alg_in) / 2 * bus_factor;
    ++rows;
    if (rank == 0) {
      char w_out[24], w_in[24];
      snprintf(w_out, sizeof(w_out), o.check ? "%ld" : "N/A", wrong_out);
      snprintf(w_in, sizeof(w_in), o.check ? "%ld" : "N/A", wrong_in);
      printf("  %10zu %12d %8s %6s %9.2f %7.2f %7.2f %6s %9.2f %7.2f %7.2f %6s\n", bytes, count, "float", "sum",
             t_out * 1e6, alg_out, alg_out * bus_factor, w_out, t_in * 1e6, alg_in, alg_in * bus_factor, w_in);
      fflush(stdout);
    }
  }
  if (rank == 0) {
    printf("# Out of bounds values : %ld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %.4g \n#\n", rows ? bus_sum / rows : 0.0);
    fflush(stdout);
  }
  free(send_mem);
  free(recv_mem);
  MPI_Finalize();
  return total_wrong ? 1 : 0;
}
