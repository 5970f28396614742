// DeltaNet, GDN and KLA in double: serial == materialized == chunked (C ∈ {1, 7, 16, 64}) for
// T ∈ {1, 2, 63, 64, 65, 300}, with and without an initial state, d_k ≠ d_v both ways; outputs and
// final states, to the tolerance derived in delta_rule_forms_check.h.
#include <gtest/gtest.h>

#include "delta_rule_forms_check.h"

namespace {

using namespace larc::testing;

class DeltaRuleFormsDouble : public ::testing::TestWithParam<GridParam> {};

TEST_P(DeltaRuleFormsDouble, SerialMaterializedChunkedAgree) {
  check_grid_cell(GetParam(), [](Mechanism mech, const Shape& shape, std::uint64_t seed) {
    return make_problem<double>(mech, shape, seed);
  });
}

INSTANTIATE_TEST_SUITE_P(
    Grid, DeltaRuleFormsDouble,
    ::testing::Combine(::testing::Values(Mechanism::deltanet, Mechanism::gdn, Mechanism::kla),
                       ::testing::Values<Eigen::Index>(1, 2, 63, 64, 65, 300), ::testing::Bool(),
                       ::testing::Values(Dims{5, 3}, Dims{3, 7})),
    grid_param_name);

}  // namespace
