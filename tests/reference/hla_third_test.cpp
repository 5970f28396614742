// Third-order HLA (reference/hla_third.h) in exact rational arithmetic, over T ∈ {1, 2, 3, 17, 64, 65},
// normalised or not, d = 3 ≠ d_v = 2:
//   derived masked:  serial (G1' and G3) == ((A Aᵀ) ⊙ L) A V == scan with the derived (X, Y) operator;
//   printed masked:  serial (G1, G2, G3) == the scan with the paper's segment maps == the sum over the
//                    triples whose largest index occurs at least twice (T ≤ 17: it is O(T⁴));
//   unmasked:        serial == ((((A Bᵀ) ⊙ L) B) ⊙ L) V == the scan read as qᵀ S^K S^Q P.
#include <gtest/gtest.h>

#include <tuple>

#include "larc/properties/hla_problems.h"

namespace {

using namespace larc::ref;
using larc::props::HlaShape;
using larc::props::rational_hla_problem;

using Param = std::tuple<Eigen::Index, bool>;  // (T, normalised)

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return "T" + std::to_string(std::get<0>(info.param)) + (std::get<1>(info.param) ? "_normalised" : "_plain");
}

void expect_same(const hla::Result<rational>& got, const hla::Result<rational>& want, const std::string& what) {
  EXPECT_TRUE(got.o == want.o) << what << ": outputs differ";
  EXPECT_TRUE(got.den == want.den) << what << ": denominators differ";
}

class ThirdOrderExact : public ::testing::TestWithParam<Param> {
 protected:
  hla::Problem<rational> problem() const {
    const auto& [T, normalized] = GetParam();
    const std::uint64_t seed = 6000 + 10 * static_cast<std::uint64_t>(T) + (normalized ? 1 : 0);
    RecordProperty("seed", std::to_string(seed));
    return rational_hla_problem(HlaShape{T, 3, 2}, normalized, rational(1), seed);
  }
};

TEST_P(ThirdOrderExact, DerivedMaskedFormsAgree) {
  const auto p = problem();
  const auto serial = hla::third_serial(p, hla::ThirdOrder::masked);
  ASSERT_EQ(serial.o.rows(), p.T());
  expect_same(hla::third_materialized(p, hla::ThirdOrder::masked), serial, "materialized");
  expect_same(hla::third_scan(p, hla::ThirdOrder::masked), serial, "scan");
}

TEST_P(ThirdOrderExact, PrintedMaskedFormsAgree) {
  const auto p = problem();
  const auto serial = hla::third_serial(p, hla::ThirdOrder::masked_as_printed);
  expect_same(hla::third_scan(p, hla::ThirdOrder::masked_as_printed), serial, "scan with segment maps");
  if (p.T() <= 17) expect_same(hla::printed_triple_sum(p), serial, "triples whose largest index repeats");
}

TEST_P(ThirdOrderExact, UnmaskedFormsAgree) {
  const auto p = problem();
  const auto serial = hla::third_serial(p, hla::ThirdOrder::unmasked);
  expect_same(hla::third_materialized(p, hla::ThirdOrder::unmasked), serial, "materialized");
  expect_same(hla::third_scan(p, hla::ThirdOrder::unmasked), serial, "scan");
}

INSTANTIATE_TEST_SUITE_P(Grid, ThirdOrderExact,
                         ::testing::Combine(::testing::Values<Eigen::Index>(1, 2, 3, 17, 64, 65), ::testing::Bool()),
                         param_name);

// The derived masked target written out for T = 3: Σ over l ≤ t, i ≤ l, j ≤ l.
TEST(ThirdOrder, MaterializedIsTheTripleSumWithTheMiddleIndexLargest) {
  const auto p = rational_hla_problem(HlaShape{3, 2, 2}, false, rational(1), 12);
  const auto got = hla::third_materialized(p, hla::ThirdOrder::masked).o;
  auto dot = [](const auto& a, const auto& b) { return rational(a.dot(b)); };
  for (Eigen::Index t = 0; t < 3; ++t) {
    Vec<rational> want = Vec<rational>::Zero(2);
    for (Eigen::Index l = 0; l <= t; ++l)
      for (Eigen::Index i = 0; i <= l; ++i)
        for (Eigen::Index j = 0; j <= l; ++j)
          want += dot(p.q.row(t), p.k.row(i)) * dot(p.k.row(i), p.q.row(l)) * dot(p.q.row(l), p.k.row(j)) *
                  Vec<rational>(p.v.row(j).transpose());
    EXPECT_TRUE(Vec<rational>(got.row(t).transpose()) == want) << "t=" << t;
  }
}

TEST(ThirdOrder, RefusesDecay) {
  const auto p = rational_hla_problem(HlaShape{3, 2, 2}, false, rational(1, 2), 1);
  EXPECT_THROW(hla::third_serial(p, hla::ThirdOrder::masked), std::invalid_argument);
  EXPECT_THROW(hla::third_scan(p, hla::ThirdOrder::masked), std::invalid_argument);
  EXPECT_THROW(hla::third_materialized(p, hla::ThirdOrder::unmasked), std::invalid_argument);
}

}  // namespace
