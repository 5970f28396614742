#include "larc/reference/low_precision.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

namespace larc::ref {

namespace {
// Rounds x once to the nearest number with `digits` significant bits, normal exponents down to
// 2^(min_exp−1) and subnormals below, ties to even; magnitudes that round past `max_finite` become
// ±inf. Exact steps only: x / quantum scales by a power of two, nearbyint rounds ties to even in the
// default rounding mode, and every result fits a double. Rounding a double in one step matters:
// going through float first rounds twice (1 + 2^-8 + 2^-40 becomes the bf16 tie 1 + 2^-8, then 1).
double round_to_format(double x, int digits, int min_exp, double max_finite) {
  // In the format's normal range (|x| ≥ 2^(min_exp−1)) that is rounding the double's 52 fraction bits to
  // digits − 1, ties to even: integer arithmetic on the bit pattern, where a carry out of the fraction moves
  // x to the next binade as it should. The same rounding as below, without its division and rescaling.
  std::uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  const int biased_exponent = static_cast<int>((bits >> 52) & 0x7ff);
  if (biased_exponent != 0x7ff && biased_exponent - 1023 >= min_exp - 1) {
    const int dropped = 53 - digits;
    const std::uint64_t low = (std::uint64_t{1} << dropped) - 1;
    bits += (low >> 1) + ((bits >> dropped) & 1);
    bits &= ~low;
    double r;
    std::memcpy(&r, &bits, sizeof r);
    return std::fabs(r) > max_finite ? std::copysign(std::numeric_limits<double>::infinity(), x) : r;
  }
  if (std::isnan(x) || std::isinf(x)) return x;
  int exp2;
  std::frexp(std::fabs(x), &exp2);             // |x| = m · 2^exp2, m in [0.5, 1)
  const int e = std::max(exp2, min_exp);       // subnormals share the smallest normal exponent
  const double quantum = std::ldexp(1.0, e - digits);  // spacing of the format near |x|
  const double r = std::nearbyint(std::fabs(x) / quantum) * quantum;
  return std::copysign(r > max_finite ? std::numeric_limits<double>::infinity() : r, x);
}

// bf16: 8 significant bits, float's exponent range (smallest normal 2^-126), largest (2 − 2^-7)·2^127.
double round_bf16(double x) { return round_to_format(x, 8, -125, std::ldexp(2.0 - std::ldexp(1.0, -7), 127)); }
// IEEE half: 11 significant bits, smallest normal 2^-14, largest 65504; 65520 ties to 2^16 = inf.
double round_fp16(double x) { return round_to_format(x, 11, -13, 65504.0); }
}  // namespace

float round_to_bf16(float x) { return static_cast<float>(round_bf16(x)); }

float round_to_fp16(float x) { return static_cast<float>(round_fp16(x)); }

// TF32: 10 stored mantissa bits and float's exponent range (smallest normal 2^-126, largest
// (2 − 2^-10)·2^127); a float never rounds past it to inf except from float's own top binade.
float round_to_tf32(float x) {
  return static_cast<float>(round_to_format(x, 11, -125, std::ldexp(2.0 - std::ldexp(1.0, -10), 127)));
}

float truncate_to_tf32(float x) {
  std::uint32_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) return x;  // inf and NaN stay
  bits &= ~std::uint32_t{0x1fff};
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

double round_to_fp16_without_overflow(double x) {
  return round_to_format(x, 11, -13, std::numeric_limits<double>::max());
}

double round_to(Dtype d, double x) {
  switch (d) {
    case Dtype::bf16: return round_bf16(x);
    case Dtype::fp16: return round_fp16(x);
    case Dtype::fp32: return static_cast<float>(x);
    case Dtype::fp64: return x;
    default: break;
  }
  throw std::invalid_argument("round_to: " + std::string(dtype_name(d)) + " is not a floating-point dtype");
}

double dtype_unit_roundoff(Dtype d) {
  switch (d) {
    case Dtype::bf16: return std::ldexp(1.0, -8);
    case Dtype::fp16: return std::ldexp(1.0, -11);
    case Dtype::fp32: return std::ldexp(1.0, -24);
    case Dtype::fp64: return std::ldexp(1.0, -53);
    default: break;
  }
  throw std::invalid_argument("dtype_unit_roundoff: " + std::string(dtype_name(d)) + " is not a floating-point dtype");
}

}  // namespace larc::ref
