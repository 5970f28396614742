// The delta-rule adjoint in exact rational arithmetic: for DeltaNet, GDN (α an input) and KLA (η an
// input, β = η / (‖k‖² + ε)), with and without an initial state, with do only, dht only or both,
// T ∈ {1, 2, 5, 64, 65, 130}, checkpoints C ∈ {1, 7, 64} and d_k ≠ d_v both ways (d_k = 3, d_v = 2
// with an initial state, d_k = 2, d_v = 3 without), the duality
//   ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ = Σ_x ⟨∇_x L, δx⟩
// holds exactly (residual 0) for a random rational tangent δ of every input, J·δ coming from
// serial over Dual<rational> and Jᵀ·(do, dht) from backward (delta_rule_backward_check.h).
#include <gtest/gtest.h>

#include <tuple>

#include "delta_rule_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

using Param = std::tuple<Mechanism, Eigen::Index, bool>;  // mechanism, T, initial state

Shape shape_of(Eigen::Index T, bool init) { return init ? Shape{T, 3, 2, true} : Shape{T, 2, 3, false}; }

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [mech, T, init] = info.param;
  const Shape s = shape_of(T, init);
  return mechanism_name(mech) + "_T" + std::to_string(T) + (init ? "_S0" : "_zero") + "_dk" + std::to_string(s.dk) +
         "_dv" + std::to_string(s.dv);
}

class DeltaRuleBackwardRational : public ::testing::TestWithParam<Param> {};

TEST_P(DeltaRuleBackwardRational, AdjointIsTheTransposeOfTheDualJacobian) {
  const auto& [mech, T, init] = GetParam();
  const Shape shape = shape_of(T, init);
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 10 * static_cast<std::uint64_t>(mech) + (init ? 1 : 0);
  RecordProperty("seed", std::to_string(seed));
  const Case<rational> c = make_rational_case(mech, shape, seed);
  const InputTangent<rational> delta = make_rational_tangent(shape, seed + 1);
  const larc::ref::SeqResult<rational> jvp = output_tangents(c, delta);
  for (const Seeds w : {Seeds::d_o, Seeds::d_final_state, Seeds::both}) {
    const dr::Cotangents<rational> cot = make_rational_cotangents(shape, w, seed + 2);
    const rational lhs = cotangent_pairing(cot, jvp).value;
    for (const Eigen::Index checkpoint : {1, 7, 64}) {
      const rational rhs = input_pairing(input_gradients(c, cot, checkpoint), delta).value;
      EXPECT_EQ(lhs - rhs, rational(0)) << mechanism_name(mech) << " seed " << seed << " cotangents "
                                        << seeds_name(w) << " checkpoint " << checkpoint;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, DeltaRuleBackwardRational,
                         ::testing::Combine(::testing::Values(Mechanism::deltanet, Mechanism::gdn, Mechanism::kla),
                                            ::testing::Values<Eigen::Index>(1, 2, 5, 64, 65, 130), ::testing::Bool()),
                         param_name);

}  // namespace
