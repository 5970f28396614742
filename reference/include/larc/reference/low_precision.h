// Emulated bf16/fp16 input rounding for the same-precision baseline (DESIGN.md "Tolerance policy"):
// a kernel in dtype D reads its inputs rounded to D and accumulates in float, so the baseline rounds
// the same inputs the same way (round to nearest, ties to even) and computes in float.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "larc/common/dtype.h"
#include "larc/reference/types.h"

namespace larc::ref {

using larc::Dtype;  // the shared vocabulary's dtypes; rounding takes the floating-point ones
using larc::dtype_name;

// Rounds a float to the nearest bf16 (8-bit mantissa), ties to even; NaN stays NaN.
float round_to_bf16(float x);
// Rounds a float to the nearest IEEE half (11-bit mantissa, subnormals, overflow to ±inf), ties to even.
float round_to_fp16(float x);
// Rounds a float to the nearest TF32 number (11 significant bits, float's exponent range), ties to
// even: the operand format of fp32 matrix products on TF32 tensor cores.
float round_to_tf32(float x);
// A float with its 13 low mantissa bits cleared (TF32 by truncation toward zero): what a tensor core
// reads when it is fed fp32 registers without a conversion.
float truncate_to_tf32(float x);
// Rounds a double to dtype D in one step (not through float) and returns it widened back to double;
// throws std::invalid_argument for an integer dtype.
double round_to(Dtype d, double x);
// Rounds a double to IEEE half's significand and subnormal quantum, ties to even, but without its overflow:
// above 65504 the 11 significant bits continue with double's exponent range.
double round_to_fp16_without_overflow(double x);

template <class S>
Mat<S> round_matrix_to(Dtype d, const Mat<S>& m) {
  return m.unaryExpr([d](const S& x) { return from_double<S>(round_to(d, to_double(x))); });
}
template <class S>
Vec<S> round_vector_to(Dtype d, const Vec<S>& m) {
  return m.unaryExpr([d](const S& x) { return from_double<S>(round_to(d, to_double(x))); });
}

// Unit roundoff of dtype D: 2^-8 (bf16), 2^-11 (fp16), 2^-24 (fp32), 2^-53 (fp64).
double dtype_unit_roundoff(Dtype d);

}  // namespace larc::ref
