// Numeric generators (DESIGN.md "Randomized inputs"). RapidCheck has no usable floating-point
// generator, so a case is a small struct of discrete choices (seed, sizes, regimes) that RapidCheck
// generates and shrinks, and the numbers are expanded from it deterministically. The same case
// therefore always yields the same inputs: a printed case is a reproducer.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "larc/reference/delta_rule.h"
#include "larc/reference/types.h"

namespace larc::props {

using larc::ref::Mat;
using larc::ref::Vec;

// Every generated number comes from here; seeded, portable (mt19937_64 + our own transforms, not
// the unspecified std:: distributions).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : eng_(seed) {}
  double uniform() { return static_cast<double>(eng_() >> 11) * 0x1.0p-53; }  // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal();                   // Box–Muller
  double student_t3();               // heavy tails: t with 3 degrees of freedom
  std::uint64_t bits() { return eng_(); }
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {  // inclusive
    return lo + static_cast<std::int64_t>(eng_() % static_cast<std::uint64_t>(hi - lo + 1));
  }

 private:
  std::mt19937_64 eng_;
  bool has_spare_ = false;
  double spare_ = 0;
};

// Key sets a kernel must survive.
enum class KeyKind {
  gaussian,        // i.i.d. N(0, 1/d) entries
  unit,            // uniform on the unit sphere
  heavy_tailed,    // t(3) entries
  near_collinear,  // a common direction plus a 1e-3 perturbation, unit length
  tiny_norm,       // unit direction × 1e-4
  huge_norm,       // unit direction × 1e3
  orthonormal,     // rows of a random orthogonal matrix (d of them, repeated cyclically)
};
inline constexpr int kKeyKinds = 7;
std::string key_kind_name(KeyKind k);

// Gate regimes: β and the log-decay g at their bounds.
enum class GateKind {
  moderate,   // β ∈ (0.05, 1], g ∈ [−1, 0]
  beta_one,   // β = 1, g = 0
  beta_tiny,  // β ∈ (0, 1e-6], g ∈ [−1, 0]
  no_decay,   // g = 0
  hard_decay, // g ∈ [−30, −10] (α ≈ 0), and g = −∞ (α = 0) on every fourth token
};
inline constexpr int kGateKinds = 5;
std::string gate_kind_name(GateKind g);

Mat<double> gaussian(Rng& rng, Eigen::Index rows, Eigen::Index cols, double sigma);
Mat<double> unit_rows(Rng& rng, Eigen::Index rows, Eigen::Index cols);
Mat<double> keys(Rng& rng, KeyKind kind, Eigen::Index T, Eigen::Index d);
Vec<double> betas(Rng& rng, GateKind kind, Eigen::Index T);
Vec<double> log_decays(Rng& rng, GateKind kind, Eigen::Index T);

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
