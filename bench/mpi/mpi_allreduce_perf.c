/* mpi-allreduce-perf: MPI_Allreduce timed exactly as strata-perf times
 * strata_allreduce (same flags subset, rows and columns), so bench/compare
 * can put the two side by side.
 *   mpirun -np 2 mpi-allreduce-perf -b 8 -e 256M -f 2 -n 20 -w 5 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t parse_size(const char* text) {
  char* end = NULL;
  double v = strtod(text, &end);
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024;
  if (*end == 'K' || *end == 'k') v *= 1024.0;
  return (size_t)v;
}

static double time_allreduce(const void* send, void* recv, int count, int iters, int warmup) {
  for (int i = 0; i < warmup; ++i) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double t = (MPI_Wtime() - start) / iters, max = 0;
  MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return max;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  size_t minBytes = 8, maxBytes = (size_t)256 << 20;
  double step = 2;
  int iters = 20, warmup = 5, opt;
  while ((opt = getopt(argc, argv, "b:e:f:n:w:c:d:o:")) != -1) {
    switch (opt) {
      case 'b': minBytes = parse_size(optarg); break;
      case 'e': maxBytes = parse_size(optarg); break;
      case 'f': step = atof(optarg); break;
      case 'n': iters = atoi(optarg); break;
      case 'w': warmup = atoi(optarg); break;
      case 'c': break; /* accepted for symmetry with strata-perf; no check here */
      case 'd':
      case 'o':
        if (strcmp(optarg, "float") != 0 && strcmp(optarg, "sum") != 0) {
          if (rank == 0) fprintf(stderr, "mpi-allreduce-perf: only -d float -o sum\n");
          MPI_Abort(MPI_COMM_WORLD, 2);
        }
        break;
      default:
        if (rank == 0) fprintf(stderr, "usage: %s [-b min] [-e max] [-f step] [-n iters] [-w warmup]\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (step <= 1 || iters <= 0) MPI_Abort(MPI_COMM_WORLD, 2);
  float* send = malloc(maxBytes > 64 ? maxBytes : 64);
  float* recv = malloc(maxBytes > 64 ? maxBytes : 64);
  for (size_t i = 0; i < maxBytes / 4; ++i) send[i] = (float)(rank + i % 7);
  memset(recv, 0, maxBytes);
  if (rank == 0) {
    printf("# mpi-allreduce-perf: MPI_Allreduce, %d ranks\n#\n", nranks);
    printf("# %10s %12s %8s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop", "time",
           "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    fflush(stdout);
  }
  const double factor = nranks > 1 ? 2.0 * (nranks - 1) / nranks : 0;
  double busSum = 0;
  int rows = 0;
  for (double size = (double)minBytes; size <= (double)maxBytes; size *= step) {
    int count = (int)((size_t)size / 4);
    if (count == 0) continue;
    size_t bytes = (size_t)count * 4;
    double tOut = time_allreduce(send, recv, count, iters, warmup);
    memcpy(recv, send, bytes);
    double tIn = time_allreduce(MPI_IN_PLACE, recv, count, iters, warmup);
    double algOut = bytes / tOut / 1e9, algIn = bytes / tIn / 1e9;
    busSum += (algOut + algIn) / 2 * factor;
    ++rows;
    if (rank == 0) {
      printf("  %10zu %12d %8s %6s %9.2f %7.2f %7.2f %6s %9.2f %7.2f %7.2f %6s\n", bytes, count, "float", "sum",
             tOut * 1e6, algOut, algOut * factor, "N/A", tIn * 1e6, algIn, algIn * factor, "N/A");
      fflush(stdout);
    }
  }
  if (rank == 0) printf("# Avg bus bandwidth    : %.4g \n#\n", rows ? busSum / rows : 0.0);
  free(send);
  free(recv);
  MPI_Finalize();
  return 0;
}
