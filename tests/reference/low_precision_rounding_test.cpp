// bf16 / fp16 input rounding (reference/low_precision.h), checked against hand-computed values at the
// edges (ties, subnormals, overflow, NaN) and, by brute force, against rounding done independently:
// GCC's _Float16 conversion for fp16, and nearest-of-two-neighbours by exact distance for bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "larc/reference/low_precision.h"

namespace {

using larc::ref::Dtype;
using larc::ref::round_to;
using larc::ref::round_to_bf16;
using larc::ref::round_to_fp16;
using larc::ref::round_to_fp16_without_overflow;

constexpr float inf = std::numeric_limits<float>::infinity();

float p2(int e) { return std::ldexp(1.0f, e); }

float from_bits(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
std::uint32_t to_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// Bitwise equality that also distinguishes +0 from −0.
::testing::AssertionResult same_float(float got, float want) {
  if (to_bits(got) == to_bits(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "got " << std::hexfloat << got << " want " << want;
}

// bf16 keeps 8 significant bits: the spacing just above 1 is 2^-7, half of it 2^-8.
TEST(RoundToBf16, TiesGoToEvenMantissa) {
  EXPECT_TRUE(same_float(round_to_bf16(1.0f + p2(-8)), 1.0f));                 // 1 | 1+2^-7: even is 1
  EXPECT_TRUE(same_float(round_to_bf16(1.0f + 3 * p2(-8)), 1.0f + p2(-6)));    // 1+2^-7 | 1+2^-6: even is 1+2^-6
  EXPECT_TRUE(same_float(round_to_bf16(1.0f + 5 * p2(-8)), 1.0f + p2(-6)));    // 1+2^-6 | 1+3·2^-7: even is 1+2^-6
  EXPECT_TRUE(same_float(round_to_bf16(-(1.0f + p2(-8))), -1.0f));
  EXPECT_TRUE(same_float(round_to_bf16(-(1.0f + 3 * p2(-8))), -(1.0f + p2(-6))));
}

TEST(RoundToBf16, OffTiesGoToNearest) {
  EXPECT_TRUE(same_float(round_to_bf16(1.0f + p2(-8) + p2(-20)), 1.0f + p2(-7)));
  EXPECT_TRUE(same_float(round_to_bf16(1.0f + p2(-8) - p2(-20)), 1.0f));
  EXPECT_TRUE(same_float(round_to_bf16(3.14159265f), 3.140625f));  // 3.140625 = 201·2^-6, next 3.15625
  EXPECT_TRUE(same_float(round_to_bf16(0.0f), 0.0f));
  EXPECT_TRUE(same_float(round_to_bf16(-0.0f), -0.0f));
}

// bf16 shares float's exponent range, so its subnormals are spaced 2^-126 · 2^-7 = 2^-133.
TEST(RoundToBf16, Subnormals) {
  EXPECT_TRUE(same_float(round_to_bf16(p2(-133)), p2(-133)));
  EXPECT_TRUE(same_float(round_to_bf16(p2(-134)), 0.0f));                // tie 0 | 2^-133: even is 0
  EXPECT_TRUE(same_float(round_to_bf16(3 * p2(-134)), p2(-132)));        // tie 2^-133 | 2^-132
  EXPECT_TRUE(same_float(round_to_bf16(p2(-134) + p2(-149)), p2(-133)));  // just above the tie
  EXPECT_TRUE(same_float(round_to_bf16(p2(-149)), 0.0f));                // float's smallest subnormal
  EXPECT_TRUE(same_float(round_to_bf16(-p2(-149)), -0.0f));
}

// Largest bf16: (2 − 2^-7)·2^127; halfway to 2^128 is (2 − 2^-8)·2^127, which ties to the even 2^128 = inf.
TEST(RoundToBf16, OverflowInfinityAndNaN) {
  const float max_bf16 = (2.0f - p2(-7)) * p2(127);
  EXPECT_TRUE(same_float(round_to_bf16(max_bf16), max_bf16));
  EXPECT_TRUE(same_float(round_to_bf16((2.0f - p2(-8)) * p2(127)), inf));
  EXPECT_TRUE(same_float(round_to_bf16((2.0f - p2(-8) - p2(-20)) * p2(127)), max_bf16));
  EXPECT_TRUE(same_float(round_to_bf16(std::numeric_limits<float>::max()), inf));
  EXPECT_TRUE(same_float(round_to_bf16(-std::numeric_limits<float>::max()), -inf));
  EXPECT_TRUE(same_float(round_to_bf16(inf), inf));
  EXPECT_TRUE(same_float(round_to_bf16(-inf), -inf));
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload sits only in the low 16 bits must not be truncated into an infinity.
  EXPECT_TRUE(std::isnan(round_to_bf16(from_bits(0x7f800001u))));
  EXPECT_TRUE(std::isnan(round_to_bf16(from_bits(0xff800001u))));
}

// IEEE half keeps 11 significant bits: spacing 2^-10 above 1, half of it 2^-11.
TEST(RoundToFp16, TiesGoToEvenMantissa) {
  EXPECT_TRUE(same_float(round_to_fp16(1.0f + p2(-11)), 1.0f));
  EXPECT_TRUE(same_float(round_to_fp16(1.0f + 3 * p2(-11)), 1.0f + p2(-9)));
  EXPECT_TRUE(same_float(round_to_fp16(1.0f + p2(-11) + p2(-22)), 1.0f + p2(-10)));
  EXPECT_TRUE(same_float(round_to_fp16(-(1.0f + 3 * p2(-11))), -(1.0f + p2(-9))));
  EXPECT_TRUE(same_float(round_to_fp16(2049.0f), 2048.0f));  // spacing 2 in [2048, 4096): tie → 2048
  EXPECT_TRUE(same_float(round_to_fp16(2051.0f), 2052.0f));  // tie 2050 | 2052 → 2052 (even)
  EXPECT_TRUE(same_float(round_to_fp16(-0.0f), -0.0f));
}

// Half subnormals: spacing 2^-24 below the smallest normal 2^-14.
TEST(RoundToFp16, Subnormals) {
  EXPECT_TRUE(same_float(round_to_fp16(p2(-24)), p2(-24)));
  EXPECT_TRUE(same_float(round_to_fp16(p2(-25)), 0.0f));                 // tie 0 | 2^-24
  EXPECT_TRUE(same_float(round_to_fp16(p2(-25) + p2(-40)), p2(-24)));
  EXPECT_TRUE(same_float(round_to_fp16(3 * p2(-25)), p2(-23)));          // tie 2^-24 | 2^-23
  EXPECT_TRUE(same_float(round_to_fp16(5 * p2(-25)), p2(-23)));          // tie 2^-23 | 3·2^-24
  EXPECT_TRUE(same_float(round_to_fp16(p2(-14) - p2(-25)), p2(-14)));    // tie (2^10−1)·2^-24 | 2^-14
  EXPECT_TRUE(same_float(round_to_fp16(p2(-14) - p2(-24)), p2(-14) - p2(-24)));  // largest subnormal
  EXPECT_TRUE(same_float(round_to_fp16(-p2(-26)), -0.0f));
  EXPECT_TRUE(same_float(round_to_fp16(p2(-149)), 0.0f));
}

// Largest half 65504 = (2 − 2^-10)·2^15; 65520 is halfway to 2^16 and ties to the even 2^16 = inf.
TEST(RoundToFp16, OverflowInfinityAndNaN) {
  EXPECT_TRUE(same_float(round_to_fp16(65504.0f), 65504.0f));
  EXPECT_TRUE(same_float(round_to_fp16(65519.996f), 65504.0f));
  EXPECT_TRUE(same_float(round_to_fp16(65520.0f), inf));
  EXPECT_TRUE(same_float(round_to_fp16(-65520.0f), -inf));
  EXPECT_TRUE(same_float(round_to_fp16(65536.0f), inf));
  EXPECT_TRUE(same_float(round_to_fp16(1e30f), inf));
  EXPECT_TRUE(same_float(round_to_fp16(inf), inf));
  EXPECT_TRUE(same_float(round_to_fp16(-inf), -inf));
  EXPECT_TRUE(std::isnan(round_to_fp16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(round_to_fp16(from_bits(0x7f800001u))));
}

// The io grade's fp16 operands (matmul_operands.h): half's rounding below 65504, its subnormal quantum
// included; above, 11 significant bits with double's range instead of inf.
TEST(RoundToFp16WithoutOverflow, IsHalfBelowItsLargestAndKeepsElevenBitsAbove) {
  for (double x : {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 65504.0, 65519.0, -3.0e-6, 0x1p-25, 0x1.8p-24, 1e-9})
    EXPECT_EQ(round_to_fp16_without_overflow(x), round_to(Dtype::fp16, x)) << x;
  EXPECT_EQ(round_to_fp16_without_overflow(65520.0), 65536.0);  // the tie goes to the even 2^16, not to inf
  EXPECT_EQ(round_to_fp16_without_overflow(-1e5), -100000.0 + 32.0);  // 2^16..2^17: spacing 64; 1e5 = 1562.5·64
  EXPECT_EQ(round_to_fp16_without_overflow(3.0e38), std::ldexp(std::nearbyint(std::ldexp(3.0e38, -117)), 117));
  EXPECT_TRUE(std::isinf(round_to_fp16_without_overflow(std::numeric_limits<double>::infinity())));
  EXPECT_TRUE(std::isnan(round_to_fp16_without_overflow(std::numeric_limits<double>::quiet_NaN())));
}

// Random floats: half of them random bit patterns (every exponent, subnormals, NaNs, infinities), half
// ±m·2^e with e uniform in [e_min, e_max) — the target format's range, where most of its edges live.
std::vector<float> random_floats(std::uint64_t seed, int n, int e_min, int e_max) {
  std::mt19937_64 rng(seed);
  std::vector<float> xs;
  xs.reserve(n);
  for (int i = 0; i < n; ++i) {
    const std::uint64_t r = rng();
    if (i % 2 == 0) {
      xs.push_back(from_bits(static_cast<std::uint32_t>(r)));
    } else {
      const int e = e_min + static_cast<int>((r >> 32) % static_cast<std::uint64_t>(e_max - e_min));
      const float m = 1.0f + static_cast<float>(r & 0x7fffff) * p2(-23);  // every float in [1, 2)
      xs.push_back(std::ldexp(m, e) * ((r >> 63) ? -1.0f : 1.0f));
    }
  }
  return xs;
}

TEST(RoundToFp16, MatchesFloat16ConversionOn100kRandomFloats) {
  constexpr std::uint64_t seed = 0x16f16;
  RecordProperty("seed", std::to_string(seed));
  int mismatches = 0;
  for (const float x : random_floats(seed, 100000, -30, 17)) {
    // GCC's _Float16 (x86-64, GCC ≥ 12) rounds to nearest, ties to even, with subnormals and overflow.
    const float want = static_cast<float>(static_cast<_Float16>(x));
    const float got = round_to_fp16(x);
    const bool ok = std::isnan(want) ? std::isnan(got) : to_bits(got) == to_bits(want);
    if (!ok && ++mismatches <= 5) ADD_FAILURE() << std::hexfloat << "x=" << x << " got " << got << " want " << want;
  }
  EXPECT_EQ(mismatches, 0);
}

// Independent bf16 rounding: the two bf16 neighbours of |x| are its truncation and the next bf16 up;
// pick the nearer by exact distance (float differences are exact in double), ties to the even one.
float bf16_nearest_by_distance(float x) {
  if (std::isnan(x)) return x;
  const std::uint32_t sign = to_bits(x) & 0x80000000u;
  const std::uint32_t mag = to_bits(x) & 0x7fffffffu;
  const std::uint32_t below = mag & 0xffff0000u;
  if (below == mag) return x;  // already a bf16 (including ±inf)
  const std::uint32_t above = below + 0x10000u;
  const double a = std::fabs(static_cast<double>(x));
  const double lo = from_bits(below);
  // `above` may be the pattern of +inf; its value as a rounding target is then 2^128.
  const double hi = above == 0x7f800000u ? std::ldexp(1.0, 128) : static_cast<double>(from_bits(above));
  std::uint32_t pick;
  if (a - lo < hi - a) pick = below;
  else if (hi - a < a - lo) pick = above;
  else pick = ((below >> 16) & 1u) == 0 ? below : above;
  return from_bits(sign | pick);
}

TEST(RoundToBf16, MatchesNearestNeighbourByDistanceOn100kRandomFloats) {
  constexpr std::uint64_t seed = 0xbf16;
  RecordProperty("seed", std::to_string(seed));
  int mismatches = 0;
  for (const float x : random_floats(seed, 100000, -140, 128)) {
    const float want = bf16_nearest_by_distance(x);
    const float got = round_to_bf16(x);
    const bool ok = std::isnan(want) ? std::isnan(got) : to_bits(got) == to_bits(want);
    if (!ok && ++mismatches <= 5) ADD_FAILURE() << std::hexfloat << "x=" << x << " got " << got << " want " << want;
  }
  EXPECT_EQ(mismatches, 0);
}

// round_to(D, double) rounds the double once. Going through float first would round twice:
// 1 + 2^-8 + 2^-40 is above the bf16 tie at 1 + 2^-8, but as a float it *is* that tie (→ 1).
TEST(RoundTo, RoundsADoubleOnceNotThroughFloat) {
  const double x = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  EXPECT_EQ(round_to(Dtype::bf16, x), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(round_to(Dtype::bf16, -x), -(1.0 + std::ldexp(1.0, -7)));
  const double y = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(round_to(Dtype::fp16, y), 1.0 + std::ldexp(1.0, -10));
  // Overflow thresholds are those of the format, not of float: 65520 − 2^-30 stays finite in fp16.
  EXPECT_EQ(round_to(Dtype::fp16, 65520.0 - std::ldexp(1.0, -30)), 65504.0);
  EXPECT_TRUE(std::isinf(round_to(Dtype::fp16, 65520.0)));
  EXPECT_TRUE(std::isinf(round_to(Dtype::bf16, 1e300)));
  EXPECT_TRUE(std::isnan(round_to(Dtype::bf16, std::numeric_limits<double>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(round_to(Dtype::fp16, std::numeric_limits<double>::quiet_NaN())));
}

// Doubles that are no floats, in each format's normal range and at its ties: round_to against the two
// neighbours of |x| in the format (its truncation to `digits` significant bits and the next number up,
// distances exact by Sterbenz), nearer first, ties to the even one, past the largest finite to ±inf.
double nearest_by_distance(double x, int digits, double max_finite) {
  int e;
  std::frexp(std::fabs(x), &e);
  const double quantum = std::ldexp(1.0, e - digits);
  const double lo = std::floor(std::fabs(x) / quantum) * quantum, hi = lo + quantum, a = std::fabs(x);
  double pick = a - lo < hi - a ? lo : hi - a < a - lo ? hi : (std::fmod(lo / quantum, 2.0) == 0 ? lo : hi);
  if (pick > max_finite) pick = std::numeric_limits<double>::infinity();
  return std::copysign(pick, x);
}

TEST(RoundTo, MatchesNearestNeighbourByDistanceOnRandomDoubles) {
  std::mt19937_64 rng(0xd0b1e);
  struct Format { Dtype dtype; int digits, e_min, e_max; double max_finite; };
  const Format formats[] = {{Dtype::bf16, 8, -125, 129, std::ldexp(2.0 - std::ldexp(1.0, -7), 127)},
                            {Dtype::fp16, 11, -13, 17, 65504.0}};
  int mismatches = 0;
  for (const Format& f : formats)
    for (int i = 0; i < 100000; ++i) {
      const std::uint64_t r = rng();
      const int e = f.e_min + static_cast<int>((r >> 12) % static_cast<std::uint64_t>(f.e_max - f.e_min));
      double m = 0.5 + std::ldexp(static_cast<double>(rng() >> 11), -54);  // a double in [0.5, 1)
      if (i % 4 == 0) m = std::ldexp(std::floor(std::ldexp(m, f.digits + 1)), -(f.digits + 1));  // a tie or a number
      const double x = std::ldexp(m, e) * ((r & 1) ? -1.0 : 1.0);
      const double want = nearest_by_distance(x, f.digits, f.max_finite), got = round_to(f.dtype, x);
      if (got != want && ++mismatches <= 5) ADD_FAILURE() << std::hexfloat << "x=" << x << " got " << got << " want " << want;
    }
  EXPECT_EQ(mismatches, 0);
}

TEST(RoundTo, AgreesWithTheFloatRoundingOnFloats) {
  for (const float x : random_floats(7, 20000, -140, 128)) {
    if (std::isnan(x)) continue;
    EXPECT_EQ(round_to(Dtype::bf16, x), static_cast<double>(round_to_bf16(x))) << std::hexfloat << x;
    EXPECT_EQ(round_to(Dtype::fp16, x), static_cast<double>(round_to_fp16(x))) << std::hexfloat << x;
    EXPECT_EQ(round_to(Dtype::fp32, x), static_cast<double>(x));
  }
  EXPECT_EQ(round_to(Dtype::fp32, 1.0 + std::ldexp(1.0, -30)), 1.0);
  EXPECT_EQ(round_to(Dtype::fp64, 1.0 + std::ldexp(1.0, -30)), 1.0 + std::ldexp(1.0, -30));
}

TEST(DtypeUnitRoundoff, IsHalfTheSpacingAboveOne) {
  EXPECT_EQ(larc::ref::dtype_unit_roundoff(Dtype::bf16), std::ldexp(1.0, -8));
  EXPECT_EQ(larc::ref::dtype_unit_roundoff(Dtype::fp16), std::ldexp(1.0, -11));
  EXPECT_EQ(larc::ref::dtype_unit_roundoff(Dtype::fp32), std::ldexp(1.0, -24));
  EXPECT_EQ(larc::ref::dtype_unit_roundoff(Dtype::fp64), std::ldexp(1.0, -53));
  // u is the largest relative error of rounding: 1 + u is a tie that rounds back to 1.
  EXPECT_EQ(round_to(Dtype::bf16, 1.0 + larc::ref::dtype_unit_roundoff(Dtype::bf16)), 1.0);
  EXPECT_EQ(round_to(Dtype::fp16, 1.0 + larc::ref::dtype_unit_roundoff(Dtype::fp16)), 1.0);
}

}  // namespace
