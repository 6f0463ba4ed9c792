// Reduction kernels on the GPU: the same arithmetic as the host kernels
// (element_ops.h, whose functions the host suite checks bit for bit against
// them), enqueued on a CUDA stream. Built only with CUDA (-Dcuda); callers
// see no CUDA type: a stream is a cudaStream_t passed as void*, and each
// launcher returns the cudaError_t of its launch as an int (0: enqueued).
#pragma once

#include <cstddef>

#include "strata/strata.h"

namespace strata::kernels::device {

// Loads every kernel of this file into the current device's context now,
// rather than at its first launch. CUDA loads a module when one of its
// kernels is first launched (lazy loading, the default on Linux since CUDA
// 12.2), and loading may wait for the context's streams to go idle: a first
// reduction enqueued while a stream-ordered call holds the caller's stream
// waiting for the host would wait for itself. Returns the first error of a
// kernel that did not load (0: all loaded).
int preload();
// dst[i] = a[i] op b[i] for i < count (dst may equal a or b).
int reduce(strata_datatype_t datatype, strata_op_t op, void* dst, const void* a, const void* b, size_t count,
           void* stream);
// dst[i] = src[i] / divisor: the average's one division.
int scaleDown(strata_datatype_t datatype, void* dst, const void* src, size_t count, int divisor, void* stream);
// dst[i] = src[i] * *scalar, the scalar one element in device memory (read
// when the kernel runs): the pre-multiplied sum's scaling.
int scaleBy(strata_datatype_t datatype, void* dst, const void* src, size_t count, const void* scalar, void* stream);

}  // namespace strata::kernels::device
