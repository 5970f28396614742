// The proofs_check harness: random exact inputs for polynomial identities (Schwartz–Zippel: a false
// identity fails at a random rational point with high probability) and residual reporting.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "larc/reference/types.h"

namespace larc::proofs {

using larc::ref::Mat;
using larc::ref::rational;
using larc::ref::Vec;

// The numeric rung of proofs_check (DESIGN.md: "checked exactly or at 200+ bits"): 80 decimal
// digits, about 266 bits, for statements that involve √, exp or data that is not rational.
using Wide = larc::ref::mpfr80;

// Deterministic source of random rationals num/den with |num| ≤ max_num, 1 ≤ den ≤ max_den.
class RationalSource {
 public:
  explicit RationalSource(std::uint64_t seed, std::int64_t max_num = 97, std::int64_t max_den = 64)
      : rng_(seed), num_(-max_num, max_num), den_(1, max_den) {}

  rational next() { return rational(num_(rng_)) / rational(den_(rng_)); }
  // In (0, 1]: for gates (decays, relaxation factors).
  rational unit_interval() {
    std::int64_t d = den_(rng_) + 1;
    std::uniform_int_distribution<std::int64_t> n(1, d);
    return rational(n(rng_)) / rational(d);
  }
  Mat<rational> matrix(Eigen::Index r, Eigen::Index c) {
    Mat<rational> m(r, c);
    for (Eigen::Index i = 0; i < r; ++i)
      for (Eigen::Index j = 0; j < c; ++j) m(i, j) = next();
    return m;
  }
  Vec<rational> vector(Eigen::Index n) { return matrix(n, 1); }
  // An exact unit vector in Q^d by inverse stereographic projection of a random y ∈ Q^{d−1}:
  // x = (2y, ‖y‖² − 1) / (‖y‖² + 1), so ‖x‖² = 1 exactly (DESIGN.md "Rational unit vectors").
  Vec<rational> unit_vector(Eigen::Index d);
  // A nonzero vector (redrawn until nonzero).
  Vec<rational> nonzero_vector(Eigen::Index d);

 private:
  std::mt19937_64 rng_;
  std::uniform_int_distribution<std::int64_t> num_, den_;
};

// Largest |entry| of a rational matrix, as an exact rational (0 means the identity holds exactly).
rational max_abs(const Mat<rational>& m);

// "exact (residual 0)" or "residual 3/17" — for evidence strings.
std::string describe_residual(const rational& r);

}  // namespace larc::proofs
