// The check shared by the delta_rule_forms_* tests: every form of a delta-rule problem (serial,
// materialized, chunked at each chunk size) gives the same outputs and final state, exactly for
// exact scalars and to the scalar's precision otherwise.
//
// Tolerance (derived, not fitted): |form − serial| ≤ c · (T + d_k) · G · u · M, per entry, with
//   u  the scalar's unit roundoff, measured by unit_roundoff<S>();
//   M  the magnitude the rounding errors scale with, from the states S_0..S_T of the recurrence:
//      for the final state M_S = max_{t,i,j} |S_t,ij| (every state the errors were made on); for
//      outputs M_o = scale · max_t ‖q_t‖₁ · M_S, which bounds the absolute terms of o_t = scale S^T q_t
//      read from any of those states (the chunked form reads o_t off its chunk's start state, which
//      can be far larger than S_t after erasure or decay). Normalising by max|o| instead would be
//      wrong: o_t can cancel to ~0 while its rounding error stays ~u·Σ|terms|;
//   T + d_k  the growth over the sequence: each token adds errors from dot products of length d_k;
//   G  how much later transitions amplify an error: max_s Π_{r≥s} max(1, ‖M_r‖₂) for the transitions
//      M_r = α_r(I − β_r k_r k_r^T), ‖M_r‖₂ = α_r max(1, |1 − β_r‖k_r‖²|) (the first term only when
//      d_k ≥ 2). G = 1 when every transition is a contraction (β‖k‖² ≤ 2, as in delta_rule_cases.h),
//      and the errors of the T tokens then just add up;
//   c = 4  the stated constant. Over 20 seeds of the forms grid the worst measured ratio
//      |form − serial| / ((T + d_k) G u M) was 0.78 (double) and 0.36 (dd), and 0.73 over 3600
//      random gen_delta_case problems in double, so c leaves a margin of 5.
#pragma once

#include <tuple>
#include <utility>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>

#include "delta_rule_cases.h"

namespace larc::testing {

inline constexpr Eigen::Index kChunkSizes[] = {1, 7, 16, 64};
inline constexpr double kGrowthConstant = 4;

struct Magnitudes {
  double output = 0;  // M_o = scale · max_t ‖q_t‖₁ · M_S
  double state = 0;   // M_S = max_{t,i,j} |S_t,ij|, S_0 included
};

// Runs the recurrence (State::step) and records the magnitudes above, in double.
template <class S>
Magnitudes magnitudes(const dr::Problem<S>& p) {
  Magnitudes m;
  dr::State<S> st(p.start_state());
  m.state = max_abs<S>(st.matrix());
  double max_q1 = 0;
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(), p.alpha(t), p.beta(t), p.scale);
    m.state = std::max(m.state, max_abs<S>(st.matrix()));
    double q1 = 0;
    for (Eigen::Index i = 0; i < p.dk(); ++i) q1 += std::fabs(larc::ref::to_double(p.q(t, i)));
    max_q1 = std::max(max_q1, q1);
  }
  m.output = std::fabs(larc::ref::to_double(p.scale)) * max_q1 * m.state;
  return m;
}

// (T + d_k) · G of the tolerance above, in double.
template <class S>
double growth_factor(const dr::Problem<S>& p) {
  double g = 1, run = 1;
  for (Eigen::Index r = p.T() - 1; r >= 0; --r) {
    const double alpha = larc::ref::to_double(p.alpha(r));
    const double bkk = larc::ref::to_double(p.beta(r)) * larc::ref::to_double(S(p.k.row(r).squaredNorm()));
    const double norm = std::fabs(alpha) * std::max(p.dk() >= 2 ? 1.0 : 0.0, std::fabs(1.0 - bkk));
    run *= std::max(1.0, norm);
    g = std::max(g, run);
  }
  return static_cast<double>(p.T() + p.dk()) * g;
}

// Compares one form's result against the serial recurrence's.
template <class S>
void expect_same_result(const larc::ref::SeqResult<S>& got, const larc::ref::SeqResult<S>& want, const Magnitudes& m,
                        double growth, const std::string& what) {
  expect_agree<S>(got.o, want.o, kGrowthConstant * growth * m.output, what + " outputs");
  expect_agree<S>(got.final_state, want.final_state, kGrowthConstant * growth * m.state, what + " final state");
}

// serial == materialized == chunked(C) for every C in kChunkSizes.
template <class S>
void expect_forms_agree(const dr::Problem<S>& p, const std::string& label) {
  ::testing::Test::RecordProperty("case", label);
  Magnitudes m;
  if constexpr (!larc::ref::ScalarTraits<S>::exact) m = magnitudes(p);
  const double growth = growth_factor(p);
  const larc::ref::SeqResult<S> serial = dr::serial(p);
  ASSERT_EQ(serial.o.rows(), p.T());
  expect_same_result(dr::materialized(p), serial, m, growth, label + ": materialized vs serial");
  for (const Eigen::Index c : kChunkSizes)
    expect_same_result(dr::chunked(p, c), serial, m, growth, label + ": chunked C=" + std::to_string(c) + " vs serial");
}

// One cell of the forms grid that the delta_rule_forms_{double,dd,rational} tests instantiate.
using Dims = std::pair<Eigen::Index, Eigen::Index>;  // (d_k, d_v)
using GridParam = std::tuple<Mechanism, Eigen::Index, bool, Dims>;  // mechanism, T, initial state, dims

inline std::string grid_param_name(const ::testing::TestParamInfo<GridParam>& info) {
  const auto& [mech, T, init, dims] = info.param;
  return mechanism_name(mech) + "_T" + std::to_string(T) + (init ? "_S0" : "_zero") + "_dk" +
         std::to_string(dims.first) + "_dv" + std::to_string(dims.second);
}

// Builds the cell's problem with make(mechanism, shape, seed) and checks that its forms agree.
template <class Make>
void check_grid_cell(const GridParam& param, Make&& make) {
  const auto& [mech, T, init, dims] = param;
  const Shape shape{T, dims.first, dims.second, init};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 10 * dims.first + (init ? 1 : 0);
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  expect_forms_agree(make(mech, shape, seed), describe(mech, shape, seed));
}

}  // namespace larc::testing
