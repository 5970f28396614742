#include "larc/properties/generators.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace larc::props {

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2 * std::numbers::pi * u2);
}

double Rng::student_t3() {
  const double z = normal();
  double chi2 = 0;
  for (int i = 0; i < 3; ++i) {
    const double n = normal();
    chi2 += n * n;
  }
  return z / std::sqrt(chi2 / 3.0);
}

std::string key_kind_name(KeyKind k) {
  switch (k) {
    case KeyKind::gaussian: return "gaussian";
    case KeyKind::unit: return "unit";
    case KeyKind::heavy_tailed: return "heavy_tailed";
    case KeyKind::near_collinear: return "near_collinear";
    case KeyKind::tiny_norm: return "tiny_norm";
    case KeyKind::huge_norm: return "huge_norm";
    case KeyKind::orthonormal: return "orthonormal";
  }
  return "?";
}

std::string gate_kind_name(GateKind g) {
  switch (g) {
    case GateKind::moderate: return "moderate";
    case GateKind::beta_one: return "beta_one";
    case GateKind::beta_tiny: return "beta_tiny";
    case GateKind::no_decay: return "no_decay";
    case GateKind::hard_decay: return "hard_decay";
  }
  return "?";
}

Mat<double> gaussian(Rng& rng, Eigen::Index rows, Eigen::Index cols, double sigma) {
  Mat<double> m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) m(i, j) = sigma * rng.normal();
  return m;
}

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

Mat<double> keys(Rng& rng, KeyKind kind, Eigen::Index T, Eigen::Index d) {
  switch (kind) {
    case KeyKind::gaussian: return gaussian(rng, T, d, 1.0 / std::sqrt(double(d)));
    case KeyKind::unit: return unit_rows(rng, T, d);
    case KeyKind::heavy_tailed: {
      Mat<double> m(T, d);
      for (Eigen::Index i = 0; i < T; ++i)
        for (Eigen::Index j = 0; j < d; ++j) m(i, j) = rng.student_t3() / std::sqrt(double(d));
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

std::string DeltaCase::describe() const {
  return "DeltaCase{seed=" + std::to_string(seed) + ", T=" + std::to_string(T) + ", dk=" + std::to_string(dk) +
         ", dv=" + std::to_string(dv) + ", keys=" + key_kind_name(keys) + ", gates=" + gate_kind_name(gates) +
         ", initial_state=" + (with_initial_state ? "yes" : "no") + "}";
}

ref::delta_rule::Problem<double> gdn_problem(const DeltaCase& c) {
  Rng rng(c.seed);
  ref::delta_rule::Problem<double> p;
  p.q = gaussian(rng, c.T, c.dk, 1.0);
  p.k = keys(rng, c.keys, c.T, c.dk);
  p.v = gaussian(rng, c.T, c.dv, 1.0);
  p.alpha = ref::delta_rule::decays_from_log(log_decays(rng, c.gates, c.T));
  p.beta = betas(rng, c.gates, c.T);
  p.scale = 1.0 / std::sqrt(double(c.dk));
  if (c.with_initial_state) p.initial_state = gaussian(rng, c.dk, c.dv, 1.0);
  return p;
}

}  // namespace larc::props
