// Log-linear attention, Mamba-2 and GDN variants, in exact rational arithmetic (rational decays, steps
// and level scales): materialized == serial == chunked (C = 1, 2, 4, …, 64) with residual 0 for
// T ∈ {1, 2, 3, 15, 16, 17, 33, 64, 65} (T = 300 for Mamba-2), d_k ≠ d_v both ways; and exact agreement
// is not automatic: a λ entry changed by 1/1000 at one (token, level) shows in every form.
#include <gtest/gtest.h>

#include "log_linear_forms_check.h"

namespace {

using namespace larc::testing;
using larc::props::LogLinearCase;
using larc::ref::rational;

class LogLinearFormsRational : public ::testing::TestWithParam<std::tuple<ll::Variant, int>> {};

TEST_P(LogLinearFormsRational, ExactlyEqual) {
  const auto [variant, T] = GetParam();
  const LogLinearCase c{static_cast<std::uint64_t>(T) * 31 + 7, T, T % 2 ? 3 : 2, T % 2 ? 2 : 3, variant,
                        larc::props::GateKind::moderate, T % 3};
  ::testing::Test::RecordProperty("case", c.describe());
  check_log_linear_forms(larc::props::rational_log_linear_problem(c), c.describe());
}

INSTANTIATE_TEST_SUITE_P(Gdn, LogLinearFormsRational,
                         ::testing::Combine(::testing::Values(ll::Variant::gdn),
                                            ::testing::Values(1, 2, 3, 15, 16, 17, 33, 64, 65)),
                         [](const auto& info) { return "gdn_T" + std::to_string(std::get<1>(info.param)); });
INSTANTIATE_TEST_SUITE_P(Mamba2, LogLinearFormsRational,
                         ::testing::Combine(::testing::Values(ll::Variant::mamba2),
                                            ::testing::Values(1, 2, 3, 15, 16, 17, 33, 64, 65, 300)),
                         [](const auto& info) { return "mamba2_T" + std::to_string(std::get<1>(info.param)); });

// Each level's weight reaches the outputs: perturbing λ_t^{(ℓ)} for one live (t, ℓ) changes o_t in
// every form, by exactly the level's read (so the forms agree on the perturbed problem too).
TEST(LogLinearFormsRational, EveryLevelWeightIsRead) {
  for (ll::Variant variant : {ll::Variant::mamba2, ll::Variant::gdn}) {
    const auto p = larc::props::rational_log_linear_problem({5, 23, 2, 2, variant});
    const larc::ref::Mat<rational> base = ll::serial(p);
    const std::uint64_t t = 22;  // levels 0, 2, 3, 5 are live (22 = 0b10110)
    for (const auto& b : larc::ref::fenwick::buckets(t)) {
      auto q = p;
      q.lambda(t, b.level) += rational(1, 1000);
      const auto s = ll::serial(q), m = ll::materialized(q), c = ll::chunked(q, 4);
      EXPECT_NE(s.row(t), base.row(t)) << "level " << b.level;
      EXPECT_TRUE(s == m && s == c) << "level " << b.level;
    }
  }
}

}  // namespace
