// Honest rounding draws of derived gates (reference/rounding_draw.h): draw 0 is the identity; a draw moves
// entries by one ulp or not at all, about half of the inexact ones, never 0, 1 or a non-finite value; a
// draw is a function of (draw, the values naming its stream, salt) alone; other draws, names and salts move
// other entries; a stream named by values changes with any of them.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "larc/reference/rounding_draw.h"

namespace {

using larc::ref::in_rounding_draw;
using larc::ref::Vec;

Vec<float> decays(Eigen::Index n) {
  Vec<float> x(n);
  for (Eigen::Index i = 0; i < n; ++i) x(i) = std::exp(-0.001f * static_cast<float>(i + 1));
  return x;
}

TEST(RoundingDraw, DrawZeroLeavesTheValues) {
  const Vec<float> x = decays(100);
  EXPECT_EQ(in_rounding_draw(x, 0, x, 7), x);
}

TEST(RoundingDraw, MovesAboutHalfOfTheEntriesByOneUlpEach) {
  const Vec<float> x = decays(4000);
  const Vec<float> y = in_rounding_draw(x, 3, x, 11);
  int moved = 0, up = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    if (y(i) == x(i)) continue;
    ++moved;
    up += y(i) > x(i);
    EXPECT_TRUE(y(i) == std::nextafter(x(i), 2.0f) || y(i) == std::nextafter(x(i), 0.0f)) << i;
  }
  EXPECT_NEAR(moved, 2000, 150);
  EXPECT_NEAR(up, moved / 2, 100);
}

TEST(RoundingDraw, LeavesExactAndNonFiniteValues) {
  Vec<float> x(5);
  x << 0.0f, 1.0f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 0.5f;
  for (std::uint64_t draw = 1; draw <= 64; ++draw) {
    const Vec<float> y = in_rounding_draw(x, draw, x, 0);
    EXPECT_EQ(y(0), 0.0f);
    EXPECT_EQ(y(1), 1.0f);
    EXPECT_EQ(y(2), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(y(3)));
  }
}

TEST(RoundingDraw, IsAFunctionOfTheDrawAndTheStream) {
  const Vec<double> x = decays(500).cast<double>(), names = decays(20).cast<double>(), others = decays(21).cast<double>();
  EXPECT_EQ(in_rounding_draw(x, 5, names, 2), in_rounding_draw(x, 5, names, 2));
  EXPECT_NE(in_rounding_draw(x, 5, names, 2), in_rounding_draw(x, 6, names, 2));
  EXPECT_NE(in_rounding_draw(x, 5, names, 2), in_rounding_draw(x, 5, names, 3));
  EXPECT_NE(in_rounding_draw(x, 5, names, 2), in_rounding_draw(x, 5, others, 2));
}

TEST(RoundingDraw, AStreamOfValuesIsNamedByTheValuesAlone) {
  const Vec<float> x = decays(64);
  Vec<float> y = x;
  EXPECT_EQ(larc::ref::stream_of_values(x, 1), larc::ref::stream_of_values(y, 1));
  EXPECT_NE(larc::ref::stream_of_values(x, 1), larc::ref::stream_of_values(x, 2));
  y(63) = std::nextafter(y(63), 0.0f);
  EXPECT_NE(larc::ref::stream_of_values(x, 1), larc::ref::stream_of_values(y, 1));
}

}  // namespace
