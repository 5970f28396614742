// Comparing two computations of the same quantity in a scalar S: exactly for exact scalars, else to
// a tolerance u · bound, u the scalar's measured unit roundoff and bound the product of a stated
// constant, a growth factor and a magnitude that each test family derives (delta_rule_forms_check.h,
// linear_attention_cases.h). Differences are taken in S, then reported as double.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "larc/reference/types.h"

namespace larc::testing {

using larc::ref::Mat;
using larc::ref::Vec;

template <class S>
double max_abs(const Mat<S>& a) {
  double m = 0;
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j) m = std::max(m, std::fabs(larc::ref::to_double(a(i, j))));
  return m;
}

// max |a − b|, the difference taken in S (so it is not lost to rounding to double first).
template <class S>
double max_abs_diff(const Mat<S>& a, const Mat<S>& b) {
  return max_abs<S>(Mat<S>(a - b));
}

// got == want exactly (exact scalars) or max |got − want| ≤ u · bound.
template <class S>
void expect_agree(const Mat<S>& got, const Mat<S>& want, double bound, const std::string& what) {
  ASSERT_EQ(got.rows(), want.rows()) << what;
  ASSERT_EQ(got.cols(), want.cols()) << what;
  if constexpr (larc::ref::ScalarTraits<S>::exact) {
    EXPECT_TRUE(got == want) << what << ": not exactly equal, max |difference| ≈ " << max_abs_diff<S>(got, want);
  } else {
    const double u = larc::ref::to_double(larc::ref::unit_roundoff<S>());
    const double err = max_abs_diff<S>(got, want);
    EXPECT_LE(err, u * bound) << what << ": max |difference| " << err << " exceeds u·bound = " << u * bound
                              << " (ratio " << err / (u * bound) << ")";
  }
}

}  // namespace larc::testing
