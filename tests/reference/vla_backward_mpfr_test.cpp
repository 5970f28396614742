// The VLA adjoint against central differences at 266-bit MPFR (docs/gradients.md, "How the adjoint is
// checked"): (L(x + hδ) − L(x − hδ)) / 2h with h = 2⁻⁸⁰ along a random tangent δ of q, k, v, u, λ0 and the
// initial memory, against ⟨∇L, δ⟩ from vla::backward (checkpoint 3), to 30 digits of the sum of |terms| of
// ⟨∇L, δ⟩; with and without the normalisations k̂ = norm(φ(k)), α̂ = norm(A k̂) (√), identity and ELU + 1
// features (e^x; no key or query entry within h of 0, where φ'' jumps), ratio and plain read; T = 1 from
// the empty memory and T = 7 with an initial memory and the nudge. Away from the floors L is smooth, so
// the truncation error is of order h² ≈ 2⁻¹⁶⁰ and the rounding error 2⁻²⁶⁶/h ≈ 2⁻¹⁸⁶, relative to the terms.
//
// And the penalty's scale invariance with the normalisations on (no nudge): λ0 → c² λ0, u → c u gives
// A_t → A_t / c² and leaves α̂_t, so every S_t and o_t, unchanged; hence
//   2 λ0 dλ0 + Σ_t u_t·du_t = −2 ⟨A_T, dA_T⟩,
// checked to 30 digits (it needs √, so it is not among the exact identities). Last, the authors' penalty
// directions u = norm(W_u k)/√d_k composed with backward, along a random tangent of k and W_u.
#include <gtest/gtest.h>

#include <tuple>

#include "vla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::mpfr80;

const mpfr80 kStep = ldexp(mpfr80(1), -80);
const mpfr80 kDigits30 = mpfr80("1e-30");

vla::Problem<mpfr80> moved(const vla::Problem<mpfr80>& p, const VlaTangent<mpfr80>& d, const mpfr80& h) {
  vla::Problem<mpfr80> r = p;
  r.q += h * d.dq;
  r.k += h * d.dk;
  r.v += h * d.dv;
  r.u += h * d.du;
  r.opt.lambda0 += h * d.dlambda0;
  const vla::Memory<mpfr80> m0 = vla::start_memory(r);  // A_0 = I/(λ0 + h δλ0) when there is no initial memory
  r.initial = vla::Memory<mpfr80>{m0.s + h * d.d_initial.s, m0.a + h * d.d_initial.a, m0.zeta + h * d.d_initial.zeta,
                                  m0.tokens};
  return r;
}

// The rational case (unnormalised, identity features, so that the initial memory can be made exactly),
// then the variant's options; ELU + 1 inputs moved off 0 by 1/1009.
vla::Problem<mpfr80> make_problem(const VlaShape& shape, std::uint64_t seed) {
  VlaShape exact = shape;
  exact.normalize = false;
  exact.feature = vla::FeatureMap::identity;
  vla::Problem<rational> r = make_vla_rational_problem(exact, seed);
  if (shape.feature != vla::FeatureMap::identity) {
    r.q.array() += rational(1, 1009);
    r.k.array() += rational(1, 1009);
  }
  vla::Problem<mpfr80> p = cast_vla_problem<mpfr80>(r);
  p.opt.normalize = shape.normalize;
  p.opt.feature = shape.feature;
  return p;
}

// normalize, ELU + 1, ratio, T
using Param = std::tuple<bool, bool, bool, Eigen::Index>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [normalize, elu, ratio, T] = info.param;
  return std::string(normalize ? "normalised" : "unnormalised") + (elu ? "_elu" : "_identity") + (ratio ? "_ratio" : "_plain") +
         "_T" + std::to_string(T);
}

class VlaBackwardMpfr : public ::testing::TestWithParam<Param> {};

TEST_P(VlaBackwardMpfr, AdjointAgreesWithCentralDifferences) {
  const auto& [normalize, elu, ratio, T] = GetParam();
  const bool later = T > 1;
  const VlaShape shape{T, 3, 2, ratio, later, later, normalize, elu ? vla::FeatureMap::elu_plus_one : vla::FeatureMap::identity};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 8 * normalize + 4 * elu + 2 * ratio;
  RecordProperty("case", shape.describe() + " seed=" + std::to_string(seed));
  const vla::Problem<mpfr80> p = make_problem(shape, seed);
  const VlaTangent<mpfr80> delta = cast_vla_tangent<mpfr80>(make_vla_tangent(shape, seed + 1));
  const vla::Cotangents<mpfr80> cot = cast_vla_cotangents<mpfr80>(make_vla_cotangents(shape, Seeds::both, seed + 2));
  auto loss = [&](const mpfr80& h) { return vla_cotangent_pairing(cot, vla::serial(moved(p, delta, h))).value; };
  const mpfr80 difference = (loss(kStep) - loss(mpfr80(-kStep))) / (2 * kStep);
  const Pairing<mpfr80> adjoint = vla_input_pairing(vla::backward(p, cot, 3), delta);
  EXPECT_LE(abs(difference - adjoint.value), kDigits30 * adjoint.magnitude)
      << shape.describe() << ": central difference " << difference << ", adjoint " << adjoint.value;
}

INSTANTIATE_TEST_SUITE_P(Grid, VlaBackwardMpfr,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Bool(),
                                            ::testing::Values<Eigen::Index>(1, 7)),
                         param_name);

TEST(VlaBackwardMpfr, PenaltyScaleInvarianceWithNormalisedWrites) {
  for (const bool ratio : {false, true}) {
    const VlaShape shape{8, 3, 2, ratio, false, false, true, vla::FeatureMap::elu_plus_one};
    const vla::Problem<mpfr80> p = make_problem(shape, 31 + ratio);
    const vla::Cotangents<mpfr80> cot = cast_vla_cotangents<mpfr80>(make_vla_cotangents(shape, Seeds::both, 33));
    const vla::Gradients<mpfr80> g = vla::backward(p, cot, 3);
    const vla::Result<mpfr80> fwd = vla::serial(p);
    Pairing<mpfr80> lhs, rhs;
    lhs.add(Vec<mpfr80>::Constant(1, 2 * p.opt.lambda0), Vec<mpfr80>::Constant(1, g.dlambda0));
    lhs.add(p.u, g.du);
    rhs.add(Mat<mpfr80>(-2 * fwd.final_memory.a), *cot.d_final_penalty);
    EXPECT_LE(abs(lhs.value - rhs.value), kDigits30 * (lhs.magnitude + rhs.magnitude))
        << (ratio ? "ratio" : "plain") << ": 2 λ0 dλ0 + Σ u·du = " << lhs.value << ", −2 ⟨A_T, dA_T⟩ = " << rhs.value;
  }
}

// The authors' penalty directions u = norm(W_u k)/√d_k composed with backward: the key's total gradient
// (backward's dk plus W_uᵀ dx) and dW_u, along a random tangent of k and W_u (everything else fixed).
TEST(VlaBackwardMpfr, AuthorsPenaltyDirectionsChainRule) {
  const VlaShape shape{6, 3, 2, true, false, false, true, vla::FeatureMap::elu_plus_one};
  vla::Problem<mpfr80> p = make_problem(shape, 41);
  larc::proofs::RationalSource src(42, 9, 8);
  const Mat<mpfr80> w_u = larc::ref::cast_matrix<mpfr80>(src.matrix(3, 3)), dw_u = larc::ref::cast_matrix<mpfr80>(src.matrix(3, 3));
  const Mat<mpfr80> dk = larc::ref::cast_matrix<mpfr80>(src.matrix(shape.T, 3));
  const vla::Cotangents<mpfr80> cot = cast_vla_cotangents<mpfr80>(make_vla_cotangents(shape, Seeds::both, 43));
  auto loss = [&](const mpfr80& h) {
    vla::Problem<mpfr80> q = p;
    q.k += h * dk;
    q.u = vla::authors_penalty_directions<mpfr80>(q.k, Mat<mpfr80>(w_u + h * dw_u));
    return vla_cotangent_pairing(cot, vla::serial(q)).value;
  };
  p.u = vla::authors_penalty_directions<mpfr80>(p.k, w_u);
  const vla::Gradients<mpfr80> g = vla::backward(p, cot, 3);
  const vla::PenaltyDirectionGradients<mpfr80> pg = vla::authors_penalty_directions_backward(p.k, w_u, g.du);
  Pairing<mpfr80> adjoint;
  adjoint.add(Mat<mpfr80>(g.dk + pg.dk), dk);
  adjoint.add(pg.dw_u, dw_u);
  const mpfr80 difference = (loss(kStep) - loss(mpfr80(-kStep))) / (2 * kStep);
  EXPECT_LE(abs(difference - adjoint.value), kDigits30 * adjoint.magnitude)
      << "central difference " << difference << ", adjoint " << adjoint.value;
}

}  // namespace
