// The GPU's kernels in a build without CUDA: no device memory exists there
// (every buffer classifies as host memory), so nothing reaches these; each
// answers as a launch CUDA refused would.
#include "device_kernels.h"

namespace strata::kernels::device {
namespace {

constexpr int kNotBuilt = 801;  // cudaErrorNotSupported

}  // namespace

int preload() { return kNotBuilt; }
int reduce(strata_datatype_t, strata_op_t, void*, const void*, const void*, size_t, void*) { return kNotBuilt; }
int scaleDown(strata_datatype_t, void*, const void*, size_t, int, void*) { return kNotBuilt; }
int scaleBy(strata_datatype_t, void*, const void*, size_t, const void*, void*) { return kNotBuilt; }

}  // namespace strata::kernels::device
