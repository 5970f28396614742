// The random case the backward identity properties of the decayed families (delta rule, GLA) draw:
// a seed, a shape (T ≤ 20, d_k, d_v ≤ 4, with or without S_0), which cotangents are seeded, whether
// some decays are exactly 0 (log-decay −∞) and a checkpoint. The case is logged for RapidCheck and
// recorded as the JUnit property failing_case (overwritten by each case; the last is the failure).
#pragma once

#include <rapidcheck.h>
#include <gtest/gtest.h>

#include <string>

#include "delta_rule_backward_check.h"

namespace larc::testing::backward_checks {

struct IdentityCase {
  std::string family;  // for messages: "GDN", "GLA"
  std::uint64_t seed = 0;
  Shape shape{1, 1, 1, false};
  Seeds seeds = Seeds::both;
  bool zero_decays = false;
  Eigen::Index checkpoint = 1;

  std::string describe() const {
    return family + " seed=" + std::to_string(seed) + " T=" + std::to_string(shape.T) + " dk=" + std::to_string(shape.dk) +
           " dv=" + std::to_string(shape.dv) + (shape.initial_state ? " with S0" : " S0=0") + " cotangents " +
           seeds_name(seeds) + (zero_decays ? " some decays 0" : "") + " checkpoint=" + std::to_string(checkpoint);
  }
};

inline IdentityCase gen_identity_case(const std::string& family) {
  IdentityCase c;
  c.family = family;
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.shape = {*rc::gen::inRange(1, 21), *rc::gen::inRange(1, 5), *rc::gen::inRange(1, 5), *rc::gen::arbitrary<bool>()};
  c.seeds = *rc::gen::element(Seeds::d_o, Seeds::d_final_state, Seeds::both);
  c.zero_decays = *rc::gen::arbitrary<bool>();
  c.checkpoint = *rc::gen::inRange(1, 9);
  RC_LOG() << c.describe();
  ::testing::Test::RecordProperty("failing_case", c.describe());
  return c;
}

}  // namespace larc::testing::backward_checks
