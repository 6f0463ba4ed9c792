/* mpi-perf: an MPI library's collectives timed exactly as strata-perf times
 * strata's (same flags subset, sizes, rows, columns, busbw factors and
 * footer), so bench/compare can put them side by side. Built once per
 * library: mpi-perf (Open MPI), mpi-perf-mpich (MPICH).
 *
 *   mpirun -np 2 mpi-perf [all_reduce|all_gather|reduce_scatter|broadcast|barrier] -b 8 -e 256M ...
 *   mpiexec.mpich -n 2 mpi-perf-mpich ...
 *
 * Per size: warm-up calls, a barrier, the timed calls (the mean per call,
 * maximum over ranks, is the reported time), then one checked call outside
 * the timed loop; out-of-place first, then in-place with MPI_IN_PLACE
 * (broadcast has one buffer: both columns time the same call). size is the
 * whole buffer as in strata-perf: all ranks' blocks for all_gather (output)
 * and reduce_scatter (input, MPI_Reduce_scatter_block). Only float32 sum is
 * offered: it is what the comparison needs. barrier (MPI_Barrier) has one
 * row, of size 0, with no in-place column, as strata-perf's. */
#define _POSIX_C_SOURCE 200809L
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, BROADCAST, BARRIER } coll_t;
static const char* coll_names[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "barrier"};

typedef struct {
  coll_t coll;
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
          "usage: mpirun -np N %s [all_reduce|all_gather|reduce_scatter|broadcast|barrier] [-b minbytes]\n"
          "          [-e maxbytes] [-f stepfactor] [-n iters] [-w warmup_iters] [-c 0|1] [-d float] [-o sum]\n"
          "  flags as strata-perf; only -d float (float32) and -o sum; broadcast's root is 0\n",
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
  o->coll = ALL_REDUCE;
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
      if (rank == 0) fprintf(stderr, "mpi-perf: bad value '%s' for -%c\n", optarg, c);
      return 2;
    }
  }
  if (optind < argc) {
    int found = 0;
    for (int i = 0; i < 5; ++i)
      if (strcmp(argv[optind], coll_names[i]) == 0) o->coll = (coll_t)i, found = 1;
    if (found) ++optind;
  }
  if (optind < argc || o->min_bytes > o->max_bytes) {
    if (rank == 0) usage(stderr, argv[0]);
    return 2;
  }
  if (o->max_bytes / sizeof(float) > INT_MAX) {
    if (rank == 0) fprintf(stderr, "mpi-perf: -e too large for an int count\n");
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

/* One call on `count` elements in all (block = count / nranks). in_place:
 * MPI_IN_PLACE, with the data where MPI wants it (recv). */
static void run_once(const options_t* o, float* send, float* recv, int count, int block, int in_place) {
  const void* in = in_place ? MPI_IN_PLACE : (const void*)send;
  switch (o->coll) {
    case ALL_REDUCE: MPI_Allreduce(in, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case ALL_GATHER: MPI_Allgather(in, block, MPI_FLOAT, recv, block, MPI_FLOAT, MPI_COMM_WORLD); break;
    case REDUCE_SCATTER: MPI_Reduce_scatter_block(in, recv, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case BROADCAST: MPI_Bcast(recv, count, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case BARRIER: MPI_Barrier(MPI_COMM_WORLD); break;
  }
}

static double time_call(const options_t* o, float* send, float* recv, int count, int block, int in_place) {
  for (int i = 0; i < o->warmup; ++i) run_once(o, send, recv, count, block, in_place);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < o->iters; ++i) run_once(o, send, recv, count, block, in_place);
  double mean = (MPI_Wtime() - start) / o->iters, slowest = 0;
  MPI_Allreduce(&mean, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/* Puts this rank's inputs where the call reads them. */
static void place_inputs(const options_t* o, float* send, float* recv, int count, int block, int rank, int in_place) {
  if (o->coll == BARRIER) return;
  if (o->coll == BROADCAST) fill(recv, (size_t)count, rank);
  else if (o->coll == ALL_GATHER && in_place) fill(recv + (size_t)rank * block, (size_t)block, rank);
  else if (o->coll == ALL_GATHER) fill(send, (size_t)block, rank);
  else fill(in_place ? recv : send, (size_t)count, rank);
}

/* One checked call; returns the wrong elements summed over ranks. */
static long check_call(const options_t* o, float* send, float* recv, int count, int block, int rank, int nranks,
                       int in_place) {
  place_inputs(o, send, recv, count, block, rank, in_place);
  run_once(o, send, recv, count, block, in_place);
  long wrong = 0, total = 0;
  switch (o->coll) {
    case ALL_REDUCE:
      for (int i = 0; i < count; ++i) wrong += recv[i] != expected_value(nranks, (size_t)i);
      break;
    case ALL_GATHER:
      for (int p = 0; p < nranks; ++p)
        for (int i = 0; i < block; ++i) wrong += recv[(size_t)p * block + i] != input_value(p, (size_t)i);
      break;
    case REDUCE_SCATTER:
      for (int i = 0; i < block; ++i) wrong += recv[i] != expected_value(nranks, (size_t)rank * block + i);
      break;
    case BROADCAST:
      for (int i = 0; i < count; ++i) wrong += recv[i] != input_value(0, (size_t)i);
      break;
    case BARRIER:
      break;
  }
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
    fprintf(stderr, "mpi-perf: rank %d: cannot allocate %zu bytes\n", rank, alloc);
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
    /* The library's own words, first line only: Open MPI's and MPICH's
     * both begin with their name and release. */
    char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int library_len = 0;
    MPI_Get_library_version(library, &library_len);
    library[strcspn(library, "\n")] = '\0';
    printf("# mpi-perf: %s (MPI %d.%d), %d ranks, host %s, pid %d\n# library: %s\n#\n", coll_names[o.coll],
           version, subversion, nranks, host, (int)getpid(), library);
    printf("# %10s %12s %8s %6s %5s   %s   %s\n", "", "", "", "", "", "               out-of-place",
           "                in-place");
    printf("# %10s %12s %8s %6s %5s %9s %7s %7s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop", "root",
           "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    printf("# %10s %12s %8s %6s %5s %9s %7s %7s %6s %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "", "(us)",
           "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
  }

  const int per_rank = o.coll == ALL_GATHER || o.coll == REDUCE_SCATTER;
  const double bus_factor = o.coll == BROADCAST ? 1
                            : nranks <= 1     ? 0
                            : o.coll == ALL_REDUCE ? 2.0 * (nranks - 1) / nranks
                                                   : (double)(nranks - 1) / nranks;
  double bus_sum = 0;
  long total_wrong = 0;
  int rows = 0;
  const int sizeless = o.coll == BARRIER; /* the first row alone */
  const double first = o.min_bytes ? (double)o.min_bytes : 1, last = sizeless ? first : (double)o.max_bytes;
  for (double size = first; size <= last; size *= o.step_factor) {
    int count = sizeless ? 0 : (int)((size_t)size / sizeof(float));
    if (per_rank) count = count / nranks * nranks;
    if (count == 0 && !sizeless) continue;
    const int block = per_rank ? count / nranks : count;
    size_t bytes = (size_t)count * sizeof(float);
    place_inputs(&o, send, recv, count, block, rank, 0);
    double t_out = time_call(&o, send, recv, count, block, 0);
    long wrong_out = o.check ? check_call(&o, send, recv, count, block, rank, nranks, 0) : -1;
    double t_in = 0;
    long wrong_in = -1;
    if (!sizeless) {
      place_inputs(&o, send, recv, count, block, rank, 1);
      t_in = time_call(&o, send, recv, count, block, 1);
      wrong_in = o.check ? check_call(&o, send, recv, count, block, rank, nranks, 1) : -1;
    }
    total_wrong += (wrong_out > 0 ? wrong_out : 0) + (wrong_in > 0 ? wrong_in : 0);
    double alg_out = bytes / t_out / 1e9, alg_in = t_in > 0 ? bytes / t_in / 1e9 : 0;
    bus_sum += (sizeless ? alg_out : (alg_out + alg_in) / 2) * bus_factor;
    ++rows;
    if (rank == 0) {
      char w_out[24], w_in[24];
      snprintf(w_out, sizeof(w_out), o.check ? "%ld" : "N/A", wrong_out);
      snprintf(w_in, sizeof(w_in), o.check ? "%ld" : "N/A", wrong_in);
      /* Sub-microsecond times get a third decimal: 0.14 and 0.15 differ by 7%. */
      printf("  %10zu %12d %8s %6s %5d %9.*f %7.2f %7.2f %6s", bytes, count, "float",
             o.coll == ALL_REDUCE || o.coll == REDUCE_SCATTER ? "sum" : "none", o.coll == BROADCAST ? 0 : -1,
             t_out < 1e-6 ? 3 : 2, t_out * 1e6, alg_out, alg_out * bus_factor, w_out);
      if (sizeless)
        printf(" %9s %7s %7s %6s\n", "N/A", "N/A", "N/A", "N/A");
      else
        printf(" %9.*f %7.2f %7.2f %6s\n", t_in < 1e-6 ? 3 : 2, t_in * 1e6, alg_in, alg_in * bus_factor, w_in);
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
