// Device memory's operations: each enqueues on the channel's stream and
// returns; a refused enqueue is kept, per thread, for takeDeviceError(),
// which the executor asks before it publishes a slot and the channel after
// each operation (the copies return nothing). One thread drives a channel at
// a time, so the error found is that channel's.

#include "cuda_seam.h"
#include "device_kernels.h"
#include "memory.h"
#include "op_desc.h"

namespace strata {
namespace {

thread_local Status tError;

void keep(const Status& s) {
  if (tError.isOk()) tError = s;
}

void launched(int err, const char* what, size_t count, strata_datatype_t datatype, void* stream) {
  if (err != 0)
    keep(makeErrorQuiet(STRATA_ERR_CUDA, "launching the %s kernel (%zu %s elements) on stream %p failed: CUDA error %d",
                        what, count, datatypeName(datatype), stream, err));
}

void deviceCopy(void* dst, const void* src, size_t bytes, bool /*nonTemporal*/, void* stream) {
  if (bytes == 0) return;
  Status s = gpu::copyAsync(dst, src, bytes, stream);
  if (!s.isOk()) keep(s);
}

kernels::ReduceFn noHostKernel(strata_datatype_t, strata_op_t, kernels::Isa) { return nullptr; }

void deviceReduce(strata_datatype_t datatype, strata_op_t op, void* dst, const void* a, const void* b, size_t count,
                  void* stream) {
  if (count == 0) return;
  launched(kernels::device::reduce(datatype, op, dst, a, b, count, stream), "reduction", count, datatype, stream);
}

void deviceScaleDown(void* dst, const void* src, size_t count, strata_datatype_t datatype, int divisor, void* stream) {
  if (count == 0) return;
  launched(kernels::device::scaleDown(datatype, dst, src, count, divisor, stream), "average's division", count,
           datatype, stream);
}

}  // namespace

const MemoryOps kDeviceMemory = {MemoryType::Device, deviceCopy, noHostKernel, deviceReduce, deviceScaleDown};

Status takeDeviceError() {
  Status s = std::move(tError);
  tError = Status::ok();
  return s;
}

}  // namespace strata
