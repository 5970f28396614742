// The GLA adjoint against central differences at 266-bit MPFR (docs/gradients.md, "How the adjoint is
// checked"):
//  - (L(x + hδ) − L(x − hδ)) / 2h with h = 2⁻⁸⁰ along a random rational tangent δ of every input
//    (q, k, v, a, S_0), against ⟨∇L, δ⟩ from backward at the same precision (checkpoint 7), to 30
//    digits of the sum of |terms| of ⟨∇L, δ⟩: L is a polynomial, the truncation error h² ≈ 2⁻¹⁶⁰ times
//    its third derivative along δ, the rounding error 2⁻²⁶⁶/h ≈ 2⁻¹⁸⁶;
//  - the log-decay front end: dgk = a ⊙ da against central differences in each gk_ti (a = e^{gk}),
//    with one entry at gk = −∞ (a = 0), where dgk must be exactly 0.
#include <gtest/gtest.h>

#include <limits>
#include <tuple>

#include "gla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::mpfr80;

// The problem moved to x + h δ (S_0 from 0 when the problem has none).
gla::Problem<mpfr80> moved(const gla::Problem<mpfr80>& p, const GlaInputTangent<mpfr80>& d, const mpfr80& h) {
  gla::Problem<mpfr80> r = p;
  r.q += h * d.dq;
  r.k += h * d.dk;
  r.v += h * d.dv;
  r.a += h * d.da;
  r.initial_state = p.start_state() + h * d.d_initial_state;
  return r;
}

mpfr80 loss(const gla::Problem<mpfr80>& p, const gla::Cotangents<mpfr80>& cot) {
  return cotangent_pairing(cot, gla::serial(p)).value;
}

const mpfr80 kStep = ldexp(mpfr80(1), -80);
const mpfr80 kDigits30 = mpfr80("1e-30");

// T, initial state.
using Param = std::tuple<Eigen::Index, bool>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [T, init] = info.param;
  return std::string("T") + std::to_string(T) + (init ? "_S0" : "_zero");
}

class GlaBackwardMpfr : public ::testing::TestWithParam<Param> {};

TEST_P(GlaBackwardMpfr, AdjointAgreesWithCentralDifferences) {
  const auto& [T, init] = GetParam();
  const Shape shape = init ? Shape{T, 3, 2, true} : Shape{T, 2, 3, false};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + (init ? 1 : 0);
  RecordProperty("seed", std::to_string(seed));
  const gla::Problem<mpfr80> p = cast_gla_problem<mpfr80>(make_gla_rational_problem(shape, seed));
  const GlaInputTangent<mpfr80> delta = cast_gla_tangent<mpfr80>(make_gla_tangent(shape, seed + 1));
  const gla::Cotangents<mpfr80> cot = cast_cotangents<mpfr80>(make_rational_cotangents(shape, Seeds::both, seed + 2));
  const mpfr80 difference = (loss(moved(p, delta, kStep), cot) - loss(moved(p, delta, mpfr80(-kStep)), cot)) / (2 * kStep);
  const Pairing<mpfr80> adjoint = gla_input_pairing(gla::backward(p, cot, 7), delta);
  EXPECT_LE(abs(difference - adjoint.value), kDigits30 * adjoint.magnitude)
      << "GLA seed " << seed << ": central difference " << difference << ", adjoint " << adjoint.value;
}

INSTANTIATE_TEST_SUITE_P(Grid, GlaBackwardMpfr,
                         ::testing::Combine(::testing::Values<Eigen::Index>(1, 5, 65), ::testing::Bool()), param_name);

TEST(GlaBackwardLogDecay, LogDecayGradientAgreesWithCentralDifferencesInGk) {
  const Shape shape{6, 3, 2, true};
  const std::uint64_t seed = 77;
  gla::Problem<mpfr80> p = cast_gla_problem<mpfr80>(make_gla_rational_problem(shape, seed));
  Mat<mpfr80> gk = p.a.unaryExpr([](const mpfr80& a) { return mpfr80(log(a)); });
  gk(2, 1) = -std::numeric_limits<mpfr80>::infinity();
  auto decays = [](const Mat<mpfr80>& g) { return Mat<mpfr80>(g.unaryExpr([](const mpfr80& x) { return mpfr80(exp(x)); })); };
  p.a = decays(gk);
  const gla::Cotangents<mpfr80> cot = cast_cotangents<mpfr80>(make_rational_cotangents(shape, Seeds::both, seed + 2));
  const Mat<mpfr80> dgk = gla::log_decay_gradient(p.a, gla::backward(p, cot).da);
  EXPECT_TRUE(dgk(2, 1) == 0) << "dgk at gk = -inf: " << dgk(2, 1);
  const mpfr80 l0 = loss(p, cot);
  for (Eigen::Index t = 0; t < shape.T; ++t) {
    for (Eigen::Index i = 0; i < shape.dk; ++i) {
      auto loss_at = [&](const mpfr80& g) {
        Mat<mpfr80> moved_gk = gk;
        moved_gk(t, i) = g;
        gla::Problem<mpfr80> q = p;
        q.a = decays(moved_gk);
        return loss(q, cot);
      };
      const mpfr80 difference = (loss_at(gk(t, i) + kStep) - loss_at(gk(t, i) - kStep)) / (2 * kStep);
      EXPECT_LE(abs(difference - dgk(t, i)), kDigits30 * (abs(dgk(t, i)) + abs(l0)))
          << "token " << t << " channel " << i << ": central difference " << difference << ", dgk " << dgk(t, i);
    }
  }
}

}  // namespace
