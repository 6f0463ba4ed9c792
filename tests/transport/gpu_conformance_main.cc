// main() for the cuda transport's conformance cases: where no GPU is usable
// the program reports a skip to meson (exit 77) with CUDA's reason, and
// where one is, a case that skips fails the program. It asks
// in a child process: the cases fork their ranks, and a process forked after
// its parent started CUDA cannot use CUDA, so this one must never start it.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "cuda_seam.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  std::fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    const bool usable = strata::gpu::runtime().usable;
    if (!usable) std::printf("SKIP: no usable GPU: %s\n", strata::gpu::runtime().why.c_str());
    std::fflush(stdout);
    _exit(usable ? 0 : 77);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status)) {
    std::printf("could not ask a child process whether a GPU is usable\n");
    return 1;
  }
  if (WEXITSTATUS(status) != 0) return WEXITSTATUS(status);
  const int failed = RUN_ALL_TESTS();
  // Where a GPU is usable, a case that skips (cuda cannot connect the two
  // ranks, say) checked nothing: that is a failure here, not a pass.
  const int skipped = testing::UnitTest::GetInstance()->skipped_test_count();
  if (skipped > 0) {
    std::printf("FAIL: %d case(s) skipped although a GPU is usable\n", skipped);
    return 1;
  }
  return failed;
}
