/* What the NCCL tests share: each process is one rank (`me`), a failed
 * CHECK is counted and reported with the rank, a failed NCCL call ends the
 * rank with NCCL's and strata's messages. */
#ifndef STRATA_TESTS_NCCL_CHECKS_H
#define STRATA_TESTS_NCCL_CHECKS_H

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl.h"

static int failures = 0;
static int me = -1;

#define CHECK(cond, ...)                \
  do {                                  \
    if (!(cond)) {                      \
      fprintf(stderr, "rank %d: ", me); \
      fprintf(stderr, __VA_ARGS__);     \
      fputc('\n', stderr);              \
      ++failures;                       \
    }                                   \
  } while (0)

#define NCCL_OK(call, comm)                                                          \
  do {                                                                              \
    ncclResult_t r_ = (call);                                                       \
    if (r_ != ncclSuccess) {                                                        \
      fprintf(stderr, "rank %d: %s: %s (%s)\n", me, #call, ncclGetErrorString(r_), \
              ncclGetLastError(comm));                                              \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

/* Runs body(rank, arg) in nranks forked processes, each ended by SIGALRM
 * after `seconds` (a hang fails the test); returns 0 if every rank exited
 * with 0, else 1 after naming the ranks that did not. */
__attribute__((unused)) static int runRanks(int nranks, int (*body)(int rank, void* arg), void* arg, unsigned seconds) {
  pid_t pids[64];
  if (nranks > 64) return 1;
  fflush(stdout);
  for (int r = 0; r < nranks; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      alarm(seconds);
      const int code = body(r, arg);
      fflush(NULL); /* _exit flushes no stdio buffer */
      _exit(code);
    }
  }
  int failed = 0;
  for (int r = 0; r < nranks; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "rank %d ended with status 0x%x\n", r, status);
      failed = 1;
    }
  }
  return failed;
}

#endif
