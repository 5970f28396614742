// VLA-C1..C10: the verdicts the ledger prints, recomputed at the default seed; each FALSIFIED or
// HOLDS-UNDER counterexample recomputed independently of the claim's code; the checks shown to fail on
// planted defects.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "larc/properties/claims.h"
#include "larc/reference/scalar.h"
#include "larc/reference/vla.h"

using namespace larc;
using props::Verdict;
using ref::Mat;
using ref::rational;
using ref::Vec;

namespace {
props::LedgerEntry run(const char* id, int trials = 0) {
  const props::Claim* c = props::find_claim(id);
  EXPECT_NE(c, nullptr) << id;
  auto e = props::run_claim(*c, {1, trials});
  ::testing::Test::RecordProperty(std::string(id) + "_reproduce", e.reproduce());
  return e;
}

Vec<rational> vec(std::initializer_list<rational> x) {
  Vec<rational> v(static_cast<Eigen::Index>(x.size()));
  Eigen::Index i = 0;
  for (const rational& e : x) v(i++) = e;
  return v;
}
}  // namespace

TEST(VlaClaims, C9ScanAsPrintedIsFalsifiedAndTheDerivedOperatorsAreExact) {
  const auto e = run("VLA-C9");
  ASSERT_EQ(e.outcome.verdict, Verdict::falsified) << e.outcome.evidence;
  EXPECT_THAT(e.outcome.counterexample, ::testing::HasSubstr("T=2"));
  EXPECT_THAT(e.outcome.evidence, ::testing::HasSubstr("(F_l F_r, G_l F_r + G_r): exact (residual 0)"));
  EXPECT_THAT(e.outcome.evidence, ::testing::HasSubstr("S^T ↦ F_t^T S^T + G_t^T (a memory stored as S^T, as larc stores it): exact (residual 0)"));
}

TEST(VlaClaims, C9CounterexampleReproducesByHand) {
  // Two tokens, d_k = d_v = 2, exact unit vectors, S_0 = 0 (paper orientation, S is d_v × d_k).
  const Vec<rational> k1 = vec({rational(3, 5), rational(4, 5)}), a1 = vec({1, 0});
  const Vec<rational> k2 = vec({0, 1}), a2 = vec({rational(5, 13), rational(12, 13)});
  const Vec<rational> v1 = vec({1, 2}), v2 = vec({-1, 3});
  const Mat<rational> I = Mat<rational>::Identity(2, 2);
  const Mat<rational> F1 = I - k1 * a1.transpose(), G1 = v1 * a1.transpose();
  const Mat<rational> F2 = I - k2 * a2.transpose(), G2 = v2 * a2.transpose();
  // The recurrence: S_1 = S_0 + (v_1 − S_0 k̂_1) α̂_1^T, S_2 = S_1 + (v_2 − S_1 k̂_2) α̂_2^T.
  const Mat<rational> S1 = v1 * a1.transpose();
  const Mat<rational> S2 = S1 + (v2 - S1 * k2) * a2.transpose();
  // Composition as printed: S_2 = S_0 (F_2 F_1) + F_2 G_1 + G_2 with S_0 = 0; and the derived one.
  const Mat<rational> printed = F2 * G1 + G2;
  const Mat<rational> derived = G1 * F2 + G2;
  EXPECT_TRUE(derived == S2);
  EXPECT_FALSE(printed == S2);
  // The printed formula is right for the transposed maps: S_2^T = F_2^T G_1^T + G_2^T.
  EXPECT_TRUE(Mat<rational>(F2.transpose() * G1.transpose() + G2.transpose()) == Mat<rational>(S2.transpose()));
}

TEST(VlaClaims, C9CheckFailsOnAWrongOperatorThroughTheReference) {
  // The reference's scan with the printed operator (as the claim checks it) against its serial form.
  Mat<rational> khat(2, 2), ahat(2, 2), v(2, 2);
  khat << rational(3, 5), rational(4, 5), 0, 1;
  ahat << 1, 0, rational(5, 13), rational(12, 13);
  v << 1, 2, -1, 3;
  const Mat<rational> s0 = Mat<rational>::Zero(2, 2);
  auto nothing = [](Eigen::Index, const Mat<rational>&) {};
  const Mat<rational> ser = ref::vla::affine_serial<rational>(s0, khat, ahat, v, nothing);
  EXPECT_TRUE(ref::vla::affine_scan<rational>(s0, khat, ahat, v, ref::vla::ScanOperator::right_acting, nothing) == ser);
  EXPECT_FALSE(ref::vla::affine_scan<rational>(s0, khat, ahat, v, ref::vla::ScanOperator::as_printed, nothing) == ser);
}
