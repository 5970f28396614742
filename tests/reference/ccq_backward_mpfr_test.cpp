// The CCQ adjoint against central differences at 266-bit MPFR (docs/gradients.md, "How the adjoint is
// checked"): (L(x + hδ) − L(x − hδ)) / 2h with h = 2⁻⁸⁰ along a random tangent δ of every input, against
// ⟨∇L, δ⟩ from ccq::backward (checkpoint 3), to 30 digits of the sum of |terms| of ⟨∇L, δ⟩. GDN and GLA
// backbones, the three covariances, T ∈ {1, 5, 17}, with initial statistics and S_0, every cotangent;
// λ both given directly and as λ_t = σ(wᵀq_t + b) (then δ moves w and b, and λ's chain rule, which needs
// e^x, is checked here only). L is smooth near the point (n_t ≥ 1), so the truncation error is of order
// h² ≈ 2⁻¹⁶⁰ and the rounding error 2⁻²⁶⁶/h ≈ 2⁻¹⁸⁶, relative to the terms.
#include <gtest/gtest.h>

#include <tuple>

#include "ccq_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::mpfr80;

const mpfr80 kStep = ldexp(mpfr80(1), -80);
const mpfr80 kDigits30 = mpfr80("1e-30");

template <CcqBackbone B>
CcqProblem<B, mpfr80> moved(const CcqProblem<B, mpfr80>& p, const CcqTangent<B, mpfr80>& d, const mpfr80& h) {
  CcqProblem<B, mpfr80> r = p;
  auto& bb = r.backbone;
  bb.q += h * d.backbone.dq;
  bb.k += h * d.backbone.dk;
  bb.v += h * d.backbone.dv;
  if constexpr (B == CcqBackbone::gdn) {
    bb.alpha += h * d.backbone.dalpha;
    bb.beta += h * d.backbone.dbeta;
  } else {
    bb.a += h * d.backbone.da;
  }
  bb.initial_state = p.backbone.start_state() + h * d.backbone.d_initial_state;
  if (p.opt.lambda) *r.opt.lambda += h * d.dlambda;
  else {
    r.opt.w += h * d.dw;
    r.opt.b += h * d.db;
  }
  if (p.opt.decay) *r.opt.decay += h * d.d_decay;
  const ccq::KeyStats<mpfr80> s0 = p.start_stats();
  r.initial_stats = ccq::KeyStats<mpfr80>{s0.c + h * d.d_initial_stats.c, s0.m + h * d.d_initial_stats.m,
                                          s0.n + h * d.d_initial_stats.n};
  return r;
}

// backbone, covariance, T, λ from w and b
using Param = std::tuple<CcqBackbone, CcqCovariance, Eigen::Index, bool>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [b, cov, T, sigmoid] = info.param;
  return ccq_config_name(b, cov) + "_T" + std::to_string(T) + (sigmoid ? "_lambda_from_w_b" : "_lambda_given");
}

template <CcqBackbone B>
void expect_central_differences(CcqCovariance cov, Eigen::Index T, bool sigmoid) {
  const Shape shape{T, 3, 2, true};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 10 * static_cast<std::uint64_t>(cov) +
                             2 * static_cast<std::uint64_t>(B) + sigmoid;
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  CcqProblem<B, mpfr80> p = cast_ccq_problem<B, mpfr80>(make_ccq_rational_problem<B>(shape, cov, seed));
  CcqTangent<B, mpfr80> delta = cast_ccq_tangent<B, mpfr80>(make_ccq_tangent<B>(shape, seed + 1));
  if constexpr (B == CcqBackbone::gla)  // the moved gate must stay scalar for the covariance to read it
    if (cov == CcqCovariance::decayed_backbone)
      for (Eigen::Index i = 1; i < shape.dk; ++i) delta.backbone.da.col(i) = delta.backbone.da.col(0);
  if (sigmoid) {
    larc::proofs::RationalSource src(seed + 3, 9, 8);
    p.opt.lambda.reset();
    p.opt.w = larc::ref::cast_vector<mpfr80>(Vec<rational>(src.vector(shape.dk)));
    p.opt.b = larc::ref::convert<mpfr80>(src.next());
    delta.dw = larc::ref::cast_vector<mpfr80>(Vec<rational>(src.vector(shape.dk)));
    delta.db = larc::ref::convert<mpfr80>(src.next());
  }
  const ccq::Cotangents<mpfr80> cot = cast_ccq_cotangents<mpfr80>(make_ccq_cotangents(shape, Seeds::both, seed + 2));
  auto loss = [&](const mpfr80& h) { return ccq_cotangent_pairing(cot, ccq::serial(moved<B>(p, delta, h))).value; };
  const mpfr80 difference = (loss(kStep) - loss(mpfr80(-kStep))) / (2 * kStep);
  const Pairing<mpfr80> adjoint = ccq_input_pairing<B, mpfr80>(ccq::backward(p, cot, 3), delta);
  EXPECT_LE(abs(difference - adjoint.value), kDigits30 * adjoint.magnitude)
      << ccq_config_name(B, cov) << " seed " << seed << ": central difference " << difference << ", adjoint "
      << adjoint.value;
}

class CcqBackwardMpfr : public ::testing::TestWithParam<Param> {};

TEST_P(CcqBackwardMpfr, AdjointAgreesWithCentralDifferences) {
  const auto& [b, cov, T, sigmoid] = GetParam();
  if (b == CcqBackbone::gdn) expect_central_differences<CcqBackbone::gdn>(cov, T, sigmoid);
  else expect_central_differences<CcqBackbone::gla>(cov, T, sigmoid);
}

INSTANTIATE_TEST_SUITE_P(Grid, CcqBackwardMpfr,
                         ::testing::Combine(::testing::Values(CcqBackbone::gdn, CcqBackbone::gla),
                                            ::testing::Values(CcqCovariance::uniform, CcqCovariance::decayed_backbone,
                                                              CcqCovariance::decayed_given),
                                            ::testing::Values<Eigen::Index>(1, 5, 17), ::testing::Bool()),
                         param_name);

}  // namespace
