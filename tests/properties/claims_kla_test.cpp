// KLA-C1..C6: the verdicts the ledger prints are recomputed here at the default seed, the exact
// identities are checked to be able to fail, and KLA-C5's HOLDS-UNDER counterexample is asserted to
// reproduce.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "larc/proofs_check/kla_projection.h"
#include "larc/properties/claims.h"
#include "larc/reference/delta_rule.h"

using namespace larc;
using props::Verdict;

namespace {
props::LedgerEntry run(const char* id, int trials) {
  const props::Claim* c = props::find_claim(id);
  EXPECT_NE(c, nullptr) << id;
  auto e = props::run_claim(*c, {1, trials});
  ::testing::Test::RecordProperty(std::string(id) + "_reproduce", e.reproduce());
  return e;
}
}  // namespace

TEST(KlaClaims, ProjectionLineSearchAndGradientStepHoldExactly) {
  for (const char* id : {"KLA-C1", "KLA-C2", "KLA-C3"}) {
    const auto e = run(id, 60);
    EXPECT_EQ(e.outcome.verdict, Verdict::holds) << id << ": " << e.outcome.evidence << e.outcome.counterexample;
    EXPECT_THAT(e.outcome.evidence, ::testing::HasSubstr("residual 0"));
  }
}

TEST(KlaClaims, ExactResidualsDetectAWrongStep) {
  // The identities are not vacuous: half a Kaczmarz step (β = 1/(2‖k‖²)), or a full step along a
  // perturbed key, must leave a nonzero exact residual in each of the three checks.
  for (std::uint64_t seed : {3u, 7u, 11u}) {
    const auto x = proofs::random_kaczmarz_instance(seed, 3, 2, true);
    const auto s_t = proofs::kaczmarz_write(x);
    ASSERT_EQ(proofs::projection_residual(x, s_t, seed), 0);
    ASSERT_EQ(proofs::line_search_residual(x, s_t), 0);
    ASSERT_EQ(proofs::gradient_step_residual(x, s_t), 0);
    const larc::ref::Mat<larc::ref::rational> half = (x.alpha * x.s_prev + s_t) / 2;
    EXPECT_NE(proofs::projection_residual(x, half, seed), 0);
    EXPECT_NE(proofs::line_search_residual(x, half), 0);
    EXPECT_NE(proofs::gradient_step_residual(x, half), 0);
    auto skewed = x;
    skewed.k(0) += 1;
    const auto off = proofs::kaczmarz_write(skewed);
    EXPECT_NE(proofs::projection_residual(x, off, seed), 0);
    EXPECT_NE(proofs::gradient_step_residual(x, off), 0);
  }
}

TEST(KlaClaims, ChunkedEqualsRecurrentExactly) {
  const auto e = run("KLA-C4", 30);
  EXPECT_EQ(e.outcome.verdict, Verdict::holds) << e.outcome.evidence << e.outcome.counterexample;
}

TEST(KlaClaims, StabilityHoldsOnlyUnderTheKeyNormCondition) {
  const auto e = run("KLA-C5", 2);
  ASSERT_EQ(e.outcome.verdict, Verdict::holds_under) << e.outcome.evidence;
  EXPECT_THAT(e.outcome.evidence, ::testing::HasSubstr("consistent with it (bounded whenever max β‖k‖² ≤ 2, diverging "
                                                       "whenever min β‖k‖² > 2): yes"));
  EXPECT_THAT(e.outcome.counterexample, ::testing::HasSubstr("‖k‖ = 1.5:"));
}

// The HOLDS-UNDER counterexample itself, recomputed independently of the claim code: at ‖k‖ = 1.5
// (unnormalised keys, β = σ(·), a few expanding writes) GDN's state stays bounded, at ‖k‖ = 3
// (β‖k‖² > 2 for most tokens) it explodes, and KLA stays bounded at both.
TEST(KlaClaims, StabilityCounterexampleReproduces) {
  const int T = 1000, d = 32;
  auto final_norm = [&](double r, bool kla) {
    std::mt19937_64 rng(5);
    std::normal_distribution<double> n01;
    larc::ref::delta_rule::State<double> st(d, d);
    for (int t = 0; t < T; ++t) {
      larc::ref::Vec<double> k(d), v(d);
      for (int i = 0; i < d; ++i) k(i) = n01(rng), v(i) = n01(rng) / std::sqrt(double(d));
      k *= r / k.norm();
      const double sig = 1.0 / (1.0 + std::exp(-n01(rng)));
      const double beta = kla ? sig / (k.squaredNorm() + 1e-6) : sig;
      st.step(larc::ref::Vec<double>::Zero(d), k, v, 1.0, beta, 1.0);
    }
    return st.matrix().norm();
  };
  EXPECT_LT(final_norm(1.5, false), 20.0);
  EXPECT_GT(final_norm(3.0, false), 1e20);
  EXPECT_LT(final_norm(1.5, true), 20.0);
  EXPECT_LT(final_norm(3.0, true), 20.0);
}

TEST(KlaClaims, CostIsLinearInTAndMatchesGdnUpToTheStep) {
  const auto e = run("KLA-C6", 1);
  EXPECT_EQ(e.outcome.verdict, Verdict::holds) << e.outcome.evidence;
  EXPECT_THAT(e.outcome.evidence, ::testing::HasSubstr("= 2d+1 for β"));
}
