// The HLA scan operators (SPEC §5) as algebra, exactly: associativity on random rational segment
// summaries (⊕, the derived ⊕_γ, AHLA's, the third-order ones) and its failure for the printed ⊕_γ of
// second order and of AHLA; and planted defects — an operator without its cross term — that the
// scan-versus-serial check must catch (associativity alone would not: the defective ⊕ is associative).
#include <gtest/gtest.h>

#include "larc/properties/hla_algebra.h"
#include "larc/properties/hla_problems.h"

namespace {

using namespace larc::ref;
using larc::props::associativity_residual;
using larc::proofs::RationalSource;
namespace props = larc::props;

constexpr int kTriples = 12;

template <class Random, class Combine>
int non_associative_triples(Random random, const Combine& combine) {
  int failures = 0;
  for (int i = 0; i < kTriples; ++i) {
    RationalSource src(900 + i);
    const auto a = random(src), b = random(src), c = random(src);
    if (associativity_residual(a, b, c, combine) != 0) ++failures;
  }
  return failures;
}

// Triples whose last segment has ρ_C ≠ 1: where the printed ⊕_γ must fail (the cross term ages by
// ρ_C² in one grouping and by ρ_C in the other).
template <class Random>
int triples_with_decaying_last_segment(Random random) {
  int n = 0;
  for (int i = 0; i < kTriples; ++i) {
    RationalSource src(900 + i);
    random(src), random(src);
    if (random(src).rho != 1) ++n;
  }
  return n;
}

TEST(HlaScanAlgebra, SecondOrderOperators) {
  auto summary = [](bool decayed) {
    return [decayed](RationalSource& src) { return props::random_second_summary(src, 3, 3, decayed); };
  };
  auto op = [](hla::ScanOperator o) {
    return [o](const auto& a, const auto& b) { return hla::second_combine(a, b, o); };
  };
  EXPECT_EQ(non_associative_triples(summary(false), op(hla::ScanOperator::plain)), 0);
  EXPECT_EQ(non_associative_triples(summary(true), op(hla::ScanOperator::decayed)), 0);
  ASSERT_GT(triples_with_decaying_last_segment(summary(true)), kTriples / 2);
  EXPECT_EQ(non_associative_triples(summary(true), op(hla::ScanOperator::decayed_as_printed)),
            triples_with_decaying_last_segment(summary(true)));
}

TEST(HlaScanAlgebra, AhlaOperators) {
  auto summary = [](bool decayed) {
    return [decayed](RationalSource& src) { return props::random_ahla_summary(src, 3, 2, decayed); };
  };
  auto op = [](hla::ScanOperator o) { return [o](const auto& a, const auto& b) { return hla::ahla_combine(a, b, o); }; };
  EXPECT_EQ(non_associative_triples(summary(false), op(hla::ScanOperator::plain)), 0);
  EXPECT_EQ(non_associative_triples(summary(true), op(hla::ScanOperator::decayed)), 0);
  ASSERT_GT(triples_with_decaying_last_segment(summary(true)), kTriples / 2);
  EXPECT_EQ(non_associative_triples(summary(true), op(hla::ScanOperator::decayed_as_printed)),
            triples_with_decaying_last_segment(summary(true)));
}

TEST(HlaScanAlgebra, ThirdOrderOperators) {
  EXPECT_EQ(non_associative_triples([](RationalSource& src) { return props::random_third_printed_summary(src, 2, 3); },
                                    hla::third_printed_combine<rational>),
            0);
  EXPECT_EQ(non_associative_triples([](RationalSource& src) { return props::random_third_summary(src, 3, 2); },
                                    hla::third_combine<rational>),
            0);
}

TEST(HlaScanAlgebra, ScanCatchesAnOperatorWithoutTheCrossTerm) {
  const auto p = props::rational_hla_problem(props::HlaShape{5, 3, 2}, true, rational(1), 31);
  const auto serial = hla::second_serial(p, hla::SecondOrder::masked);
  ASSERT_TRUE(hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::plain).o == serial.o);
  const auto no_cross = [](const hla::SecondOrderSummary<rational>& a, const hla::SecondOrderSummary<rational>& b) {
    return hla::SecondOrderSummary<rational>{a.sk + b.sk, a.c + b.c, a.g + b.g, rational(1)};
  };
  RationalSource src(5);
  const auto x = props::random_second_summary(src, 3, 3, false), y = props::random_second_summary(src, 3, 3, false),
             z = props::random_second_summary(src, 3, 3, false);
  EXPECT_EQ(associativity_residual(x, y, z, no_cross), 0) << "the defect is associative";
  EXPECT_FALSE(hla::second_scan_with(p, hla::SecondOrder::masked, no_cross).o == serial.o);
}

TEST(HlaScanAlgebra, ScanCatchesAThirdOrderOperatorWithoutTheSegmentMap) {
  const auto p = props::rational_hla_problem(props::HlaShape{4, 2, 2}, false, rational(1), 32);
  const auto serial = hla::third_serial(p, hla::ThirdOrder::masked_as_printed);
  ASSERT_TRUE(hla::third_scan(p, hla::ThirdOrder::masked_as_printed).o == serial.o);
  // Rebuild the scan with M_B[S^Q_A] dropped: the triples (i = j in B, l in A) go missing.
  using Summary = hla::ThirdOrderPrintedSummary<rational>;
  const auto without_map = [](const Summary& a, const Summary& b) {
    Summary r = hla::third_printed_combine(a, b);
    r.f -= hla::apply_segment_map(b.m_map, a.sq, a.p.cols());
    return r;
  };
  const Mat<rational> w = hla::values_of(p);
  std::vector<Summary> x;
  for (Eigen::Index t = 0; t < p.T(); ++t)
    x.push_back(hla::third_printed_token<rational>(p.q.row(t).transpose(), p.k.row(t).transpose(), w.row(t).transpose()));
  const auto states = scan::blelloch_inclusive(x, without_map, Summary{Mat<rational>::Zero(2, 2), Mat<rational>::Zero(2, 2),
                                                                      Mat<rational>::Zero(2, 2), Mat<rational>::Zero(2, 2),
                                                                      Mat<rational>::Zero(2, 2), Mat<rational>::Zero(2, 2),
                                                                      Mat<rational>::Zero(4, 4)});
  const Mat<rational> last = p.q.row(3) * states[3].f;
  EXPECT_FALSE(last == Mat<rational>(serial.o.row(3)));
}

}  // namespace
