// The linear-attention adjoint in exact rational arithmetic (docs/gradients.md, "Linear attention"):
// for the plain read and the ratio read, both with identity features (ELU + 1 needs e^x; its chain
// rule is checked in linear_attention_backward_mpfr_test.cpp), with and without an initial memory,
// T ∈ {1, 2, 5, 65} and d_k ≠ d_v both ways (d_k = 3, d_v = 2 with an initial memory, d_k = 2, d_v = 3
// without), for do only, (dS_T, dz_T) only and both, each at checkpoint C ∈ {1, 7, 64}, the duality
//   ⟨do, ȯ⟩ + ⟨dS_T, Ṡ_T⟩ + ⟨dz_T, ż_T⟩ = Σ_x ⟨∇_x L, δx⟩
// holds exactly (residual 0) for a random rational tangent δ of every input (q, k, v, S_0, z_0), J·δ
// coming from serial over Dual<rational> and Jᵀ·cotangents from backward.
#include <gtest/gtest.h>

#include <tuple>

#include "linear_attention_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::testing::LaShape;
using larc::testing::LaVariant;

// Ratio read or plain read, T, initial memory.
using LaGridParam = std::tuple<bool, Eigen::Index, bool>;

LaShape shape_of(const LaGridParam& param) {
  const auto& [ratio, T, init] = param;
  return init ? LaShape{T, 3, 2, true} : LaShape{T, 2, 3, false};
}

std::string param_name(const ::testing::TestParamInfo<LaGridParam>& info) {
  const auto& [ratio, T, init] = info.param;
  return std::string(ratio ? "ratio" : "plain") + "_T" + std::to_string(T) + (init ? "_memory" : "_empty");
}

class LinearAttentionBackwardRational : public ::testing::TestWithParam<LaGridParam> {};

TEST_P(LinearAttentionBackwardRational, AdjointIsTheTransposeOfTheDualJacobian) {
  const LaShape shape = shape_of(GetParam());
  const LaVariant variant{la::FeatureMap::identity, std::get<0>(GetParam())};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(shape.T) + (variant.ratio ? 10 : 0) + (shape.initial_memory ? 1 : 0);
  RecordProperty("seed", std::to_string(seed));
  const la::Problem<rational> p = larc::testing::make_la_rational_problem(variant, shape, seed);
  const LaInputTangent<rational> delta = make_la_tangent(shape, seed + 1);
  const la::Result<rational> jvp = la_output_tangents(p, delta);
  for (const Seeds w : kAllSeeds) {
    const la::Cotangents<rational> cot = make_la_cotangents(shape, w, seed + 2);
    const rational lhs = la_cotangent_pairing(cot, jvp).value;
    for (const Eigen::Index checkpoint : {1, 7, 64}) {
      const rational rhs = la_input_pairing(la::backward(p, cot, checkpoint), delta).value;
      EXPECT_EQ(lhs - rhs, rational(0)) << larc::testing::describe(variant, shape, seed) << " cotangents "
                                        << seeds_name(w) << " checkpoint " << checkpoint;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, LinearAttentionBackwardRational,
                         ::testing::Combine(::testing::Bool(), ::testing::Values<Eigen::Index>(1, 2, 5, 65), ::testing::Bool()),
                         param_name);

}  // namespace
