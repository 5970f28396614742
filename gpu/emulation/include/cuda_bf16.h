// bf16 as the host emulation provides it (cuda_runtime.h): the storage type, its pair, and the
// conversions gpu/src uses, rounding to nearest even as the device's do.
#pragma once

#include <bit>
#include <cstdint>

#include "cuda_runtime.h"

struct __nv_bfloat16 {
  std::uint16_t bits;
};
struct __nv_bfloat162 {
  __nv_bfloat16 x, y;
};

inline float __bfloat162float(__nv_bfloat16 h) { return std::bit_cast<float>(std::uint32_t{h.bits} << 16); }

inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  auto word = std::bit_cast<std::uint32_t>(f);
  if ((word & 0x7fffffffu) > 0x7f800000u) return {static_cast<std::uint16_t>((word >> 16) | 0x40u)};  // NaN stays NaN
  word += 0x7fffu + ((word >> 16) & 1u);  // to nearest, ties to even (carries into the exponent, to ±inf)
  return {static_cast<std::uint16_t>(word >> 16)};
}

inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) { return {__float2bfloat16_rn(a), __float2bfloat16_rn(b)}; }
inline float2 __bfloat1622float2(__nv_bfloat162 h) { return {__bfloat162float(h.x), __bfloat162float(h.y)}; }
