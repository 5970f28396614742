// DeltaNet, GDN and KLA in exact rational arithmetic: serial == materialized == chunked (C ∈ {1, 7, 16, 64}) for
// T ∈ {1, 2, 63, 64, 65}, with and without an initial state, d_k ≠ d_v both ways (d ≤ 4); outputs and
// final states exactly equal (residual 0).
#include <gtest/gtest.h>

#include "delta_rule_forms_check.h"

namespace {

using namespace larc::testing;

class DeltaRuleFormsRational : public ::testing::TestWithParam<GridParam> {};

TEST_P(DeltaRuleFormsRational, SerialMaterializedChunkedAgree) {
  check_grid_cell(GetParam(), [](Mechanism mech, const Shape& shape, std::uint64_t seed) {
    return make_rational_problem(mech, shape, seed);
  });
}

INSTANTIATE_TEST_SUITE_P(
    Grid, DeltaRuleFormsRational,
    ::testing::Combine(::testing::Values(Mechanism::deltanet, Mechanism::gdn, Mechanism::kla),
                       ::testing::Values<Eigen::Index>(1, 2, 63, 64, 65), ::testing::Bool(),
                       ::testing::Values(Dims{3, 2}, Dims{2, 4})),
    grid_param_name);

}  // namespace
