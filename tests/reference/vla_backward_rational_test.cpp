// The VLA adjoint in exact rational arithmetic (docs/gradients.md, "VLA"): identity features and no
// normalisations (the rational part: the Sherman–Morrison penalty, the rank-one write, the ratio or
// plain read); ratio and plain read; with and without an initial memory (without one, λ0 reaches A_0 =
// I/λ0); with and without the nudge; T ∈ {1, 2, 5, 7}, d_k ≠ d_v both ways; do only, final memory only
// and both, each at checkpoint C ∈ {1, 3, 64}: the duality
//   ⟨do, ȯ⟩ + ⟨dS_T, Ṡ_T⟩ + ⟨dA_T, Ȧ_T⟩ + dζ_T·ζ̇_T = Σ_x ⟨∇_x L, δx⟩
// holds exactly (residual 0) for a random rational tangent δ of q, k, v, the penalty directions u, λ0
// and the initial memory, J·δ from vla::serial over Dual<rational>; the same with every read denominator
// and a penalty denominator δ at their floor. Cotangents of the wrong shape are refused by name.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>

#include "vla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

// ratio, initial memory, nudge, T
using Param = std::tuple<bool, bool, bool, Eigen::Index>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [ratio, init, nudge, T] = info.param;
  return std::string(ratio ? "ratio" : "plain") + (init ? "_init" : "_empty") + (nudge ? "_nudged" : "") + "_T" +
         std::to_string(T);
}

class VlaBackwardRational : public ::testing::TestWithParam<Param> {};

TEST_P(VlaBackwardRational, AdjointIsTheTransposeOfTheDualJacobian) {
  const auto& [ratio, init, nudge, T] = GetParam();
  const VlaShape shape = T % 2 ? VlaShape{T, 3, 2, ratio, init, nudge} : VlaShape{T, 2, 3, ratio, init, nudge};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 4 * ratio + 2 * init + nudge;
  RecordProperty("case", shape.describe() + " seed=" + std::to_string(seed));
  const vla::Problem<rational> p = make_vla_rational_problem(shape, seed);
  const VlaTangent<rational> delta = make_vla_tangent(shape, seed + 1);
  const vla::Result<rational> jvp = vla_output_tangents(p, delta);
  for (const Seeds w : kAllSeeds) {
    const vla::Cotangents<rational> cot = make_vla_cotangents(shape, w, seed + 2);
    const rational lhs = vla_cotangent_pairing(cot, jvp).value;
    for (const Eigen::Index checkpoint : {1, 3, 64}) {
      const rational rhs = vla_input_pairing(vla::backward(p, cot, checkpoint), delta).value;
      EXPECT_EQ(lhs - rhs, rational(0)) << shape.describe() << " seed " << seed << " cotangents " << seeds_name(w)
                                        << " checkpoint " << checkpoint;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, VlaBackwardRational,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values<Eigen::Index>(1, 2, 5, 7)),
                         param_name);

// The floors max(·, stab_eps) are differentiated on the branch the forward takes: every read
// denominator floored (queries −|q| against positive ζ) and the first δ floored (A_0 = −I, ‖u_1‖ = 2).
TEST(VlaBackwardRational, FlooredDenominatorsAreConstants) {
  const VlaShape shape{5, 3, 2, true, true, false};
  vla::Problem<rational> p = make_vla_rational_problem(shape, 77);
  p.q = -p.q.cwiseAbs();
  p.initial->zeta = p.initial->zeta.cwiseAbs();
  p.initial->a = -Mat<rational>::Identity(3, 3);
  p.u.row(0) << 2, 0, 0;
  const VlaTangent<rational> delta = make_vla_tangent(shape, 78);
  const vla::Result<rational> jvp = vla_output_tangents(p, delta);
  for (const Seeds w : kAllSeeds) {
    const vla::Cotangents<rational> cot = make_vla_cotangents(shape, w, 79);
    const rational lhs = vla_cotangent_pairing(cot, jvp).value;
    for (const Eigen::Index checkpoint : {1, 64}) {
      const rational rhs = vla_input_pairing(vla::backward(p, cot, checkpoint), delta).value;
      EXPECT_EQ(lhs - rhs, rational(0)) << "cotangents " << seeds_name(w) << " checkpoint " << checkpoint;
    }
  }
}

TEST(VlaBackwardRational, RefusesCotangentsOfTheWrongShape) {
  const VlaShape shape{4, 2, 3, true, false, false};
  const vla::Problem<rational> p = make_vla_rational_problem(shape, 5);
  auto expect_refused = [&](vla::Cotangents<rational> c, const std::string& what) {
    try {
      vla::backward(p, c);
      ADD_FAILURE() << "a bad " << what << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_refused({Mat<rational>::Zero(4, 2), {}, {}, {}}, "d_o");
  expect_refused({Mat<rational>(), Mat<rational>::Zero(3, 2), {}, {}}, "d_final_state");
  expect_refused({Mat<rational>(), {}, Mat<rational>::Zero(2, 3), {}}, "d_final_penalty");
  expect_refused({Mat<rational>(), {}, {}, Vec<rational>::Zero(3)}, "d_final_normalizer");
}

}  // namespace
