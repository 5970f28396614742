// The log-linear adjoints in exact rational arithmetic (docs/gradients.md, "Log-linear attention"), Mamba-2
// and GDN, T ∈ {1, 2, 3, 5, 16, 17, 33} (every level count up to 7, T at and past a power of two),
// d_k ≠ d_v both ways, one spare λ column on odd T, some decays exactly 0 on T ≡ 1 mod 4:
//  - the duality ⟨do, ȯ⟩ = Σ_x ⟨∇_x L, δx⟩ holds exactly (residual 0) for backward (the Fenwick
//    recurrence's adjoint) at checkpoints C ∈ {1, 3, 64}, for a random rational tangent δ of every input
//    (q, k, v, α, β, λ), J·δ from serial over Dual<rational>;
//  - materialized_backward (the dense form's adjoint) equals backward entry by entry;
//  - Mamba-2's dβ is 0 (it ignores β); a d_o of the wrong shape is refused, naming d_o;
//  - continuing after t0 ∈ {1, 5, 64, 100} tokens from random carried level states, T ∈ {1, 5, 17}: both
//    checks with the carried states' gradients in the pairing and in the comparison.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>

#include "log_linear_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

using Param = std::tuple<ll::Variant, Eigen::Index>;

LogLinearShape shape_of(const Param& param) {
  const auto& [variant, T] = param;
  return T % 2 ? LogLinearShape{variant, T, 3, 2, 1} : LogLinearShape{variant, T, 2, 3, 0};
}

std::uint64_t seed_of(const Param& param) {
  return 1000 * static_cast<std::uint64_t>(std::get<1>(param)) + (std::get<0>(param) == ll::Variant::gdn ? 1 : 0);
}

bool zero_decays_of(const Param& param) { return std::get<1>(param) % 4 == 1; }

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(ll::variant_name(std::get<0>(info.param))) + "_T" + std::to_string(std::get<1>(info.param));
}

class LogLinearBackwardRational : public ::testing::TestWithParam<Param> {};

TEST_P(LogLinearBackwardRational, AdjointIsTheTransposeOfTheDualJacobian) {
  const LogLinearShape shape = shape_of(GetParam());
  const std::uint64_t seed = seed_of(GetParam());
  RecordProperty("case", shape.describe() + " seed=" + std::to_string(seed));
  const ll::Problem<rational> p = make_log_linear_rational_problem(shape, seed, zero_decays_of(GetParam()));
  const LogLinearTangent<rational> delta = make_log_linear_tangent(shape, seed + 1);
  const Mat<rational> d_o = make_log_linear_cotangent(shape, seed + 2);
  const rational lhs = log_linear_cotangent_pairing(d_o, log_linear_output_tangents(p, delta)).value;
  for (const Eigen::Index checkpoint : {1, 3, 64}) {
    const rational rhs = log_linear_input_pairing(ll::backward(p, d_o, checkpoint), delta).value;
    EXPECT_EQ(lhs - rhs, rational(0)) << shape.describe() << " seed " << seed << " checkpoint " << checkpoint;
  }
}

TEST_P(LogLinearBackwardRational, DenseAdjointEqualsFenwickAdjoint) {
  const LogLinearShape shape = shape_of(GetParam());
  const std::uint64_t seed = seed_of(GetParam());
  RecordProperty("case", shape.describe() + " seed=" + std::to_string(seed));
  const ll::Problem<rational> p = make_log_linear_rational_problem(shape, seed, zero_decays_of(GetParam()));
  const Mat<rational> d_o = make_log_linear_cotangent(shape, seed + 2);
  const ll::Gradients<rational> fenwick = ll::backward(p, d_o, 3);
  EXPECT_EQ(first_difference(ll::materialized_backward(p, d_o), fenwick), "") << shape.describe() << " seed " << seed;
  if (shape.variant == ll::Variant::mamba2) {
    EXPECT_TRUE(fenwick.dbeta.isZero(0)) << "Mamba-2 dβ must be 0";
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, LogLinearBackwardRational,
                         ::testing::Combine(::testing::Values(ll::Variant::mamba2, ll::Variant::gdn),
                                            ::testing::Values<Eigen::Index>(1, 2, 3, 5, 16, 17, 33)),
                         param_name);

using StartParam = std::tuple<ll::Variant, std::uint64_t, Eigen::Index>;

class LogLinearBackwardStartRational : public ::testing::TestWithParam<StartParam> {};

TEST_P(LogLinearBackwardStartRational, AdjointsWithCarriedStates) {
  const auto& [variant, t0, T] = GetParam();
  const LogLinearShape shape = T % 2 ? LogLinearShape{variant, T, 3, 2, 1, t0} : LogLinearShape{variant, T, 2, 3, 0, t0};
  const std::uint64_t seed = 7 * t0 + static_cast<std::uint64_t>(T);
  RecordProperty("case", shape.describe() + " seed=" + std::to_string(seed));
  const ll::Problem<rational> p = make_log_linear_rational_problem(shape, seed, T % 4 == 1);
  const LogLinearTangent<rational> delta = make_log_linear_tangent(shape, seed + 1);
  const Mat<rational> d_o = make_log_linear_cotangent(shape, seed + 2);
  const rational lhs = log_linear_cotangent_pairing(d_o, log_linear_output_tangents(p, delta)).value;
  for (const Eigen::Index checkpoint : {1, 3, 64}) {
    const ll::Gradients<rational> g = ll::backward(p, d_o, checkpoint);
    ASSERT_EQ(g.d_start_states.size(), larc::ref::fenwick::carried_levels(t0).size());
    EXPECT_EQ(lhs - log_linear_input_pairing(g, delta).value, rational(0)) << shape.describe() << " checkpoint " << checkpoint;
  }
  EXPECT_EQ(first_difference(ll::materialized_backward(p, d_o), ll::backward(p, d_o, 3)), "") << shape.describe();
}

INSTANTIATE_TEST_SUITE_P(Grid, LogLinearBackwardStartRational,
                         ::testing::Combine(::testing::Values(ll::Variant::mamba2, ll::Variant::gdn),
                                            ::testing::Values<std::uint64_t>(1, 5, 64, 100),
                                            ::testing::Values<Eigen::Index>(1, 5, 17)),
                         [](const ::testing::TestParamInfo<StartParam>& info) {
                           return std::string(ll::variant_name(std::get<0>(info.param))) + "_t0_" +
                                  std::to_string(std::get<1>(info.param)) + "_T" + std::to_string(std::get<2>(info.param));
                         });

TEST(LogLinearBackwardRational, RefusesACotangentOfTheWrongShape) {
  const LogLinearShape shape{ll::Variant::gdn, 4, 2, 3, 0};
  const ll::Problem<rational> p = make_log_linear_rational_problem(shape, 5);
  for (const auto& bad : {Mat<rational>::Zero(4, 2), Mat<rational>::Zero(3, 3)}) {
    for (int dense = 0; dense < 2; ++dense) {
      try {
        if (dense) ll::materialized_backward(p, Mat<rational>(bad));
        else ll::backward(p, Mat<rational>(bad));
        ADD_FAILURE() << "a " << bad.rows() << "×" << bad.cols() << " d_o was accepted";
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("log_linear::backward: d_o"), std::string::npos) << e.what();
      }
    }
  }
}

}  // namespace
