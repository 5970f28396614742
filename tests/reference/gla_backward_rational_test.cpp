// The GLA adjoint in exact rational arithmetic (docs/gradients.md, "GLA"): with and without an initial
// state, T ∈ {1, 2, 5, 65} and d_k ≠ d_v both ways (d_k = 3, d_v = 2 with an initial state, d_k = 2,
// d_v = 3 without), for do only, dht only and both, each at checkpoint C ∈ {1, 7, 64}, the duality
//   ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ = Σ_x ⟨∇_x L, δx⟩
// holds exactly (residual 0) for a random rational tangent δ of every input (q, k, v, the decays a,
// S_0), J·δ coming from serial over Dual<rational> and Jᵀ·(do, dht) from backward.
#include <gtest/gtest.h>

#include <tuple>

#include "gla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

// T, initial state.
using GlaGridParam = std::tuple<Eigen::Index, bool>;

Shape shape_of(const GlaGridParam& param) {
  const auto& [T, init] = param;
  return init ? Shape{T, 3, 2, true} : Shape{T, 2, 3, false};
}

std::string param_name(const ::testing::TestParamInfo<GlaGridParam>& info) {
  const auto& [T, init] = info.param;
  return std::string("T") + std::to_string(T) + (init ? "_S0" : "_zero");
}

class GlaBackwardRational : public ::testing::TestWithParam<GlaGridParam> {};

TEST_P(GlaBackwardRational, AdjointIsTheTransposeOfTheDualJacobian) {
  const Shape shape = shape_of(GetParam());
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(shape.T) + (shape.initial_state ? 1 : 0);
  RecordProperty("seed", std::to_string(seed));
  const gla::Problem<rational> p = make_gla_rational_problem(shape, seed);
  const GlaInputTangent<rational> delta = make_gla_tangent(shape, seed + 1);
  const larc::ref::SeqResult<rational> jvp = gla_output_tangents(p, delta);
  for (const Seeds w : kAllSeeds) {
    const gla::Cotangents<rational> cot = make_rational_cotangents(shape, w, seed + 2);
    const rational lhs = cotangent_pairing(cot, jvp).value;
    for (const Eigen::Index checkpoint : {1, 7, 64}) {
      const rational rhs = gla_input_pairing(gla::backward(p, cot, checkpoint), delta).value;
      EXPECT_EQ(lhs - rhs, rational(0)) << "GLA seed " << seed << " T " << shape.T << " cotangents " << seeds_name(w)
                                        << " checkpoint " << checkpoint;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, GlaBackwardRational,
                         ::testing::Combine(::testing::Values<Eigen::Index>(1, 2, 5, 65), ::testing::Bool()), param_name);

}  // namespace
