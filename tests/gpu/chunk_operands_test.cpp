// The chunked kernels' operand split (gpu/src/chunk_operands.cuh) on the host emulation, through the pair
// that writes and reads an operand (store_pair, element): three bf16 terms carry every fp32 value exactly up
// to bf16's largest, (2 − 2^-7)·2^127 (above it hi rounds to infinity) — subnormals and values below 2^-110
// too, since each term is stored scaled up by 2^(8n) and none falls among bf16's subnormals — and two terms
// carry 16 significant bits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "chunk_operands.cuh"

namespace {

namespace ops = larc::gpu::detail::chunk_operands;
using Bf16 = __nv_bfloat16;

// Both signs of every binade of fp32, the subnormals' included, with random significands, up to bf16's
// largest finite value, and the edges: zero, the smallest subnormal, the largest subnormal, the smallest
// normal, bf16's largest.
std::vector<float> every_binade(int per_binade) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<std::uint32_t> significand(0, (1u << 23) - 1);
  const float bf16_max = std::ldexp(2.f - std::ldexp(1.f, -7), 127);
  std::vector<float> out{0.f, std::ldexp(1.f, -149), std::ldexp(1.f, -126) - std::ldexp(1.f, -149), std::ldexp(1.f, -126),
                         bf16_max};
  for (std::uint32_t exponent = 0; exponent < 255; ++exponent)
    for (int i = 0; i < per_binade; ++i) {
      const std::uint32_t bits = exponent << 23 | significand(rng) | (i % 2 == 0 ? 0u : 0x80000000u);
      float x;
      std::memcpy(&x, &bits, sizeof x);
      if (std::fabs(x) <= bf16_max) out.push_back(x);
    }
  return out;
}

// (x0, x1) stored into an operand of TERMS planes and read back element by element.
template <int TERMS>
std::pair<float, float> through_operand(float x0, float x1) {
  std::vector<std::uint32_t> words(ops::operand_words<Bf16, TERMS>(1, 16));
  const auto op = ops::operand_at<Bf16, TERMS, 16>(words.data(), 1);
  ops::store_pair(op, 0, 0, x0, x1);
  return {ops::element(op, 0, 0), ops::element(op, 0, 1)};
}

TEST(ChunkOperands, ThreeTermsCarryEveryFp32ValueExactly) {
  const std::vector<float> xs = every_binade(64);
  int inexact = 0;
  for (std::size_t i = 0; i + 1 < xs.size(); i += 2) {
    const auto [y0, y1] = through_operand<3>(xs[i], xs[i + 1]);
    for (const auto& [x, y] : {std::pair{xs[i], y0}, std::pair{xs[i + 1], y1}})
      if (y != x && ++inexact <= 8) ADD_FAILURE() << x << " came back as " << y;
  }
  EXPECT_EQ(inexact, 0);
}

TEST(ChunkOperands, TwoTermsCarrySixteenSignificantBits) {
  const std::vector<float> xs = every_binade(64);
  double worst = 0;  // the largest error over its bound
  for (std::size_t i = 0; i + 1 < xs.size(); i += 2) {
    const auto [y0, y1] = through_operand<2>(xs[i], xs[i + 1]);
    for (const auto& [x, y] : {std::pair{xs[i], y0}, std::pair{xs[i + 1], y1}}) {
      // hi is x to 8 bits; lo the remainder (≤ 2^-8 |x|) to 8 more, or to its spacing 2^-141 where it is tiny.
      const double bound = std::max(std::ldexp(std::fabs(double{x}), -16), std::ldexp(1.0, -142));
      worst = std::max(worst, std::fabs(double{y} - double{x}) / bound);
    }
  }
  EXPECT_LE(worst, 1.0);
}

}  // namespace
