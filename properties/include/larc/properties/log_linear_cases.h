// Log-linear attention problems (SPEC §4) for the claims and the tests: a case is a few discrete
// choices and the numbers are expanded from its seed deterministically (generators.h), in double or
// as exact rationals (rational decays, steps and level scales, so every form can be compared exactly).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "larc/properties/generators.h"
#include "larc/reference/log_linear.h"

namespace larc::props {

struct LogLinearCase {
  std::uint64_t seed = 0;
  int T = 1, dk = 1, dv = 1;
  ref::log_linear::Variant variant = ref::log_linear::Variant::mamba2;
  GateKind gates = GateKind::moderate;  // double problems only
  int extra_levels = 0;                 // λ columns beyond level_count(T) (they must be ignored)
  std::string describe() const;
};

// Double: unit keys, Gaussian queries N(0, I/d_k) and values N(0, I), decays e^g and steps β from the
// gate regime, λ = softplus(N(0, 1)) per token and level, scale 1.
ref::log_linear::Problem<double> log_linear_problem(const LogLinearCase& c);

// Exact: entries num/den with |num| ≤ 9, den ≤ 8; decays, steps in (0, 1] and λ in (0, 2] with
// denominators ≤ 9; scale 1.
ref::log_linear::Problem<ref::rational> rational_log_linear_problem(const LogLinearCase& c);

template <class To>
ref::log_linear::Problem<To> cast_log_linear_problem(const ref::log_linear::Problem<double>& p) {
  std::optional<ref::log_linear::Start<To>> start;
  if (p.start) {
    start = ref::log_linear::Start<To>{p.start->offset, {}};
    for (const ref::Mat<double>& z : p.start->level_states) start->level_states.push_back(ref::cast_matrix<To>(z));
  }
  return {p.variant,
          ref::cast_matrix<To>(p.q),
          ref::cast_matrix<To>(p.k),
          ref::cast_matrix<To>(p.v),
          ref::cast_vector<To>(p.alpha),
          ref::cast_vector<To>(p.beta),
          ref::cast_matrix<To>(p.lambda),
          ref::from_double<To>(p.scale),
          std::move(start)};
}

}  // namespace larc::props
