// HLA-C1..C10: the verdicts the ledger prints, recomputed at the default seed (fewer trials; C3 in
// CostIsFlatInT); every
// FALSIFIED verdict's counterexample recomputed by hand on the smallest case, independently of the
// claim code; and the exact checks shown to catch a wrong recurrence.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "larc/properties/claims.h"
#include "larc/properties/hla_algebra.h"
#include "larc/properties/hla_problems.h"

using namespace larc;
using larc::ref::Mat;
using larc::ref::rational;
using props::Verdict;
using ::testing::HasSubstr;
namespace hla = larc::ref::hla;

namespace {

props::LedgerEntry run(const char* id, int trials) {
  const props::Claim* c = props::find_claim(id);
  EXPECT_NE(c, nullptr) << id;
  auto e = props::run_claim(*c, {1, trials});
  ::testing::Test::RecordProperty(std::string(id) + "_reproduce", e.reproduce());
  return e;
}

// A one-dimensional problem (d = d_v = 1) from scalars q_t, k_t, v_t.
hla::Problem<rational> scalar_problem(std::vector<rational> q, std::vector<rational> k, std::vector<rational> v,
                                      rational gamma = 1) {
  const auto n = static_cast<Eigen::Index>(q.size());
  hla::Problem<rational> p{Mat<rational>(n, 1), Mat<rational>(n, 1), Mat<rational>(n, 1), {}};
  for (Eigen::Index t = 0; t < n; ++t) p.q(t, 0) = q[t], p.k(t, 0) = k[t], p.v(t, 0) = v[t];
  p.opt.gamma = gamma;
  return p;
}

}  // namespace

TEST(HlaClaims, VerdictsAtTheDefaultSeed) {
  const std::pair<const char*, Verdict> expected[] = {
      {"HLA-C1", Verdict::holds},     {"HLA-C2", Verdict::holds},     {"HLA-C4", Verdict::holds},
      {"HLA-C5", Verdict::falsified}, {"HLA-C6", Verdict::falsified}, {"HLA-C7", Verdict::falsified},
      {"HLA-C8", Verdict::holds},     {"HLA-C9", Verdict::holds},     {"HLA-C10", Verdict::falsified}};
  for (const auto& [id, verdict] : expected) {
    const auto e = run(id, 25);
    EXPECT_EQ(e.outcome.verdict, verdict) << id << ": " << e.outcome.evidence << " | " << e.outcome.counterexample;
    if (verdict == Verdict::holds) {
      EXPECT_THAT(e.outcome.evidence, HasSubstr("exact"));
    } else {
      EXPECT_FALSE(e.outcome.counterexample.empty()) << id;
    }
  }
}

TEST(HlaClaims, CostIsFlatInT) {
  const auto e = run("HLA-C3", 1);
  EXPECT_EQ(e.outcome.verdict, Verdict::holds) << e.outcome.evidence;
  EXPECT_THAT(e.outcome.evidence, HasSubstr("exactly proportional to T"));
  EXPECT_THAT(e.outcome.evidence, ::testing::Not(HasSubstr("NOT proportional")));
}

TEST(HlaClaims, UnmaskedStreamingIsCausalToo) {
  const auto e = run("HLA-C9", 10);
  EXPECT_THAT(e.outcome.evidence, HasSubstr("second-order unmasked streaming qᵀ S^K C (γ as drawn) is causal on all cases"));
  EXPECT_THAT(e.outcome.evidence, HasSubstr("((A Aᵀ A) ⊙ L) V, the third-order target taken literally is NOT causal"));
}

// HLA-C5 by hand, T = 2, d = d_v = 1: the printed recurrence gives G_1 = k_1² q_0 v_0, the printed ⊕_γ
// gives γ k_1² q_0 v_0, so the outputs differ by (1 − γ) q_1 k_1² q_0 v_0; the masked target (pairs
// i ≤ j weighted γ^{t−i}γ^{t−j}) is o_1 = q_1(γ² k_0² q_0 v_0 + γ k_0² q_1 v_1 + k_1² q_1 v_1).
TEST(HlaClaims, DecayedScanCounterexampleReproduces) {
  const rational g(1, 2), q0(2), k0(3), v0(5), q1(7), k1(11), v1(13);
  const auto p = scalar_problem({q0, q1}, {k0, k1}, {v0, v1}, g);
  const rational printed_serial = q1 * ((g * k0 * k0 + k1 * k1) * (g * q0 * v0 + q1 * v1) - k1 * k1 * q0 * v0);
  const rational printed_scan = printed_serial + (1 - g) * q1 * k1 * k1 * q0 * v0;
  const rational target = q1 * (g * g * k0 * k0 * q0 * v0 + g * k0 * k0 * q1 * v1 + k1 * k1 * q1 * v1);
  EXPECT_EQ(hla::second_serial(p, hla::SecondOrder::masked_as_printed).o(1, 0), printed_serial);
  EXPECT_EQ(hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::decayed_as_printed).o(1, 0), printed_scan);
  EXPECT_NE(printed_scan, printed_serial);
  EXPECT_NE(printed_serial, target);
  EXPECT_EQ(hla::second_serial(p, hla::SecondOrder::masked).o(1, 0), target);
  EXPECT_EQ(hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::decayed).o(1, 0), target);
  const auto e = run("HLA-C5", 25);
  EXPECT_THAT(e.outcome.counterexample, HasSubstr("T=2"));
}

// HLA-C6 by hand, d = d_w = 1: (a ⊕ b) ⊕ c − a ⊕ (b ⊕ c) for the printed AHLA ⊕_γ is, in E,
// ρ_Bρ_C(1 − ρ_C) R_B P_A; the derived operator (R undecayed) has residual 0.
TEST(HlaClaims, AhlaDecayedOperatorCounterexampleReproduces) {
  using Sum = hla::AhlaSummary<rational>;
  auto one = [](rational r, rational p, rational e, rational rho) {
    return Sum{Mat<rational>::Constant(1, 1, r), Mat<rational>::Constant(1, 1, p), Mat<rational>::Constant(1, 1, e), rho};
  };
  const Sum a = one(2, 3, 5, rational(1, 2)), b = one(7, 11, 13, rational(1, 3)), c = one(17, 19, 23, rational(1, 4));
  const auto printed = [](const Sum& x, const Sum& y) { return hla::ahla_combine(x, y, hla::ScanOperator::decayed_as_printed); };
  const auto derived = [](const Sum& x, const Sum& y) { return hla::ahla_combine(x, y, hla::ScanOperator::decayed); };
  const rational expected = abs(b.rho * c.rho * (1 - c.rho) * b.r(0, 0) * a.p(0, 0));
  EXPECT_EQ(props::associativity_residual(a, b, c, printed), expected);
  EXPECT_EQ(props::associativity_residual(a, b, c, derived), 0);
  // And the scan over a sequence long enough for the Blelloch tree to combine multi-token segments.
  const auto p = props::rational_hla_problem({8, 2, 1}, false, rational(1, 2), 3);
  EXPECT_FALSE(hla::ahla_scan(p, hla::ScanOperator::decayed_as_printed).o == hla::ahla_serial(p).o);
  EXPECT_TRUE(hla::ahla_scan(p, hla::ScanOperator::decayed).o == hla::ahla_serial(p).o);
}

// HLA-C7 by hand, T = 2, d = d_v = 1, a_ts = q_t k_s: the literal target's o_0 is
// a_00 (a_00² + a_10²) v_0 (the middle index runs to l = 1 > t), the printed streaming o_0 = a_00³ v_0.
TEST(HlaClaims, ThirdOrderCounterexampleReproduces) {
  const rational q0(2), k0(3), v0(5), q1(7), k1(11), v1(13);
  const auto p = scalar_problem({q0, q1}, {k0, k1}, {v0, v1});
  const rational a00 = q0 * k0, a10 = q1 * k0;
  EXPECT_EQ(hla::third_literal_masked_target(p).o(0, 0), a00 * (a00 * a00 + a10 * a10) * v0);
  EXPECT_EQ(hla::third_serial(p, hla::ThirdOrder::masked_as_printed).o(0, 0), a00 * a00 * a00 * v0);
  // At t = 1 the printed form also misses the causal target ((A Aᵀ) ⊙ L) A V: it keeps (i, l, j) = (1, 0, 1)
  // (largest index 1 twice) and drops (0, 1, 0) (l the unique largest).
  const rational a11 = q1 * k1;
  const rational b01 = q0 * k1;  // the unmasked score q_0·k_1 the printed triple (1, 0, 1) uses
  const rational causal = hla::third_materialized(p, hla::ThirdOrder::masked).o(1, 0);
  const rational printed = hla::third_serial(p, hla::ThirdOrder::masked_as_printed).o(1, 0);
  EXPECT_EQ(printed - causal, a11 * b01 * b01 * v1 - a10 * a10 * a10 * v0);
  const auto e = run("HLA-C7", 25);
  EXPECT_THAT(e.outcome.counterexample, HasSubstr("T=2"));
}

// HLA-C10 by hand, T = 2, C = 1, d = d_v = 1: Fig. 1(C) misses q_1 k_0² q_1 v_1, Fig. 2(C) misses
// (q_1 k_1) q_1 k_0 v_0.
TEST(HlaClaims, ChunkFormCounterexampleReproduces) {
  const rational q0(2), k0(3), v0(5), q1(7), k1(11), v1(13);
  const auto p = scalar_problem({q0, q1}, {k0, k1}, {v0, v1});
  EXPECT_EQ(hla::second_serial(p, hla::SecondOrder::masked).o(1, 0) - hla::second_chunked_as_printed(p, 1).o(1, 0),
            q1 * k0 * k0 * q1 * v1);
  EXPECT_EQ(hla::ahla_serial(p).o(1, 0) - hla::ahla_chunked_as_printed(p, 1).o(1, 0), q1 * k1 * q1 * k0 * v0);
  EXPECT_EQ(hla::second_chunked(p, 1).o, hla::second_serial(p, hla::SecondOrder::masked).o);
  EXPECT_EQ(hla::ahla_chunked(p, 1).o, hla::ahla_serial(p).o);
  const auto e = run("HLA-C10", 25);
  EXPECT_THAT(e.outcome.counterexample, HasSubstr("T=2"));
}

// The exact check is not vacuous: a recurrence that updates G with the current C (C_t instead of
// C_{t−1}) — the mistake the paper's "previous C" avoids — misses ((A Aᵀ) ⊙ L) V by the diagonal pairs.
TEST(HlaClaims, ExactCheckCatchesAWrongRecurrence) {
  const auto p = props::rational_hla_problem({6, 3, 2}, false, rational(1), 21);
  Mat<rational> sk = Mat<rational>::Zero(3, 3), c = Mat<rational>::Zero(3, 2), g = Mat<rational>::Zero(3, 2);
  Mat<rational> wrong(6, 2);
  for (Eigen::Index t = 0; t < 6; ++t) {
    const ref::Vec<rational> q = p.q.row(t).transpose(), k = p.k.row(t).transpose(), v = p.v.row(t).transpose();
    sk += k * k.transpose();
    c += q * v.transpose();
    g += k * (k.transpose() * c);
    wrong.row(t) = q.transpose() * (sk * c - g);
  }
  const Mat<rational> a = hla::lower<rational>(p.q * p.k.transpose());
  const Mat<rational> target = hla::lower<rational>(a * a.transpose()) * p.v;
  EXPECT_FALSE(wrong == target);
  EXPECT_TRUE(hla::second_serial(p, hla::SecondOrder::masked_as_printed).o == target);
}
