// The check shared by the log_linear_forms_* tests: materialized, serial and chunked (every chunk
// size 1, 2, 4, …, 64) give the same outputs, exactly for exact scalars and to the scalar's
// precision otherwise.
//
// Tolerance (derived as in delta_rule_forms_check.h, not fitted): |form − serial| ≤ c (T + d_k) u M
// per entry, u the unit roundoff, M = scale · max_t ‖q_t‖₁ · Σ_ℓ max_t |λ_t^{(ℓ)}| · M_S with M_S the
// largest entry of any level state along the recurrence (every form reads some weighted sum of such
// states, or of their pieces, at every token), and c = 4. The cases use unit keys and β ≤ 1, so every
// transition is a contraction (G = 1 in delta_rule_forms_check.h's terms).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "forms_tolerance.h"
#include "larc/properties/log_linear_cases.h"
#include "larc/reference/log_linear.h"

namespace larc::testing {

namespace ll = larc::ref::log_linear;

inline constexpr Eigen::Index kLogLinearChunks[] = {1, 2, 4, 8, 16, 32, 64};
inline constexpr int kLogLinearTs[] = {1, 2, 3, 15, 16, 17, 300};

template <class S>
double log_linear_magnitude(const ll::Problem<S>& p) {
  ll::State<S> st(p.variant, p.dk(), p.dv());
  double state = 0, q1 = 0;
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(), p.alpha(t),
            p.variant == ll::Variant::gdn ? p.beta(t) : S(1), p.lambda.row(t).transpose(), p.scale);
    st.levels().for_each_live([&](int, const Mat<S>& s) { state = std::max(state, max_abs<S>(s)); });
    double row = 0;
    for (Eigen::Index i = 0; i < p.dk(); ++i) row += std::fabs(larc::ref::to_double(p.q(t, i)));
    q1 = std::max(q1, row);
  }
  double lambda_sum = 0;
  for (Eigen::Index l = 0; l < p.lambda.cols(); ++l) lambda_sum += max_abs<S>(Mat<S>(p.lambda.col(l)));
  return std::fabs(larc::ref::to_double(p.scale)) * q1 * lambda_sum * state;
}

template <class S>
void check_log_linear_forms(const ll::Problem<S>& p, const std::string& what) {
  const Mat<S> want = ll::serial(p);
  const double bound = 4.0 * double(p.T() + p.dk()) * log_linear_magnitude(p);
  expect_agree<S>(ll::materialized(p), want, bound, what + " materialized vs serial");
  for (Eigen::Index c : kLogLinearChunks)
    expect_agree<S>(ll::chunked(p, c), want, bound, what + " chunked C=" + std::to_string(c) + " vs serial");
}

}  // namespace larc::testing
