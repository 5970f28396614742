// Seeded VLA problems (SPEC §1) shared by the vla_* tests, and the tolerance bound of the affine stage.
// Inputs are drawn in double (held exactly by every wider rung) and cast to the scalar under test.
//
// bound(): serial and the other forms of the affine stage S_t = S_0 F_{1..t} + Σ_s v_s α̂_s^T F_{s+1..t}
// (F_t = I − k̂_t α̂_t^T) differ by rounding only. Every term is bounded by G (‖S_0‖_F + Σ_s ‖v_s‖ ‖α̂_s‖) with
// G = Π_r max(1, ‖F_r‖₂), and each is formed by at most T + d_k rounded operations, so two forms differ by at
// most c (T + d_k) u M_S per state entry with M_S = G (‖S_0‖_F + Σ_s ‖v_s‖ ‖α̂_s‖); outputs multiply by
// max_t ‖φ(q_t)‖₁ / den_t (ratio) or scale ‖φ(q_t)‖₁ (plain). c = 4. ‖F_r‖₂ is computed by Eigen's JacobiSVD
// in double.
#pragma once

#include <Eigen/SVD>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "larc/properties/generators.h"
#include "larc/reference/vla.h"

namespace larc::testing::vla_cases {

namespace vla = larc::ref::vla;
using namespace larc::ref;

struct Variant {
  const char* name;
  double lambda0;
  int nudge_period;
  vla::FeatureMap feature;
  bool ratio, normalize;
};

// Raw keys, queries N(0, 1), values N(0, 1); the authors' penalty directions with W_u ~ N(0, 1/d_k).
inline vla::Problem<double> make_problem(const Variant& var, Eigen::Index T, Eigen::Index dk, Eigen::Index dv,
                                         bool init, std::uint64_t seed) {
  larc::props::Rng rng(seed);
  vla::Problem<double> p;
  p.q = larc::props::gaussian(rng, T, dk, 1.0);
  // Unnormalised writes: small keys (‖k‖² ≈ 0.5) so that I − k (A k)^T stays a contraction over T = 300.
  p.k = larc::props::gaussian(rng, T, dk, var.normalize ? 1.0 : 0.7 / std::sqrt(double(dk)));
  p.v = larc::props::gaussian(rng, T, dv, 1.0);
  p.u = vla::authors_penalty_directions<double>(p.k, larc::props::gaussian(rng, dk, dk, 1 / std::sqrt(double(dk))));
  p.opt.lambda0 = var.lambda0;
  p.opt.nudge_period = var.nudge_period;
  p.opt.feature = var.feature;
  p.opt.ratio = var.ratio;
  p.opt.normalize = var.normalize;
  p.opt.scale = 1 / std::sqrt(double(dk));
  if (init) {  // what 7 earlier tokens would have left
    vla::Problem<double> pre = make_problem(var, 7, dk, dv, false, seed + 1);
    p.initial = vla::serial(pre).final_memory;
  }
  return p;
}

template <class S>
vla::Problem<S> cast(const vla::Problem<double>& p) {
  vla::Problem<S> r{cast_matrix<S>(p.q), cast_matrix<S>(p.k), cast_matrix<S>(p.v), cast_matrix<S>(p.u), {}, {}};
  r.opt = {from_double<S>(p.opt.lambda0), from_double<S>(p.opt.stab_eps), p.opt.nudge_period,
           from_double<S>(p.opt.nudge_eps), p.opt.feature, p.opt.ratio, from_double<S>(p.opt.scale), p.opt.normalize};
  if (p.initial)
    r.initial = vla::Memory<S>{cast_matrix<S>(p.initial->s), cast_matrix<S>(p.initial->a), cast_vector<S>(p.initial->zeta),
                               p.initial->tokens};
  return r;
}

struct Bound {
  double state, output;
};

// max_t ‖φ(q_t)‖₁ / den_t (ratio read) or scale ‖φ(q_t)‖₁ (plain read): what a read multiplies a state error by.
inline double read_factor(const vla::Problem<double>& p) {
  double read = 0;
  Vec<double> zeta = vla::start_memory(p).zeta;
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    zeta += vla::feature(p.opt.feature, Vec<double>(p.k.row(t).transpose()));
    const Vec<double> fq = vla::feature(p.opt.feature, Vec<double>(p.q.row(t).transpose()));
    read = std::max(read, p.opt.ratio ? fq.cwiseAbs().sum() / std::max(zeta.dot(fq), p.opt.stab_eps)
                                      : p.opt.scale * fq.cwiseAbs().sum());
  }
  return read;
}

inline Bound bound(const vla::Problem<double>& p) {
  const vla::Writes<double> w = vla::writes(p);
  double growth = 1, terms = vla::start_memory(p).s.norm();
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    const Mat<double> f = Mat<double>::Identity(p.dk(), p.dk()) - w.khat.row(t).transpose() * w.alpha_hat.row(t);
    growth *= std::max(1.0, Eigen::JacobiSVD<Mat<double>>(f).singularValues()(0));
    terms += p.v.row(t).norm() * w.alpha_hat.row(t).norm();
  }
  const double state = 4.0 * double(p.T() + p.dk()) * growth * terms;
  return {state, state * read_factor(p)};
}

}  // namespace larc::testing::vla_cases
