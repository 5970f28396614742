// CCQ-C1..C5: the verdicts the ledger prints, recomputed at the default seed; CCQ-C2's HOLDS-UNDER
// counterexample recomputed independently; the checks shown to fail on planted defects (a write that
// changes, a read that sees the future).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "larc/properties/claims.h"
#include "larc/properties/generators.h"
#include "larc/reference/ccq.h"

using namespace larc;
using props::Verdict;
using ref::Mat;
using ref::rational;
using ref::Vec;
namespace ccq = ref::ccq;

namespace {
props::LedgerEntry run(const char* id, int trials = 0) {
  const props::Claim* c = props::find_claim(id);
  EXPECT_NE(c, nullptr) << id;
  auto e = props::run_claim(*c, {1, trials});
  ::testing::Test::RecordProperty(std::string(id) + "_reproduce", e.reproduce());
  return e;
}

bool same_bits(const Mat<double>& a, const Mat<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

ccq::GlaProblem<double> gla_problem(std::uint64_t seed, int T, int d) {
  props::Rng rng(seed);
  ref::gla::Problem<double> bb{props::gaussian(rng, T, d, 1.0), props::gaussian(rng, T, d, 1.0), props::gaussian(rng, T, d, 1.0),
                               Mat<double>::Constant(T, d, 0.9), 1.0, {}};
  ccq::GlaProblem<double> p{bb, {}, {}};
  p.opt.w = props::gaussian(rng, d, 1, 1.0);
  return p;
}
}  // namespace

TEST(CcqClaims, C1GradientAndHessianHold) {
  const auto e = run("CCQ-C1");
  EXPECT_EQ(e.outcome.verdict, Verdict::holds) << e.outcome.evidence << e.outcome.counterexample;
  EXPECT_THAT(e.outcome.evidence, ::testing::HasSubstr(": cubic."));
}

TEST(CcqClaims, C2HoldsOnlyWhileLambdaSigmaStaysBelowOne) {
  const auto e = run("CCQ-C2");
  ASSERT_EQ(e.outcome.verdict, Verdict::holds_under) << e.outcome.evidence << e.outcome.counterexample;
  EXPECT_THAT(e.outcome.counterexample, ::testing::HasSubstr("raw keys"));
  EXPECT_THAT(e.outcome.evidence, ::testing::HasSubstr("I − λΣ_t ≻ 0 in every case: yes"));
}

TEST(CcqClaims, C2CounterexampleReproducesByHand) {
  // Raw keys (3, 0) and (−3, 0): μ = 0, Σ = diag(9, 0); with λ = 1/2, I − λΣ = diag(−7/2, 1): the query's
  // component along the high-variance direction is reversed and amplified 3.5×, not contracted.
  ccq::KeyStats<rational> st = ccq::empty_stats<rational>(2);
  Vec<rational> k1(2), k2(2), e1(2);
  k1 << 3, 0;
  k2 << -3, 0;
  e1 << 1, 0;
  ccq::absorb(st, k1, rational(1));
  ccq::absorb(st, k2, rational(1));
  const Vec<rational> q_tilde = e1 - rational(1, 2) * ccq::sigma_times(st, e1);
  EXPECT_EQ(q_tilde(0), rational(-7, 2));
  EXPECT_GT(q_tilde.squaredNorm(), e1.squaredNorm());
  // Unit keys ±(1, 0) give Σ = diag(1, 0) and keep 1 − λ ∈ (0, 1): a contraction.
  ccq::KeyStats<rational> unit = ccq::empty_stats<rational>(2);
  ccq::absorb(unit, Vec<rational>(k1 / 3), rational(1));
  ccq::absorb(unit, Vec<rational>(k2 / 3), rational(1));
  EXPECT_EQ((e1 - rational(1, 2) * ccq::sigma_times(unit, e1))(0), rational(1, 2));
}

TEST(CcqClaims, C3RecurrentEqualsChunkedExactly) {
  const auto e = run("CCQ-C3");
  EXPECT_EQ(e.outcome.verdict, Verdict::holds) << e.outcome.evidence << e.outcome.counterexample;
}

TEST(CcqClaims, C4StatesBitForBit) {
  const auto e = run("CCQ-C4");
  EXPECT_EQ(e.outcome.verdict, Verdict::holds) << e.outcome.evidence << e.outcome.counterexample;
  EXPECT_THAT(e.outcome.evidence, ::testing::HasSubstr(": 0 differ"));
}

TEST(CcqClaims, C4BitComparisonSeesATinyChangeOfTheWrite) {
  const auto p = gla_problem(3, 20, 4);
  auto q = p;
  q.backbone.k(7, 2) *= 1 + 1e-12;  // a write that differs in the 12th digit
  EXPECT_TRUE(same_bits(ccq::serial(p).final_state, ref::gla::serial(p.backbone).final_state));
  EXPECT_FALSE(same_bits(ccq::serial(p).final_state, ref::gla::serial(q.backbone).final_state));
}

TEST(CcqClaims, C5Causal) {
  const auto e = run("CCQ-C5");
  EXPECT_EQ(e.outcome.verdict, Verdict::holds) << e.outcome.evidence << e.outcome.counterexample;
  EXPECT_THAT(e.outcome.evidence, ::testing::HasSubstr(": 0 of "));
}

TEST(CcqClaims, C5PerturbingTheFutureExposesANonCausalRead) {
  // A read conditioned with the covariance of the whole sequence (the future's keys) changes past outputs
  // when the future changes; the reference's does not.
  const int T = 12, t0 = 5;
  const auto p = gla_problem(4, T, 3);
  auto future = p;
  future.backbone.k.bottomRows(T - t0 - 1).array() += 1.0;
  auto whole_sequence_read = [&](const ccq::GlaProblem<double>& x) {
    const auto all = ccq::conditioned_queries_recurrent<double>(x.backbone.q, x.backbone.k, ccq::lambdas(x), Vec<double>::Ones(T),
                                                                ccq::empty_stats<double>(3));
    auto y = x;
    for (int t = 0; t < T; ++t)
      y.backbone.q.row(t) -= (ccq::lambdas(x)(t) * ccq::sigma_times(all.final_stats, Vec<double>(x.backbone.q.row(t).transpose()))).transpose();
    return ref::gla::serial(y.backbone).o;
  };
  EXPECT_FALSE(same_bits(Mat<double>(whole_sequence_read(p).topRows(t0 + 1)), Mat<double>(whole_sequence_read(future).topRows(t0 + 1))));
  EXPECT_TRUE(same_bits(Mat<double>(ccq::serial(p).o.topRows(t0 + 1)), Mat<double>(ccq::serial(future).o.topRows(t0 + 1))));
}
