// The delta-rule adjoint on the other rungs of the precision ladder (float, double, float128, 166-bit
// MPFR): the duality ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ = Σ_x ⟨∇_x L, δx⟩ with J·δ from serial over Dual<S>, to
// c·(T + d_k)·u·M (expect_duality_to_rounding, delta_rule_backward_check.h) with c = 4: the worst
// measured residual / ((T + d_k)·u·M) over this grid is 0.33 (on every rung). And, in double, the
// checkpoint does not change the gradients by a single bit: the reverse pass recomputes each state
// with serial's own operations in serial's order, whatever the checkpoint.
#include <gtest/gtest.h>

#include "delta_rule_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

constexpr double kDualityConstant = 4;

class DeltaRuleBackwardLadder : public ::testing::TestWithParam<GridParam> {};

TEST_P(DeltaRuleBackwardLadder, Float) { expect_duality_to_rounding<float>(GetParam(), kDualityConstant); }
TEST_P(DeltaRuleBackwardLadder, Double) { expect_duality_to_rounding<double>(GetParam(), kDualityConstant); }
TEST_P(DeltaRuleBackwardLadder, Float128) { expect_duality_to_rounding<larc::ref::f128>(GetParam(), kDualityConstant); }
TEST_P(DeltaRuleBackwardLadder, Mpfr50) { expect_duality_to_rounding<larc::ref::mpfr50>(GetParam(), kDualityConstant); }

TEST_P(DeltaRuleBackwardLadder, CheckpointLeavesDoubleGradientsBitwiseEqual) {
  const Shape shape = grid_shape(GetParam());
  const std::uint64_t seed = grid_seed(GetParam());
  const Case<double> c = cast_case<double>(make_rational_case(std::get<0>(GetParam()), shape, seed, /*unit_keys=*/true));
  const dr::Cotangents<double> cot = cast_cotangents<double>(make_rational_cotangents(shape, Seeds::both, seed + 2));
  const dr::Gradients<double> every_token = dr::backward(c.problem, cot, 1);
  for (const Eigen::Index checkpoint : {7, 64, 1000}) {
    const dr::Gradients<double> g = dr::backward(c.problem, cot, checkpoint);
    EXPECT_TRUE(g.dq == every_token.dq && g.dk == every_token.dk && g.dv == every_token.dv &&
                g.dalpha == every_token.dalpha && g.dbeta == every_token.dbeta &&
                g.d_initial_state == every_token.d_initial_state)
        << "checkpoint " << checkpoint << " vs 1, seed " << seed;
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, DeltaRuleBackwardLadder,
                         ::testing::Combine(::testing::Values(Mechanism::deltanet, Mechanism::gdn, Mechanism::kla),
                                            ::testing::Values<Eigen::Index>(1, 5, 64, 130), ::testing::Bool()),
                         grid_param_name);

}  // namespace
