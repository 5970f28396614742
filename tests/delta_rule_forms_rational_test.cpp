// DeltaNet, GDN and KLA in exact rational arithmetic: serial == materialized == chunked (C ∈ {1, 7, 16, 64}) for
// T ∈ {1, 2, 63, 64, 65}, with and without an initial state, d_k ≠ d_v both ways (d ≤ 4); outputs and
// final states exactly equal (residual 0).
#include <gtest/gtest.h>

#include <tuple>

#include "delta_rule_forms_check.h"

namespace {

using namespace larc::testing;

using Dims = std::pair<Eigen::Index, Eigen::Index>;  // (d_k, d_v)
using Param = std::tuple<Mechanism, Eigen::Index, bool, Dims>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [mech, T, init, dims] = info.param;
  return mechanism_name(mech) + "_T" + std::to_string(T) + (init ? "_S0" : "_zero") + "_dk" +
         std::to_string(dims.first) + "_dv" + std::to_string(dims.second);
}

class DeltaRuleFormsRational : public ::testing::TestWithParam<Param> {};

TEST_P(DeltaRuleFormsRational, SerialMaterializedChunkedAgree) {
  const auto [mech, T, init, dims] = GetParam();
  const Shape shape{T, dims.first, dims.second, init};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 10 * dims.first + (init ? 1 : 0);
  RecordProperty("seed", std::to_string(seed));
  expect_forms_agree(make_rational_problem(mech, shape, seed), describe(mech, shape, seed));
}

INSTANTIATE_TEST_SUITE_P(
    Grid, DeltaRuleFormsRational,
    ::testing::Combine(::testing::Values(Mechanism::deltanet, Mechanism::gdn, Mechanism::kla),
                       ::testing::Values<Eigen::Index>(1, 2, 63, 64, 65), ::testing::Bool(),
                       ::testing::Values(Dims{3, 2}, Dims{2, 4})),
    param_name);

}  // namespace
