// Seeded HLA problems (SPEC §5) for the HLA claims and tests: exact ones (random rationals, a
// rational decay) and numeric ones (Gaussian entries in double, converted exactly to a wider rung).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "larc/proofs_check/exact.h"
#include "larc/properties/generators.h"
#include "larc/reference/hla.h"

namespace larc::props {

namespace hla = larc::ref::hla;

struct HlaShape {
  Eigen::Index T = 1, d = 1, dv = 1;
};

inline std::string describe_hla(const HlaShape& s, bool normalized, const std::string& gamma, std::uint64_t seed) {
  return "{seed=" + std::to_string(seed) + ", T=" + std::to_string(s.T) + ", d=" + std::to_string(s.d) +
         ", d_v=" + std::to_string(s.dv) + ", γ=" + gamma + (normalized ? ", normalised" : "") + "}";
}

// q, k, v random rationals n/m with |n| ≤ 9, 1 ≤ m ≤ 8; ε = 1/7919 when normalised (so no
// denominator + ε is 0 by accident).
inline hla::Problem<ref::rational> rational_hla_problem(const HlaShape& s, bool normalized, const ref::rational& gamma,
                                                         std::uint64_t seed) {
  proofs::RationalSource src(seed, 9, 8);
  hla::Problem<ref::rational> p;
  p.q = src.matrix(s.T, s.d);
  p.k = src.matrix(s.T, s.d);
  p.v = src.matrix(s.T, s.dv);
  p.opt.normalized = normalized;
  p.opt.eps = normalized ? ref::rational(1, 7919) : ref::rational(0);
  p.opt.gamma = gamma;
  return p;
}

// q, k entries N(0, 1/d) (so q·k = O(1)), v N(0, 1), in double and then exactly in S; ε = 1e-6.
template <class S>
hla::Problem<S> numeric_hla_problem(const HlaShape& s, bool normalized, double gamma, std::uint64_t seed) {
  Rng rng(seed);
  const double sigma = 1.0 / std::sqrt(static_cast<double>(s.d));
  hla::Problem<S> p;
  p.q = ref::cast_matrix<S>(gaussian(rng, s.T, s.d, sigma));
  p.k = ref::cast_matrix<S>(gaussian(rng, s.T, s.d, sigma));
  p.v = ref::cast_matrix<S>(gaussian(rng, s.T, s.dv, 1.0));
  p.opt.normalized = normalized;
  p.opt.eps = normalized ? ref::from_double<S>(1e-6) : S(0);
  p.opt.gamma = ref::from_double<S>(gamma);
  return p;
}

}  // namespace larc::props
