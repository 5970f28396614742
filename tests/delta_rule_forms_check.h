// The check shared by the delta_rule_forms_* tests: every form of a delta-rule problem (serial,
// materialized, chunked at each chunk size) gives the same outputs and final state, exactly for
// exact scalars and to the scalar's precision otherwise.
//
// Tolerance (derived, not fitted): |form − serial| ≤ c · (T + d_k) · u · M, per entry, with
//   u  the scalar's unit roundoff, measured by unit_roundoff<S>();
//   M  the magnitude the rounding errors scale with: for outputs, the largest Σ_i |scale q_ti S_t,ij|
//      over t and j (the absolute terms of the read o_t = scale S_t^T q_t); for the final state, the
//      largest |S_t,ij| over t (the states the errors were made on). Normalising by max|o| instead
//      would be wrong: o_t can cancel to ~0 while its rounding error stays ~u·Σ|terms|;
//   T + d_k  the growth: each token adds errors from dot products of length d_k, and none grows
//      afterwards because every transition α(I − βkk^T) of these problems is a contraction
//      (delta_rule_cases.h), so the errors of the T tokens add up;
//   c = 8  the stated constant. Over 20 seeds of this grid the worst measured ratio
//      |form − serial| / ((T + d_k) u M) was 1.2 (double) and 0.44 (dd), so c leaves a margin of ~6.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "delta_rule_cases.h"

namespace larc::testing {

inline constexpr Eigen::Index kChunkSizes[] = {1, 7, 16, 64};
inline constexpr double kGrowthConstant = 8;

struct Magnitudes {
  double output = 0;  // max_{t,j} Σ_i |scale q_ti S_t,ij|
  double state = 0;   // max_{t,i,j} |S_t,ij|, S_0 included
};

// Runs the recurrence (State::step) and records the magnitudes above, in double.
template <class S>
Magnitudes magnitudes(const dr::Problem<S>& p) {
  Magnitudes m;
  dr::State<S> st(p.start_state());
  m.state = max_abs<S>(st.matrix());
  const double scale = std::fabs(larc::ref::to_double(p.scale));
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(), p.alpha(t), p.beta(t), p.scale);
    const Mat<double> s = larc::ref::cast_matrix<double>(st.matrix()).cwiseAbs();
    const Vec<double> q = larc::ref::cast_vector<double>(Vec<S>(p.q.row(t).transpose())).cwiseAbs();
    m.state = std::max(m.state, s.maxCoeff());
    m.output = std::max(m.output, scale * (q.transpose() * s).maxCoeff());
  }
  return m;
}

// got == want exactly (exact scalars) or within c·(T + d_k)·u·magnitude.
template <class S>
void expect_agree(const Mat<S>& got, const Mat<S>& want, double magnitude, Eigen::Index growth, const std::string& what) {
  ASSERT_EQ(got.rows(), want.rows()) << what;
  ASSERT_EQ(got.cols(), want.cols()) << what;
  if constexpr (larc::ref::ScalarTraits<S>::exact) {
    EXPECT_TRUE(got == want) << what << ": not exactly equal, max |difference| ≈ " << max_abs_diff<S>(got, want);
  } else {
    const double u = larc::ref::to_double(larc::ref::unit_roundoff<S>());
    const double tol = kGrowthConstant * static_cast<double>(growth) * u * magnitude;
    const double err = max_abs_diff<S>(got, want);
    EXPECT_LE(err, tol) << what << ": max |difference| " << err << " = " << err / (static_cast<double>(growth) * u * magnitude)
                        << " (T + d_k)·u·M, allowed " << kGrowthConstant;
  }
}

// Compares one form's result against the serial recurrence's.
template <class S>
void expect_same_result(const larc::ref::SeqResult<S>& got, const larc::ref::SeqResult<S>& want, const Magnitudes& m,
                        Eigen::Index growth, const std::string& what) {
  expect_agree<S>(got.o, want.o, m.output, growth, what + " outputs");
  expect_agree<S>(got.final_state, want.final_state, m.state, growth, what + " final state");
}

// serial == materialized == chunked(C) for every C in kChunkSizes.
template <class S>
void expect_forms_agree(const dr::Problem<S>& p, const std::string& label) {
  ::testing::Test::RecordProperty("case", label);
  Magnitudes m;
  if constexpr (!larc::ref::ScalarTraits<S>::exact) m = magnitudes(p);
  const Eigen::Index growth = p.T() + p.dk();
  const larc::ref::SeqResult<S> serial = dr::serial(p);
  ASSERT_EQ(serial.o.rows(), p.T());
  expect_same_result(dr::materialized(p), serial, m, growth, label + ": materialized vs serial");
  for (const Eigen::Index c : kChunkSizes)
    expect_same_result(dr::chunked(p, c), serial, m, growth, label + ": chunked C=" + std::to_string(c) + " vs serial");
}

}  // namespace larc::testing
