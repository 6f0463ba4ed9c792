// main() for GoogleTest programs (or the part of one a filter selects) that
// need a GPU: where none is usable the whole program reports a skip to meson
// (exit 77) with CUDA's reason, instead of a pass made of skipped cases.
#include <gtest/gtest.h>

#include <cstdio>

#include "cuda_seam.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (!strata::gpu::runtime().usable) {
    std::printf("SKIP: no usable GPU: %s\n", strata::gpu::runtime().why.c_str());
    return 77;
  }
  return RUN_ALL_TESTS();
}
