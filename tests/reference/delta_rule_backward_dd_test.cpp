// The delta-rule adjoint in rounded arithmetic (docs/gradients.md, "How the adjoint is checked"):
//  - the duality ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ = Σ_x ⟨∇_x L, δx⟩ in dd_real (J·δ from serial over Dual<dd>), to
//    c·(T + d_k)·u·M (expect_duality_to_rounding in delta_rule_backward_check.h) with c = 1: the worst
//    measured residual / ((T + d_k)·u·M) over this grid is 0.09;
//  - central differences at 266-bit MPFR, (L(x + hδ) − L(x − hδ)) / 2h with h = 2⁻⁸⁰, against ⟨∇L, δ⟩
//    from backward at the same precision, to 30 digits: the truncation error is h² ≈ 2⁻¹⁶⁰ times
//    the third derivative along δ (large for KLA's β = η / (‖k‖² + ε) when a key is near 0, which
//    is why h is not the 2⁻⁶⁰ that balances an O(1) one), the rounding error 2⁻²⁶⁶/h ≈ 2⁻¹⁸⁶;
//  - the log-decay front end: dg_t = α_t dα_t against central differences in g_t (α = e^g), with one
//    token at g = −∞ (α = 0), where dg must be exactly 0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "delta_rule_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::dd;
using larc::ref::mpfr80;

class DeltaRuleBackwardDd : public ::testing::TestWithParam<GridParam> {};

TEST_P(DeltaRuleBackwardDd, AdjointIsTheTransposeOfTheDualJacobianToRounding) {
  expect_duality_to_rounding<dd>(GetParam(), /*constant=*/1);
}

INSTANTIATE_TEST_SUITE_P(Grid, DeltaRuleBackwardDd,
                         ::testing::Combine(::testing::Values(Mechanism::deltanet, Mechanism::gdn, Mechanism::kla),
                                            ::testing::Values<Eigen::Index>(1, 5, 64, 130), ::testing::Bool()),
                         grid_param_name);

// The case moved to x + h δ (KLA's β recomputed from the moved η and k).
template <class S>
Case<S> moved(const Case<S>& c, const InputTangent<S>& d, const S& h) {
  Case<S> r = c;
  dr::Problem<S>& p = r.problem;
  p.q += h * d.dq;
  p.k += h * d.dk;
  p.v += h * d.dv;
  p.alpha += h * d.dalpha;
  p.initial_state = c.problem.start_state() + h * d.d_initial_state;
  if (c.eta) {
    r.eta = *c.eta + h * d.dbeta;
    p.beta = dr::kla_beta<S>(p.k, *r.eta, r.eps);
  } else {
    p.beta += h * d.dbeta;
  }
  return r;
}

// L = Σ_t ⟨do_t, o_t⟩ + ⟨dht, S_T⟩ of serial.
template <class S>
S loss(const Case<S>& c, const dr::Cotangents<S>& cot) {
  return cotangent_pairing(cot, dr::serial(c.problem)).value;
}

const mpfr80 kStep = ldexp(mpfr80(1), -80);
const mpfr80 kDigits30 = mpfr80("1e-30");

TEST_P(DeltaRuleBackwardDd, AdjointAgreesWithMpfrCentralDifferences) {
  const Mechanism mech = std::get<0>(GetParam());
  const Shape shape = grid_shape(GetParam());
  const std::uint64_t seed = grid_seed(GetParam());
  const Case<mpfr80> c = cast_case<mpfr80>(make_rational_case(mech, shape, seed, /*unit_keys=*/true));
  const InputTangent<mpfr80> delta = cast_gradients<mpfr80>(make_rational_tangent(shape, seed + 1));
  const dr::Cotangents<mpfr80> cot = cast_cotangents<mpfr80>(make_rational_cotangents(shape, Seeds::both, seed + 2));
  const mpfr80 difference = (loss(moved(c, delta, kStep), cot) - loss(moved(c, delta, mpfr80(-kStep)), cot)) / (2 * kStep);
  const Pairing<mpfr80> adjoint = input_pairing(input_gradients(c, cot, 7), delta);
  EXPECT_LE(abs(difference - adjoint.value), kDigits30 * adjoint.magnitude)
      << mechanism_name(mech) << " seed " << seed << ": central difference " << difference << ", adjoint " << adjoint.value;
}

TEST(DeltaRuleBackwardLogDecay, LogDecayGradientAgreesWithCentralDifferencesInG) {
  const Shape shape{6, 3, 2, true};
  const std::uint64_t seed = 77;
  Case<mpfr80> c = cast_case<mpfr80>(make_rational_case(Mechanism::gdn, shape, seed, /*unit_keys=*/true));
  Vec<mpfr80> g = c.problem.alpha.unaryExpr([](const mpfr80& a) { return mpfr80(log(a)); });
  g(2) = -std::numeric_limits<mpfr80>::infinity();
  c.problem.alpha = dr::decays_from_log(g);
  const dr::Cotangents<mpfr80> cot = cast_cotangents<mpfr80>(make_rational_cotangents(shape, Seeds::both, seed + 2));
  const dr::Gradients<mpfr80> grads = dr::backward(c.problem, cot);
  const Vec<mpfr80> dg = dr::log_decay_gradient(c.problem.alpha, grads.dalpha);
  EXPECT_TRUE(dg(2) == 0) << "dg at g = -inf: " << dg(2);
  for (Eigen::Index t = 0; t < shape.T; ++t) {
    auto loss_at = [&](const mpfr80& gt) {
      Case<mpfr80> moved_case = c;
      Vec<mpfr80> moved_g = g;
      moved_g(t) = gt;
      moved_case.problem.alpha = dr::decays_from_log(moved_g);
      return loss(moved_case, cot);
    };
    const mpfr80 difference = (loss_at(g(t) + kStep) - loss_at(g(t) - kStep)) / (2 * kStep);
    const mpfr80 scale = abs(dg(t)) + abs(loss(c, cot));
    EXPECT_LE(abs(difference - dg(t)), kDigits30 * scale) << "token " << t << ": central difference " << difference
                                                          << ", dg " << dg(t);
  }
}

}  // namespace
