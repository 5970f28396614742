// AHLA (reference/hla_ahla.h) in exact rational arithmetic, over T ∈ {1, 2, 3, 17, 64, 65}, γ ∈ {1, 3/4},
// normalised or not, d = 3 ≠ d_v = 2: State::step (serial) == ((A_γ A_γ) ⊙ L) V == the exclusive
// Blelloch scan with the derived ⊕_γ (and ⊕ at γ = 1) == the derived chunk form for C ∈ {1, 2, 5, 16}.
#include <gtest/gtest.h>

#include <tuple>

#include "hla_exact_cases.h"

#include "larc/properties/hla_problems.h"

namespace {

using namespace larc::ref;
using larc::hla_exact::expect_same;
using larc::hla_exact::Param;
using larc::hla_exact::param_name;
using larc::props::HlaShape;
using larc::props::rational_hla_problem;

class AhlaExact : public ::testing::TestWithParam<Param> {};

TEST_P(AhlaExact, FormsAgree) {
  const auto& [T, normalized, decayed] = GetParam();
  const std::uint64_t seed = 5000 + 10 * static_cast<std::uint64_t>(T) + (normalized ? 1 : 0) + (decayed ? 2 : 0);
  RecordProperty("seed", std::to_string(seed));
  const auto p = rational_hla_problem(HlaShape{T, 3, 2}, normalized, decayed ? rational(3, 4) : rational(1), seed);
  const auto serial = hla::ahla_serial(p);
  ASSERT_EQ(serial.o.rows(), T);
  expect_same(hla::ahla_materialized(p), serial, "materialized");
  expect_same(hla::ahla_scan(p, hla::ScanOperator::decayed), serial, "scan ⊕_γ derived");
  if (!decayed) {
    expect_same(hla::ahla_scan(p, hla::ScanOperator::plain), serial, "scan ⊕");
    expect_same(hla::ahla_scan(p, hla::ScanOperator::decayed_as_printed), serial, "scan ⊕_γ printed at γ = 1");
  }
  for (const Eigen::Index c : {1, 2, 5, 16}) expect_same(hla::ahla_chunked(p, c), serial, "chunked C=" + std::to_string(c));
}

INSTANTIATE_TEST_SUITE_P(Grid, AhlaExact,
                         ::testing::Combine(::testing::Values<Eigen::Index>(1, 2, 3, 17, 64, 65), ::testing::Bool(),
                                            ::testing::Bool()),
                         param_name);

// The written-out definition at γ = 1/2: o_t = Σ_{j≤i≤t} γ^{t−j} (q_t·k_i)(q_i·k_j) v_j.
TEST(Ahla, MaterializedIsTheDoubleSumOverOrderedPairs) {
  const auto p = rational_hla_problem(HlaShape{4, 2, 3}, false, rational(1, 2), 8);
  const auto got = hla::ahla_materialized(p).o;
  for (Eigen::Index t = 0; t < 4; ++t) {
    Vec<rational> want = Vec<rational>::Zero(3);
    for (Eigen::Index i = 0; i <= t; ++i)
      for (Eigen::Index j = 0; j <= i; ++j)
        want += hla::power(p.opt.gamma, t - j) * rational(p.q.row(t).dot(p.k.row(i))) *
                rational(p.q.row(i).dot(p.k.row(j))) * Vec<rational>(p.v.row(j).transpose());
    EXPECT_TRUE(Vec<rational>(got.row(t).transpose()) == want) << "t=" << t;
  }
}

TEST(Ahla, BadInputNamesTheField) {
  auto p = rational_hla_problem(HlaShape{3, 2, 2}, false, rational(1), 2);
  p.v = Mat<rational>::Zero(2, 2);
  try {
    hla::ahla_serial(p);
    FAIL() << "v with the wrong number of rows accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("v must have T rows like q"), std::string::npos) << e.what();
  }
  p.v = Mat<rational>::Zero(3, 2);
  EXPECT_THROW(hla::ahla_chunked(p, 0), std::invalid_argument);
  p.opt.gamma = rational(1, 3);
  EXPECT_THROW(hla::ahla_chunked_as_printed(p, 2), std::invalid_argument);
  EXPECT_THROW(hla::ahla_scan(p, hla::ScanOperator::plain), std::invalid_argument);
}

}  // namespace
