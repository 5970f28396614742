// Seeded DeltaNet / GDN / KLA problems shared by the delta_rule_* tests, and the error measures they
// use. Inputs are drawn in double (held exactly by every wider rung) and cast to the scalar under
// test; the gates that are functions of the inputs (KLA's β) are computed in that scalar.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "larc/properties/generators.h"
#include "larc/proofs_check/exact.h"
#include "larc/reference/delta_rule.h"
#include "forms_tolerance.h"
#include "delta_rule_mechanisms.h"

namespace larc::testing {

namespace dr = larc::ref::delta_rule;
using larc::ref::Mat;
using larc::ref::Vec;



inline std::string describe(Mechanism m, const Shape& s, std::uint64_t seed) {
  return mechanism_name(m) + " T=" + std::to_string(s.T) + " dk=" + std::to_string(s.dk) +
         " dv=" + std::to_string(s.dv) + (s.initial_state ? " with S0" : " S0=0") + " seed=" + std::to_string(seed);
}

// DeltaNet (α = 1) and GDN (α = e^g, g ∈ [−0.2, 0]): unit keys, as FLA normalises them, and
// β ∈ [0.05, 1]. KLA: unnormalised N(0, 1) keys (as in the authors' code), α as GDN, η ∈ [0.05, 1],
// β = kla_beta(k, η, ε = 1e-6). Queries and values N(0, 1); scale d_k^{-1/2}; S0 N(0, 1) when asked.
// In all three β‖k‖² ∈ [0, 1], so every transition α(I − βkk^T) is a contraction (‖·‖₂ ≤ 1).
template <class S>
dr::Problem<S> make_problem(Mechanism m, const Shape& s, std::uint64_t seed) {
  using larc::ref::cast_matrix;
  using larc::ref::cast_vector;
  props::Rng rng(seed);
  const Mat<double> q = props::gaussian(rng, s.T, s.dk, 1.0);
  const Mat<double> k = m == Mechanism::kla ? props::gaussian(rng, s.T, s.dk, 1.0) : props::unit_rows(rng, s.T, s.dk);
  const Mat<double> v = props::gaussian(rng, s.T, s.dv, 1.0);
  Vec<double> alpha(s.T), gate(s.T);
  for (Eigen::Index t = 0; t < s.T; ++t) {
    alpha(t) = m == Mechanism::deltanet ? 1.0 : std::exp(rng.uniform(-0.2, 0.0));
    gate(t) = rng.uniform(0.05, 1.0);  // β (DeltaNet, GDN) or η (KLA)
  }
  dr::Problem<S> p;
  p.q = cast_matrix<S>(q);
  p.k = cast_matrix<S>(k);
  p.v = cast_matrix<S>(v);
  p.alpha = cast_vector<S>(alpha);
  p.beta = m == Mechanism::kla ? dr::kla_beta<S>(p.k, cast_vector<S>(gate), S(1e-6)) : cast_vector<S>(gate);
  p.scale = dr::default_scale<S>(s.dk);
  if (s.initial_state) p.initial_state = cast_matrix<S>(props::gaussian(rng, s.dk, s.dv, 1.0));
  return p;
}

// The same three mechanisms in exact arithmetic, for T ≤ 65 and d ≤ 4: entries are random rationals
// n/d with |n| ≤ 9, d ≤ 8 (small, so the exact states stay a few thousand bits); α (GDN, KLA) and β
// (DeltaNet, GDN) or η (KLA) are rationals in (0, 1]; KLA's β = η / (‖k‖² + 10^-6) exactly; scale 1/2
// (d_k^{-1/2} is irrational).
inline dr::Problem<larc::ref::rational> make_rational_problem(Mechanism m, const Shape& s, std::uint64_t seed) {
  using larc::ref::rational;
  larc::proofs::RationalSource src(seed, 9, 8);
  dr::Problem<rational> p;
  p.q = src.matrix(s.T, s.dk);
  p.k = src.matrix(s.T, s.dk);
  p.v = src.matrix(s.T, s.dv);
  p.alpha = Vec<rational>::Ones(s.T);
  Vec<rational> gate(s.T);
  for (Eigen::Index t = 0; t < s.T; ++t) {
    if (m != Mechanism::deltanet) p.alpha(t) = src.unit_interval();
    gate(t) = src.unit_interval();
  }
  p.beta = m == Mechanism::kla ? dr::kla_beta<rational>(p.k, gate, rational(1, 1000000)) : gate;
  p.scale = rational(1, 2);
  if (s.initial_state) p.initial_state = src.matrix(s.dk, s.dv);
  return p;
}

}  // namespace larc::testing
