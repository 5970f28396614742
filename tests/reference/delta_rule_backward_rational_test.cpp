// The delta-rule adjoint in exact rational arithmetic: for DeltaNet, GDN (α an input) and KLA (η an
// input, β = η / (‖k‖² + ε)), with and without an initial state, T ∈ {1, 2, 5, 64, 65, 130} and
// d_k ≠ d_v both ways (d_k = 3, d_v = 2 with an initial state, d_k = 2, d_v = 3 without), with do only,
// dht only and both at checkpoint C = 7 and both at C ∈ {1, 64} (the gradients are linear in the
// cotangents and the checkpoint changes no operation, so the full cross product adds nothing), the duality
//   ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ = Σ_x ⟨∇_x L, δx⟩
// holds exactly (residual 0) for a random rational tangent δ of every input, J·δ coming from
// serial over Dual<rational> and Jᵀ·(do, dht) from backward (delta_rule_backward_check.h).
#include <gtest/gtest.h>

#include "delta_rule_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

class DeltaRuleBackwardRational : public ::testing::TestWithParam<GridParam> {};

TEST_P(DeltaRuleBackwardRational, AdjointIsTheTransposeOfTheDualJacobian) {
  const Mechanism mech = std::get<0>(GetParam());
  const Shape shape = grid_shape(GetParam());
  const std::uint64_t seed = grid_seed(GetParam());
  RecordProperty("seed", std::to_string(seed));
  const Case<rational> c = make_rational_case(mech, shape, seed);
  const InputTangent<rational> delta = make_rational_tangent(shape, seed + 1);
  const larc::ref::SeqResult<rational> jvp = output_tangents(c, delta);
  const std::pair<Seeds, Eigen::Index> runs[] = {
      {Seeds::d_o, 7}, {Seeds::d_final_state, 7}, {Seeds::both, 7}, {Seeds::both, 1}, {Seeds::both, 64}};
  for (const auto& [w, checkpoint] : runs) {
    const dr::Cotangents<rational> cot = make_rational_cotangents(shape, w, seed + 2);
    const rational lhs = cotangent_pairing(cot, jvp).value;
    const rational rhs = input_pairing(input_gradients(c, cot, checkpoint), delta).value;
    EXPECT_EQ(lhs - rhs, rational(0)) << mechanism_name(mech) << " seed " << seed << " cotangents " << seeds_name(w)
                                      << " checkpoint " << checkpoint;
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, DeltaRuleBackwardRational,
                         ::testing::Combine(::testing::Values(Mechanism::deltanet, Mechanism::gdn, Mechanism::kla),
                                            ::testing::Values<Eigen::Index>(1, 2, 5, 64, 65, 130), ::testing::Bool()),
                         grid_param_name);

}  // namespace
