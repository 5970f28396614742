// The delta-rule adjoint on the other rungs of the precision ladder (float, double, float128, 166-bit
// MPFR): the duality ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ = Σ_x ⟨∇_x L, δx⟩ with J·δ from serial over Dual<S>, to
// c·(T + d_k)·u·M (expect_duality_to_rounding, delta_rule_backward_check.h) with c = 4: the worst
// measured residual / ((T + d_k)·u·M) over this grid is 0.33 (on every rung).
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

INSTANTIATE_TEST_SUITE_P(Grid, DeltaRuleBackwardLadder,
                         ::testing::Combine(::testing::Values(Mechanism::deltanet, Mechanism::gdn, Mechanism::kla),
                                            ::testing::Values<Eigen::Index>(1, 5, 64, 130), ::testing::Bool()),
                         grid_param_name);

}  // namespace
