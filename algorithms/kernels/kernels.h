// Reduction and copy kernels on host memory, chosen per (datatype, op) and
// per instruction set. The instruction set is picked at run time from what the
// CPU has (AVX-512, AVX2, else portable C++), or forced for tests/benchmarks.
//
// Semantics, identical in every instruction set so results are bitwise equal
// whichever kernel a rank picked:
//  - integers wrap modulo 2^bits (computed as unsigned);
//  - float16 / bfloat16 are widened to float32, combined, and rounded back to
//    nearest-even once per call;
//  - min/max of floats: if either input is NaN the result is NaN;
//  - STRATA_AVG combines like STRATA_SUM; the caller divides once at the end
//    with scaleDown().
#pragma once

#include <cstddef>

#include "strata/strata.h"

namespace strata::kernels {

enum class Isa { Portable = 0, Avx2 = 1, Avx512 = 2 };

// dst[i] = a[i] op b[i] for i < count. dst may equal a or b (not partially
// overlap). Algorithms reduce into cache-hot slots and use non-temporal
// stores only for copies (copy() below), so kernels use regular stores.
using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);

// The kernel for (datatype, op) in the given instruction set; never null for
// valid datatype/op and an isa that isSupported().
ReduceFn kernel(strata_datatype_t datatype, strata_op_t op, Isa isa);

// dst[i] = src[i] / divisor (integer types truncate toward zero; float types
// divide in their computation precision and round once). dst may equal src.
void scaleDown(void* dst, const void* src, size_t count, strata_datatype_t datatype, int divisor);

// dst[i] = src[i] * scalar, where scalar points at one element of datatype
// (integers wrap; float16 and bfloat16 multiply in float32 and round to
// nearest even): the pre-multiplied sum's scaling. dst may equal src.
void scaleBy(void* dst, const void* src, size_t count, strata_datatype_t datatype, const void* scalar);

// memcpy, with non-temporal stores when asked (and the size makes them pay).
void copy(void* dst, const void* src, size_t bytes, bool nonTemporal);

// Best instruction set this CPU supports, or the one STRATA_REDUCE_ISA names
// (portable, avx2, avx512; an unsupported choice falls back with a warning).
Isa selectedIsa();

bool isSupported(Isa isa);
const char* isaName(Isa isa);

}  // namespace strata::kernels
