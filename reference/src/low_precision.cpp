#include "larc/reference/low_precision.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace larc::ref {

std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp32: return "fp32";
    case Dtype::fp64: return "fp64";
  }
  return "?";
}

float round_to_bf16(float x) {
  if (std::isnan(x)) return x;
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  // Add half an ulp of bf16 plus the parity bit of the kept part: round to nearest, ties to even.
  const std::uint32_t keep_lsb = (bits >> 16) & 1u;
  bits += 0x7fffu + keep_lsb;
  bits &= 0xffff0000u;
  float r;
  std::memcpy(&r, &bits, sizeof r);
  return r;
}

float round_to_fp16(float x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  const float ax = std::fabs(x);
  constexpr float max_half = 65504.0f;
  // Values at or above max + half an ulp (2^15 · 2^-11 · ... = 65520) overflow to infinity.
  if (ax >= 65520.0f) return std::copysign(std::numeric_limits<float>::infinity(), x);
  int exp2;
  std::frexp(ax, &exp2);               // ax = m · 2^exp2, m in [0.5, 1)
  const int e = std::max(exp2, -13);   // subnormal halves share the exponent of 2^-14
  const float quantum = std::ldexp(1.0f, e - 11);  // spacing of halves near ax
  // nearbyint rounds ties to even in the default rounding mode; ax/quantum is exact in float.
  const float r = std::nearbyint(ax / quantum) * quantum;
  return std::copysign(std::min(r, max_half), x);
}

double round_to(Dtype d, double x) {
  switch (d) {
    case Dtype::bf16: return round_to_bf16(static_cast<float>(x));
    case Dtype::fp16: return round_to_fp16(static_cast<float>(x));
    case Dtype::fp32: return static_cast<float>(x);
    case Dtype::fp64: return x;
  }
  throw std::invalid_argument("round_to: unknown dtype");
}

double dtype_unit_roundoff(Dtype d) {
  switch (d) {
    case Dtype::bf16: return std::ldexp(1.0, -8);
    case Dtype::fp16: return std::ldexp(1.0, -11);
    case Dtype::fp32: return std::ldexp(1.0, -24);
    case Dtype::fp64: return std::ldexp(1.0, -53);
  }
  throw std::invalid_argument("dtype_unit_roundoff: unknown dtype");
}

}  // namespace larc::ref
