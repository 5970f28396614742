// Numeric generators (DESIGN.md "Randomized inputs"). RapidCheck has no usable floating-point
// generator, so a case is a small struct of discrete choices (seed, sizes, regimes) that RapidCheck
// generates and shrinks, and the numbers are expanded from it deterministically. The same case
// therefore always yields the same inputs: a printed case is a reproducer.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "larc/cases/regimes.h"
#include "larc/reference/delta_rule.h"
#include "larc/reference/types.h"

namespace larc::props {

using larc::ref::Mat;
using larc::ref::Vec;

// Every generated number comes from here; seeded, portable (mt19937_64 + our own transforms, not
// the unspecified std:: distributions). Kept beside cases::Rng because the claims' recorded figures
// and counterexamples are expansions of this stream.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : eng_(seed) {}
  double uniform() { return static_cast<double>(eng_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal();                   // Box–Muller
  std::uint64_t bits() { return eng_(); }
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {  // inclusive
    return lo + static_cast<std::int64_t>(eng_() % static_cast<std::uint64_t>(hi - lo + 1));
  }

 private:
  std::mt19937_64 eng_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// The regimes (key sets, gate regimes, Gaussian and unit-row matrices) live in the case vocabulary
// shared with the gate (cases/regimes.h); the claims expand them with Rng's recorded stream.
using cases::gate_kind_name;
using cases::GateKind;
using cases::kGateKinds;
using cases::key_kind_name;
using cases::KeyKind;
using cases::kKeyKinds;
using cases::betas;
using cases::gaussian;
using cases::keys;
using cases::log_decays;
using cases::unit_rows;

// One delta-rule case: everything needed to build the inputs.
struct DeltaCase {
  std::uint64_t seed = 0;
  int T = 1, dk = 1, dv = 1;
  KeyKind keys = KeyKind::gaussian;
  GateKind gates = GateKind::moderate;
  bool with_initial_state = false;
  std::string describe() const;
};

// Builds a GDN problem (α = e^g, β from the gate regime, scale d_k^{-1/2}) in double; convert with
// cast_problem for another rung.
ref::delta_rule::Problem<double> gdn_problem(const DeltaCase& c);

template <class To>
ref::delta_rule::Problem<To> cast_problem(const ref::delta_rule::Problem<double>& p) {
  using ref::cast_matrix;
  using ref::cast_vector;
  ref::delta_rule::Problem<To> r{cast_matrix<To>(p.q), cast_matrix<To>(p.k), cast_matrix<To>(p.v),
                                 cast_vector<To>(p.alpha), cast_vector<To>(p.beta),
                                 ref::from_double<To>(p.scale), {}};
  if (p.initial_state) r.initial_state = cast_matrix<To>(*p.initial_state);
  return r;
}

}  // namespace larc::props
