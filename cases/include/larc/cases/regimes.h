// The input regimes the papers' claims and the gate draw from (DESIGN.md "Randomized inputs"): key
// sets a kernel must survive, gate regimes at their bounds, heavy-tailed entries. Templated on the
// random engine (anything with uniform(), uniform(lo, hi) and normal()): the claims expand their
// RapidCheck cases with their own recorded stream (props::Rng), the gate and the fuzzer with the
// seekable cases::Rng; both get the same regimes from here.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "larc/reference/types.h"

namespace larc::cases {

using ref::Mat;
using ref::Vec;

// Student's t with 3 degrees of freedom: finite variance, heavy tails (kurtosis infinite).
template <class Rng>
double student_t3(Rng& rng) {
  const double z = rng.normal();
  double chi2 = 0;
  for (int i = 0; i < 3; ++i) {
    const double n = rng.normal();
    chi2 += n * n;
  }
  return z / std::sqrt(chi2 / 3.0);
}

template <class Rng>
Mat<double> gaussian(Rng& rng, Eigen::Index rows, Eigen::Index cols, double sigma) {
  Mat<double> m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = sigma * rng.normal();
  return m;
}

// Each row uniform on the unit sphere.
template <class Rng>
Mat<double> unit_rows(Rng& rng, Eigen::Index rows, Eigen::Index cols) {
  Mat<double> m = gaussian(rng, rows, cols, 1.0);
  for (Eigen::Index i = 0; i < rows; ++i) {
    double n = m.row(i).norm();
    while (n == 0) {  // measure-zero, but never divide by it
      for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = rng.normal();
      n = m.row(i).norm();
    }
    m.row(i) /= n;
  }
  return m;
}

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

// T keys of dimension d of the given kind.
template <class Rng>
Mat<double> keys(Rng& rng, KeyKind kind, Eigen::Index T, Eigen::Index d) {
  switch (kind) {
    case KeyKind::gaussian: return gaussian(rng, T, d, 1.0 / std::sqrt(double(d)));
    case KeyKind::unit: return unit_rows(rng, T, d);
    case KeyKind::heavy_tailed: {
      Mat<double> m(T, d);
      for (Eigen::Index i = 0; i < T; ++i)
        for (Eigen::Index j = 0; j < d; ++j) m(i, j) = student_t3(rng) / std::sqrt(double(d));
      return m;
    }
    case KeyKind::near_collinear: {
      const Mat<double> base = unit_rows(rng, 1, d);
      Mat<double> m = base.replicate(T, 1) + gaussian(rng, T, d, 1e-3);
      for (Eigen::Index i = 0; i < T; ++i) m.row(i) /= m.row(i).norm();
      return m;
    }
    case KeyKind::tiny_norm: return 1e-4 * unit_rows(rng, T, d);
    case KeyKind::huge_norm: return 1e3 * unit_rows(rng, T, d);
    case KeyKind::orthonormal: {
      const Mat<double> q = Eigen::HouseholderQR<Mat<double>>(gaussian(rng, d, d, 1.0)).householderQ();
      Mat<double> m(T, d);
      for (Eigen::Index i = 0; i < T; ++i) m.row(i) = q.col(i % d).transpose();
      return m;
    }
  }
  return {};
}

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

template <class Rng>
Vec<double> betas(Rng& rng, GateKind kind, Eigen::Index T) {
  Vec<double> b(T);
  for (Eigen::Index t = 0; t < T; ++t) {
    switch (kind) {
      case GateKind::beta_one: b(t) = 1.0; break;
      case GateKind::beta_tiny: b(t) = 1e-6 * (1.0 - rng.uniform()); break;
      default: b(t) = rng.uniform(0.05, 1.0); break;
    }
  }
  return b;
}

template <class Rng>
Vec<double> log_decays(Rng& rng, GateKind kind, Eigen::Index T) {
  Vec<double> g(T);
  for (Eigen::Index t = 0; t < T; ++t) {
    switch (kind) {
      case GateKind::beta_one:
      case GateKind::no_decay: g(t) = 0.0; break;
      case GateKind::hard_decay:  // every fourth token forgets everything: g = −∞, α = 0
        g(t) = t % 4 == 3 ? -std::numeric_limits<double>::infinity() : rng.uniform(-30.0, -10.0);
        break;
      default: g(t) = rng.uniform(-1.0, 0.0); break;
    }
  }
  return g;
}

}  // namespace larc::cases
