// CCQ (SPEC §2) on GLA and GDN backbones, uniform and decayed covariance: serial (recurrent q̃) ==
// chunked (chunkwise q̃, any C) == streamed (State::step), exactly in rationals (λ given, so everything
// is rational) and within the double tolerance with λ = σ(w^T q + b); λ = 0 gives the backbone's
// outputs; the decayed covariance with all decays 1 is the uniform one; bad inputs name the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "forms_tolerance.h"
#include "larc/proofs_check/exact.h"
#include "larc/properties/generators.h"
#include "larc/reference/ccq.h"

using namespace larc::ref;
using larc::testing::expect_agree;
namespace dr = larc::ref::delta_rule;

namespace {

constexpr Eigen::Index kChunks[] = {1, 7, 16, 64};

struct Size {
  Eigen::Index T, dk, dv;
};

ccq::Options<rational> rational_options(larc::proofs::RationalSource& src, Eigen::Index T, ccq::Covariance cov) {
  ccq::Options<rational> o;
  o.lambda = Vec<rational>(T);
  for (Eigen::Index t = 0; t < T; ++t) (*o.lambda)(t) = src.unit_interval();
  o.covariance = cov;
  return o;
}

ccq::GdnProblem<rational> rational_gdn(Size s, ccq::Covariance cov, bool init, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  dr::Problem<rational> bb{src.matrix(s.T, s.dk), src.matrix(s.T, s.dk), src.matrix(s.T, s.dv), Vec<rational>(s.T),
                           Vec<rational>(s.T), rational(1, 2), {}};
  for (Eigen::Index t = 0; t < s.T; ++t) bb.alpha(t) = src.unit_interval(), bb.beta(t) = src.unit_interval() / 4;
  if (init) bb.initial_state = src.matrix(s.dk, s.dv);
  ccq::GdnProblem<rational> p{std::move(bb), rational_options(src, s.T, cov), {}};
  if (init) p.initial_stats = ccq::KeyStats<rational>{src.matrix(s.dk, s.dk), src.vector(s.dk), rational(3)};
  return p;
}

// GLA with a scalar gate (the same decay on every channel) so that the decayed covariance can use it.
ccq::GlaProblem<rational> rational_gla(Size s, ccq::Covariance cov, bool init, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  gla::Problem<rational> bb{src.matrix(s.T, s.dk), src.matrix(s.T, s.dk), src.matrix(s.T, s.dv), Mat<rational>(s.T, s.dk),
                            rational(1), {}};
  for (Eigen::Index t = 0; t < s.T; ++t) bb.a.row(t).setConstant(src.unit_interval());
  if (init) bb.initial_state = src.matrix(s.dk, s.dv);
  ccq::GlaProblem<rational> p{std::move(bb), rational_options(src, s.T, cov), {}};
  if (init) p.initial_stats = ccq::KeyStats<rational>{src.matrix(s.dk, s.dk), src.vector(s.dk), rational(2)};
  return p;
}

template <class S, class B>
void expect_forms_agree(const ccq::Problem<S, B>& p, double out_bound, double state_bound, const std::string& label) {
  const ccq::Result<S> ser = ccq::serial(p);
  auto check = [&](const ccq::Result<S>& r, const std::string& what) {
    expect_agree<S>(r.o, ser.o, out_bound, label + " " + what + " outputs");
    expect_agree<S>(r.final_state, ser.final_state, state_bound, label + " " + what + " state");
    expect_agree<S>(r.final_stats.c, ser.final_stats.c, state_bound, label + " " + what + " C");
    expect_agree<S>(Mat<S>(r.final_stats.m), Mat<S>(ser.final_stats.m), state_bound, label + " " + what + " m");
  };
  check(ccq::streamed(p), "streamed");
  for (Eigen::Index c : kChunks) check(ccq::chunked(p, c), "chunked C=" + std::to_string(c));
}

const Size kSizes[] = {{1, 3, 2}, {2, 2, 3}, {63, 3, 2}, {64, 2, 2}, {65, 3, 1}};

}  // namespace

TEST(CcqForms, GdnBackboneExactInRationals) {
  for (const Size s : kSizes)
    for (auto cov : {ccq::Covariance::uniform, ccq::Covariance::decayed})
      for (bool init : {false, true})
        expect_forms_agree(rational_gdn(s, cov, init, 31 * s.T + init), 0, 0,
                           "GDN T=" + std::to_string(s.T) + (cov == ccq::Covariance::uniform ? " uniform" : " decayed") +
                               (init ? " init" : ""));
}

TEST(CcqForms, GlaBackboneExactInRationals) {
  for (const Size s : kSizes)
    for (auto cov : {ccq::Covariance::uniform, ccq::Covariance::decayed})
      for (bool init : {false, true})
        expect_forms_agree(rational_gla(s, cov, init, 37 * s.T + init), 0, 0,
                           "GLA T=" + std::to_string(s.T) + (cov == ccq::Covariance::uniform ? " uniform" : " decayed") +
                               (init ? " init" : ""));
}

TEST(CcqForms, ExactCheckDetectsAChunkEndCovariance) {
  // A chunked form that conditioned every query of a chunk with the chunk's final covariance (reading
  // future keys) must differ: emulate it by conditioning with the statistics after the whole sequence.
  const auto p = rational_gla({9, 3, 2}, ccq::Covariance::uniform, false, 3);
  const auto ser = ccq::serial(p);
  auto future = p;
  const auto all = ccq::conditioned_queries_recurrent<rational>(p.backbone.q, p.backbone.k, *p.opt.lambda,
                                                                Vec<rational>::Ones(9), ccq::empty_stats<rational>(3));
  for (Eigen::Index t = 0; t < 9; ++t)
    future.backbone.q.row(t) = (p.backbone.q.row(t).transpose() -
                                (*p.opt.lambda)(t) * ccq::sigma_times(all.final_stats, Vec<rational>(p.backbone.q.row(t).transpose()))).transpose();
  future.opt.lambda = Vec<rational>::Zero(9);
  EXPECT_FALSE(ccq::serial(future).o == ser.o);
  EXPECT_TRUE(ccq::serial(future).o.bottomRows(1) == ser.o.bottomRows(1));  // the last token sees every key either way
}

TEST(CcqForms, LambdaZeroIsTheBackboneAndUnitDecaysAreUniform) {
  auto p = rational_gdn({17, 3, 2}, ccq::Covariance::uniform, true, 5);
  auto zero = p;
  zero.opt.lambda = Vec<rational>::Zero(17);
  EXPECT_TRUE(ccq::serial(zero).o == dr::serial(p.backbone).o);
  auto decayed_ones = p;
  decayed_ones.opt.covariance = ccq::Covariance::decayed;
  decayed_ones.opt.decay = Vec<rational>::Ones(17);
  EXPECT_TRUE(ccq::chunked(decayed_ones, 5).o == ccq::serial(p).o);
  decayed_ones.opt.decay = Vec<rational>::Constant(17, rational(1, 2));
  EXPECT_FALSE(ccq::chunked(decayed_ones, 5).o == ccq::serial(p).o);
}

TEST(CcqForms, DoubleWithSigmoidGateWithinTolerance) {
  // λ = σ(w^T q + b) in double, Gaussian keys N(0, 1/d_k), T = 300, chunk sizes not dividing T.
  // Tolerance, derived like delta_rule_forms_check.h: q̃_t = q_t − λ Σ_t q_t is formed from sums of
  // T + 1 terms of dot products of length d_k, so |δq̃_t| ≤ c (T + d_k) u ‖q_t‖₁ (1 + d_k max|Σ_t|);
  // the backbone (β‖k‖² ≤ 2 here, so G = 1) adds c (T + d_k) u M with M = scale max‖q̃‖₁ max|S_t|.
  // Together: c (T + d_k) u · scale · max_t ‖q_t‖₁ (1 + d_k max|Σ|) · max|S_t| · 2, c = 4.
  larc::props::Rng rng(17);
  const Eigen::Index T = 300, dk = 8, dv = 5;
  dr::Problem<double> bb{larc::props::gaussian(rng, T, dk, 1.0), larc::props::gaussian(rng, T, dk, 1 / std::sqrt(8.0)),
                         larc::props::gaussian(rng, T, dv, 1.0), Vec<double>(T), Vec<double>(T), 1 / std::sqrt(8.0), {}};
  for (Eigen::Index t = 0; t < T; ++t) bb.alpha(t) = std::exp(rng.uniform(-0.5, 0.0)), bb.beta(t) = rng.uniform(0.1, 1.0);
  dr::State<double> st(dk, dv);
  double max_state = 0, max_q1 = 0;
  for (Eigen::Index t = 0; t < T; ++t) {
    st.step(bb.q.row(t).transpose(), bb.k.row(t).transpose(), bb.v.row(t).transpose(), bb.alpha(t), bb.beta(t), 1.0);
    max_state = std::max(max_state, st.matrix().cwiseAbs().maxCoeff());
    max_q1 = std::max(max_q1, bb.q.row(t).cwiseAbs().sum());
  }
  for (auto cov : {ccq::Covariance::uniform, ccq::Covariance::decayed}) {
    ccq::GdnProblem<double> p{bb, {}, {}};
    p.opt.w = larc::props::gaussian(rng, dk, 1, 1.0);
    p.opt.b = 0.3;
    p.opt.covariance = cov;
    // max |Σ_t| ≤ max over t of the largest |k_i k_j| (a covariance of the keys seen): bounded by max|k|².
    const double max_sigma = bb.k.cwiseAbs().maxCoeff() * bb.k.cwiseAbs().maxCoeff();
    const double out = 4.0 * (T + dk) * 2 * bb.scale * max_q1 * (1 + dk * max_sigma) * max_state;
    const double stats = 4.0 * (T + dk) * T * max_sigma;
    expect_forms_agree(p, out, std::max(stats, 4.0 * (T + dk) * max_state), "double GDN");
  }
}

TEST(CcqForms, BadInputsNameTheField) {
  auto p = rational_gla({5, 3, 2}, ccq::Covariance::uniform, false, 1);
  p.opt.lambda.reset();
  EXPECT_THAT([&] { ccq::serial(p); }, ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("opt.w")));
  auto q = rational_gla({5, 3, 2}, ccq::Covariance::decayed, false, 1);
  q.backbone.a(2, 1) = rational(1, 3);
  q.backbone.a(2, 0) = rational(1, 5);
  EXPECT_THAT([&] { ccq::serial(q); }, ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("opt.decay")));
  q.opt.decay = Vec<rational>::Ones(4);
  EXPECT_THAT([&] { ccq::serial(q); }, ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("opt.decay must have T")));
}
