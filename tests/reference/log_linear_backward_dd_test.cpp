// The log-linear adjoints in rounded arithmetic at long sequences (docs/gradients.md, "Log-linear
// attention"): the duality ⟨do, ȯ⟩ = Σ_x ⟨∇_x L, δx⟩ in dd_real, J·δ from serial over Dual<dd>, for
// backward at T ∈ {64, 300} (7 and 10 Fenwick levels, beyond the exact grid's 33 tokens) with checkpoints
// C ∈ {1, 7, 64}, and for materialized_backward at T = 64; Mamba-2 and GDN (unit keys, β ≤ 1, so every
// transition is a contraction). The residual must stay below (T + d_k) u M, u dd's unit roundoff and M
// the sum of both sides' |terms| (each term is formed by O(T + d_k) rounded operations); the worst measured
// residual / ((T + d_k) u M) over this grid is 0.002.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "log_linear_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::dd;

using Param = std::tuple<ll::Variant, Eigen::Index>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(ll::variant_name(std::get<0>(info.param))) + "_T" + std::to_string(std::get<1>(info.param));
}

class LogLinearBackwardDd : public ::testing::TestWithParam<Param> {};

TEST_P(LogLinearBackwardDd, AdjointsAreTheTransposeOfTheDualJacobianToRounding) {
  const auto& [variant, T] = GetParam();
  const LogLinearShape shape{variant, T, 3, 2, 1};
  const std::uint64_t seed = 7000 + static_cast<std::uint64_t>(T) + (variant == ll::Variant::gdn ? 1 : 0);
  RecordProperty("case", shape.describe() + " seed=" + std::to_string(seed));
  const ll::Problem<dd> p =
      cast_log_linear_problem<dd>(make_log_linear_rational_problem(shape, seed, /*zero_decays=*/false, /*unit_keys=*/true));
  const LogLinearTangent<dd> delta = cast_log_linear_tangent<dd>(make_log_linear_tangent(shape, seed + 1));
  const Mat<dd> d_o = larc::ref::cast_matrix<dd>(make_log_linear_cotangent(shape, seed + 2));
  const Pairing<dd> lhs = log_linear_cotangent_pairing(d_o, log_linear_output_tangents(p, delta));
  const double u = larc::ref::to_double(larc::ref::unit_roundoff<dd>());
  auto expect_close = [&](const Pairing<dd>& rhs, const std::string& what) {
    const double residual = std::fabs(larc::ref::to_double(dd(lhs.value - rhs.value)));
    const double scaled = static_cast<double>(T + shape.dk) * u * larc::ref::to_double(dd(lhs.magnitude + rhs.magnitude));
    EXPECT_LE(residual, scaled) << shape.describe() << " " << what << ": residual / ((T + d_k) u M) = " << residual / scaled;
  };
  for (const Eigen::Index checkpoint : {1, 7, 64})
    expect_close(log_linear_input_pairing(ll::backward(p, d_o, checkpoint), delta), "backward C=" + std::to_string(checkpoint));
  if (T <= 64) expect_close(log_linear_input_pairing(ll::materialized_backward(p, d_o), delta), "materialized_backward");
}

INSTANTIATE_TEST_SUITE_P(Grid, LogLinearBackwardDd,
                         ::testing::Combine(::testing::Values(ll::Variant::mamba2, ll::Variant::gdn),
                                            ::testing::Values<Eigen::Index>(64, 300)),
                         param_name);

}  // namespace
