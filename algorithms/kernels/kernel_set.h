// What each instruction-set build of kernels_impl.h provides. Internal to
// the kernels folder: the rest of strata goes through kernels.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels.h"

namespace strata::kernels {

struct KernelSet {
  ReduceFn reduce[STRATA_NUM_DATATYPES][STRATA_NUM_OPS];
  void (*ntCopy)(void* dst, const void* src, size_t bytes);
};

const KernelSet& portableKernels();
#if defined(__x86_64__)  // built only there (meson.build)
const KernelSet& avx2Kernels();
const KernelSet& avx512Kernels();
#endif

}  // namespace strata::kernels
