/* What the NCCL tests share: each process is one rank (`me`), a failed
 * CHECK is counted and reported with the rank, a failed NCCL call ends the
 * rank with NCCL's and strata's messages. */
#ifndef STRATA_TESTS_NCCL_CHECKS_H
#define STRATA_TESTS_NCCL_CHECKS_H

#include <stdio.h>
#include <stdlib.h>

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

#endif
