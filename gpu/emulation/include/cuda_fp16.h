// fp16 as the host emulation provides it (cuda_runtime.h): the storage type and the conversions gpu/src
// uses, rounding to nearest even with fp16's subnormals, overflow to ±inf, as the device's do.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "cuda_runtime.h"

struct __half {
  std::uint16_t bits;
};

inline float __half2float(__half h) {
  const std::uint32_t sign = std::uint32_t{h.bits & 0x8000u} << 16;
  const int exponent = (h.bits >> 10) & 0x1f;
  const std::uint32_t mantissa = h.bits & 0x3ffu;
  float magnitude;
  if (exponent == 0x1f) magnitude = mantissa != 0 ? NAN : INFINITY;
  else if (exponent == 0) magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), exponent - 25);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(magnitude) | sign);
}

inline __half __float2half_rn(float f) {
  const auto sign = static_cast<std::uint16_t>((std::bit_cast<std::uint32_t>(f) >> 16) & 0x8000u);
  const float a = std::fabs(f);
  if (std::isnan(f)) return {static_cast<std::uint16_t>(sign | 0x7e00u)};
  if (a >= 65520.f) return {static_cast<std::uint16_t>(sign | 0x7c00u)};  // rounds past the largest finite
  // Multiples of fp16's spacing at a's binade (2^-24 below the normal range), rounded to nearest even
  // by nearbyint in the default rounding mode: exact, since a has 24 bits and the scaling is a power of 2.
  const int e = a < 6.103515625e-05f ? -14 : std::ilogb(a);
  const float units = std::nearbyint(std::ldexp(a, 10 - e));  // a / 2^(e − 10)
  std::uint32_t m = static_cast<std::uint32_t>(units);
  int exponent = e + 15;
  if (a < 6.103515625e-05f) {
    exponent = m >= 0x400u ? 1 : 0;  // rounded up to the smallest normal
    return {static_cast<std::uint16_t>(sign | (exponent << 10) | (m & 0x3ffu))};
  }
  if (m == 0x800u) {  // rounded up to the next binade
    m = 0x400u;
    ++exponent;
  }
  return {static_cast<std::uint16_t>(sign | (exponent << 10) | (m & 0x3ffu))};
}
