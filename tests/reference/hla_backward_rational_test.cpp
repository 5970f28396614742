// The second-order HLA and AHLA adjoints in exact rational arithmetic (docs/gradients.md, "HLA"): for
// second order unmasked, masked (derived decay) and masked as printed, and AHLA; plain and normalised
// (ε = 1/1009, with a dden cotangent); γ = 1 and a rational γ < 1; T ∈ {1, 2, 5, 17}, d ≠ d_v both ways;
// each at checkpoint C ∈ {1, 3, 64}, the duality
//   ⟨do, ȯ⟩ + ⟨dden, ḋen⟩ = Σ_x ⟨∇_x L, δx⟩
// holds exactly (residual 0) for a random rational tangent δ of q, k, v and γ, J·δ from the serial form
// over Dual<rational>; the materialised forms' adjoints (second order unmasked and masked, AHLA) equal
// the serial adjoints entry by entry. From random rational initial summaries (hla_common.h) the same
// holds with a tangent of the summaries too (their gradients ∂L/∂S^K_0, ∂L/∂[C_0 | m_0], ∂L/∂[G_0 | h_0],
// ∂L/∂[P_0 | m^K_0], ∂L/∂[E_0 | n_0] paired with it), and the materialised adjoints (second order masked,
// AHLA) equal the serial ones including the summaries' gradients. Cotangents of the wrong shape, and a
// dden for a plain problem, are refused.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>

#include "hla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

// recurrence, normalised, decay, T
using Param = std::tuple<HlaRecurrence, bool, bool, Eigen::Index>;

HlaShape shape_of(const Param& param) {
  const auto& [r, normalized, decay, T] = param;
  return T % 2 ? HlaShape{T, 3, 2, normalized, decay} : HlaShape{T, 2, 3, normalized, decay};
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [r, normalized, decay, T] = info.param;
  return hla_recurrence_name(r) + (normalized ? "_normalised" : "_plain") + (decay ? "_decay" : "_nodecay") + "_T" +
         std::to_string(T);
}

class HlaBackwardRational : public ::testing::TestWithParam<Param> {};

TEST_P(HlaBackwardRational, AdjointIsTheTransposeOfTheDualJacobian) {
  const HlaRecurrence r = std::get<0>(GetParam());
  const HlaShape shape = shape_of(GetParam());
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(shape.T) + 10 * static_cast<std::uint64_t>(r) +
                             2 * shape.normalized + shape.decay;
  RecordProperty("case", hla_recurrence_name(r) + " " + shape.describe() + " seed=" + std::to_string(seed));
  const hla::Problem<rational> p = make_hla_rational_problem(shape, seed);
  const HlaTangent<rational> delta = make_hla_tangent(shape, seed + 1);
  const hla::Cotangents<rational> cot = make_hla_cotangents(shape, seed + 2);
  const rational lhs = hla_cotangent_pairing(cot, hla_output_tangents(r, p, delta)).value;
  for (const Eigen::Index checkpoint : {1, 3, 64}) {
    const rational rhs = hla_input_pairing(hla_backward(r, p, cot, checkpoint), delta).value;
    EXPECT_EQ(lhs - rhs, rational(0)) << hla_recurrence_name(r) << " " << shape.describe() << " seed " << seed
                                      << " checkpoint " << checkpoint;
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, HlaBackwardRational,
                         ::testing::Combine(::testing::ValuesIn(kHlaRecurrences), ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values<Eigen::Index>(1, 2, 5, 17)),
                         param_name);

class HlaDenseBackwardRational : public ::testing::TestWithParam<Param> {};

TEST_P(HlaDenseBackwardRational, DenseAdjointEqualsSerialAdjoint) {
  const HlaRecurrence r = std::get<0>(GetParam());
  const HlaShape shape = shape_of(GetParam());
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(shape.T) + 10 * static_cast<std::uint64_t>(r) +
                             2 * shape.normalized + shape.decay;
  const hla::Problem<rational> p = make_hla_rational_problem(shape, seed);
  const hla::Cotangents<rational> cot = make_hla_cotangents(shape, seed + 2);
  const hla::Gradients<rational> serial = hla_backward(r, p, cot, 3), dense = hla_materialized_backward(r, p, cot);
  EXPECT_TRUE(dense.dq == serial.dq) << "dq";
  EXPECT_TRUE(dense.dk == serial.dk) << "dk";
  EXPECT_TRUE(dense.dv == serial.dv) << "dv";
  EXPECT_TRUE(dense.dgamma == serial.dgamma) << "dgamma: dense " << dense.dgamma << ", serial " << serial.dgamma;
}

// The printed decay has no materialised form.
INSTANTIATE_TEST_SUITE_P(Grid, HlaDenseBackwardRational,
                         ::testing::Combine(::testing::Values(HlaRecurrence::second_unmasked, HlaRecurrence::second_masked,
                                                              HlaRecurrence::ahla),
                                            ::testing::Bool(), ::testing::Bool(), ::testing::Values<Eigen::Index>(1, 2, 5, 17)),
                         param_name);

class HlaBackwardInitialRational : public ::testing::TestWithParam<Param> {
 protected:
  std::uint64_t seed() const {
    const auto& [r, normalized, decay, T] = GetParam();
    return 900000 + 1000 * static_cast<std::uint64_t>(T) + 10 * static_cast<std::uint64_t>(r) + 2 * normalized + decay;
  }
  hla::Problem<rational> problem() const {
    hla::Problem<rational> p = make_hla_rational_problem(shape_of(GetParam()), seed());
    add_initial_summaries(std::get<0>(GetParam()), p, seed() + 3);
    return p;
  }
};

TEST_P(HlaBackwardInitialRational, AdjointIsTheTransposeOfTheDualJacobian) {
  const HlaRecurrence r = std::get<0>(GetParam());
  const HlaShape shape = shape_of(GetParam());
  RecordProperty("case", hla_recurrence_name(r) + " " + shape.describe() + " seed=" + std::to_string(seed()));
  const hla::Problem<rational> p = problem();
  HlaTangent<rational> delta = make_hla_tangent(shape, seed() + 1);
  add_initial_tangent(p, delta, seed() + 4);
  const hla::Cotangents<rational> cot = make_hla_cotangents(shape, seed() + 2);
  const rational lhs = hla_cotangent_pairing(cot, hla_output_tangents(r, p, delta)).value;
  for (const Eigen::Index checkpoint : {1, 3, 64}) {
    const hla::Gradients<rational> g = hla_backward(r, p, cot, checkpoint);
    ASSERT_EQ(g.d_second_order_initial.has_value(), r != HlaRecurrence::ahla);
    ASSERT_EQ(g.d_ahla_initial.has_value(), r == HlaRecurrence::ahla);
    EXPECT_EQ(lhs - hla_input_pairing(g, delta).value, rational(0))
        << hla_recurrence_name(r) << " " << shape.describe() << " seed " << seed() << " checkpoint " << checkpoint;
  }
  // Only the summaries' part: a tangent of them alone pairs with their gradients alone.
  HlaTangent<rational> only_initial{Mat<rational>::Zero(shape.T, shape.d), Mat<rational>::Zero(shape.T, shape.d),
                                    Mat<rational>::Zero(shape.T, shape.dv), rational(0)};
  add_initial_tangent(p, only_initial, seed() + 4);
  EXPECT_EQ(hla_cotangent_pairing(cot, hla_output_tangents(r, p, only_initial)).value,
            hla_input_pairing(hla_backward(r, p, cot, 3), only_initial).value);
}

INSTANTIATE_TEST_SUITE_P(Grid, HlaBackwardInitialRational,
                         ::testing::Combine(::testing::ValuesIn(kHlaRecurrences), ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values<Eigen::Index>(1, 2, 5, 17)),
                         param_name);

class HlaDenseBackwardInitialRational : public HlaBackwardInitialRational {};

TEST_P(HlaDenseBackwardInitialRational, DenseAdjointEqualsSerialAdjoint) {
  const HlaRecurrence r = std::get<0>(GetParam());
  const hla::Problem<rational> p = problem();
  const hla::Cotangents<rational> cot = make_hla_cotangents(shape_of(GetParam()), seed() + 2);
  const hla::Gradients<rational> serial = hla_backward(r, p, cot, 3), dense = hla_materialized_backward(r, p, cot);
  EXPECT_TRUE(dense.dq == serial.dq) << "dq";
  EXPECT_TRUE(dense.dk == serial.dk) << "dk";
  EXPECT_TRUE(dense.dv == serial.dv) << "dv";
  EXPECT_TRUE(dense.dgamma == serial.dgamma) << "dgamma: dense " << dense.dgamma << ", serial " << serial.dgamma;
  if (r == HlaRecurrence::ahla) {
    ASSERT_TRUE(dense.d_ahla_initial && serial.d_ahla_initial);
    EXPECT_TRUE(dense.d_ahla_initial->p == serial.d_ahla_initial->p) << "d [P_0 | m^K_0]";
    EXPECT_TRUE(dense.d_ahla_initial->e == serial.d_ahla_initial->e) << "d [E_0 | n_0]";
  } else {
    ASSERT_TRUE(dense.d_second_order_initial && serial.d_second_order_initial);
    EXPECT_TRUE(dense.d_second_order_initial->sk == serial.d_second_order_initial->sk) << "d S^K_0";
    EXPECT_TRUE(dense.d_second_order_initial->c == serial.d_second_order_initial->c) << "d [C_0 | m_0]";
    EXPECT_TRUE(dense.d_second_order_initial->g == serial.d_second_order_initial->g) << "d [G_0 | h_0]";
  }
}

// The materialised forms with an initial state: second order masked and AHLA.
INSTANTIATE_TEST_SUITE_P(Grid, HlaDenseBackwardInitialRational,
                         ::testing::Combine(::testing::Values(HlaRecurrence::second_masked, HlaRecurrence::ahla),
                                            ::testing::Bool(), ::testing::Bool(), ::testing::Values<Eigen::Index>(1, 2, 5, 17)),
                         param_name);

TEST(HlaBackwardRational, RefusesCotangentsOfTheWrongShape) {
  const HlaShape plain{4, 2, 3, false, false}, normalised{4, 2, 3, true, false};
  auto expect_refused = [](const hla::Problem<rational>& p, const hla::Cotangents<rational>& c, const std::string& what) {
    for (const HlaRecurrence r : kHlaRecurrences) {
      try {
        hla_backward(r, p, c, 64);
        ADD_FAILURE() << hla_recurrence_name(r) << " accepted a bad " << what;
      } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      }
    }
  };
  expect_refused(make_hla_rational_problem(plain, 1), {Mat<rational>::Zero(4, 2), {}}, "d_o");
  expect_refused(make_hla_rational_problem(plain, 1), {Mat<rational>::Zero(3, 3), {}}, "d_o");
  expect_refused(make_hla_rational_problem(plain, 1), {Mat<rational>(), Vec<rational>::Zero(4)}, "d_den");
  expect_refused(make_hla_rational_problem(normalised, 1), {Mat<rational>(), Vec<rational>::Zero(3)}, "d_den");
}

}  // namespace
