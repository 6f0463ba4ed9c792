// What each instruction-set build of kernels_impl.h provides. Internal to
// the reduce folder: the rest of strata goes through reduce.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reduce.h"

namespace strata::reduce {

struct KernelSet {
  ReduceFn reduce[STRATA_NUM_DATATYPES][STRATA_NUM_OPS];
  void (*streamCopy)(void* dst, const void* src, size_t bytes);
};

const KernelSet& portableKernels();
const KernelSet& avx2Kernels();
const KernelSet& avx512Kernels();

}  // namespace strata::reduce
