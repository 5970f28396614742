// What the vla_backward_* tests share: seeded rational VLA problems, tangents and cotangents, and the
// two sides of the dot-product (duality) test (docs/gradients.md, "How the adjoint is checked"):
//
//     ⟨do, ȯ⟩ + ⟨dS_T, Ṡ_T⟩ + ⟨dA_T, Ȧ_T⟩ + dζ_T·ζ̇_T     (J·δ from vla::serial over Dual<S>)
//   = Σ_x ⟨∇_x L, δx⟩                               (∇L from vla::backward)
//
// for a tangent δ of every input: q, k, v, u, λ0 and the initial memory (S_0, A_0, ζ_0; without an
// initial memory it is perturbed from the empty one, A_0 = I/λ0, so λ0 and δA_0 both reach A_0).
#pragma once

#include <cstdint>
#include <string>

#include "backward_duality.h"
#include "larc/proofs_check/exact.h"
#include "larc/reference/dual.h"
#include "larc/reference/vla_backward.h"

namespace larc::testing::backward_checks {

namespace vla = larc::ref::vla;
using larc::ref::Mat;
using larc::ref::rational;
using larc::ref::Vec;

struct VlaShape {
  Eigen::Index T = 1, dk = 1, dv = 1;
  bool ratio = true;
  bool initial = false;    // an initial memory (what 3 earlier tokens left)
  bool nudge = false;      // nudge period 2
  bool normalize = false;  // exact runs only without the normalisations
  vla::FeatureMap feature = vla::FeatureMap::identity;

  std::string describe() const {
    return "T=" + std::to_string(T) + " dk=" + std::to_string(dk) + " dv=" + std::to_string(dv) +
           (ratio ? " ratio" : " plain") + (initial ? " with initial memory" : " empty start") + (nudge ? " nudged" : "") +
           (normalize ? " normalised" : " unnormalised") +
           (feature == vla::FeatureMap::identity ? " identity features" : " elu+1 features");
  }
};

// Random rationals n/d, |n| ≤ 9, d ≤ 8 (q and k positive for the ratio read, so that most denominators
// ζ·φ(q) are above the floor); λ0 in (0, 1]; stab_eps = 1/10000; nudge 1/1000 every 2 tokens; scale 1/2.
inline vla::Problem<rational> make_vla_rational_problem(const VlaShape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  vla::Problem<rational> p;
  p.q = src.matrix(s.T, s.dk);
  p.k = src.matrix(s.T, s.dk);
  if (s.ratio) {
    p.q = p.q.cwiseAbs();
    p.k = p.k.cwiseAbs();
  }
  p.v = src.matrix(s.T, s.dv);
  p.u = src.matrix(s.T, s.dk);
  p.opt.lambda0 = src.unit_interval();
  p.opt.stab_eps = rational(1, 10000);
  p.opt.nudge_period = s.nudge ? 2 : 0;
  p.opt.nudge_eps = rational(1, 1000);
  p.opt.feature = s.feature;
  p.opt.ratio = s.ratio;
  p.opt.scale = rational(1, 2);
  p.opt.normalize = s.normalize;
  if (s.initial) {
    VlaShape before = s;
    before.T = 3;
    before.initial = false;
    p.initial = vla::serial(make_vla_rational_problem(before, seed + 100)).final_memory;
  }
  return p;
}

// A tangent of every input has the gradients' shapes.
template <class S>
using VlaTangent = vla::Gradients<S>;

inline VlaTangent<rational> make_vla_tangent(const VlaShape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  VlaTangent<rational> d{src.matrix(s.T, s.dk), src.matrix(s.T, s.dk), src.matrix(s.T, s.dv), src.matrix(s.T, s.dk),
                         src.next(), {}};
  d.d_initial = vla::Memory<rational>{src.matrix(s.dk, s.dv), src.matrix(s.dk, s.dk), src.vector(s.dk), 0};
  return d;
}

inline vla::Cotangents<rational> make_vla_cotangents(const VlaShape& s, Seeds w, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  vla::Cotangents<rational> c;
  if (w != Seeds::d_final_state) c.d_o = src.matrix(s.T, s.dv);
  if (w != Seeds::d_o) {
    c.d_final_state = src.matrix(s.dk, s.dv);
    c.d_final_penalty = src.matrix(s.dk, s.dk);
    c.d_final_normalizer = src.vector(s.dk);
  }
  return c;
}

template <class To, class From>
vla::Options<To> cast_vla_options(const vla::Options<From>& o) {
  using larc::ref::convert;
  return {convert<To>(o.lambda0), convert<To>(o.stab_eps), o.nudge_period, convert<To>(o.nudge_eps),
          o.feature,              o.ratio,                 convert<To>(o.scale), o.normalize};
}

template <class To, class From>
vla::Memory<To> cast_vla_memory(const vla::Memory<From>& m) {
  return {larc::ref::cast_matrix<To>(m.s), larc::ref::cast_matrix<To>(m.a), larc::ref::cast_vector<To>(m.zeta), m.tokens};
}

template <class To, class From>
vla::Problem<To> cast_vla_problem(const vla::Problem<From>& p) {
  using larc::ref::cast_matrix;
  vla::Problem<To> r{cast_matrix<To>(p.q), cast_matrix<To>(p.k), cast_matrix<To>(p.v), cast_matrix<To>(p.u),
                     cast_vla_options<To>(p.opt), {}};
  if (p.initial) r.initial = cast_vla_memory<To>(*p.initial);
  return r;
}

template <class To, class From>
VlaTangent<To> cast_vla_tangent(const VlaTangent<From>& d) {
  using larc::ref::cast_matrix;
  return {cast_matrix<To>(d.dq), cast_matrix<To>(d.dk), cast_matrix<To>(d.dv), cast_matrix<To>(d.du),
          larc::ref::convert<To>(d.dlambda0), cast_vla_memory<To>(d.d_initial)};
}

template <class To, class From>
vla::Cotangents<To> cast_vla_cotangents(const vla::Cotangents<From>& c) {
  vla::Cotangents<To> r{larc::ref::cast_matrix<To>(c.d_o), {}, {}, {}};
  if (c.d_final_state) r.d_final_state = larc::ref::cast_matrix<To>(*c.d_final_state);
  if (c.d_final_penalty) r.d_final_penalty = larc::ref::cast_matrix<To>(*c.d_final_penalty);
  if (c.d_final_normalizer) r.d_final_normalizer = larc::ref::cast_vector<To>(*c.d_final_normalizer);
  return r;
}

// J·δ: the tangents of the outputs and the final memory, from serial over duals.
template <class S>
vla::Result<S> vla_output_tangents(const vla::Problem<S>& p, const VlaTangent<S>& d) {
  using D = larc::ref::Dual<S>;
  using larc::ref::with_tangent;
  const vla::Options<S>& o = p.opt;
  vla::Problem<D> pd{with_tangent(p.q, d.dq), with_tangent(p.k, d.dk), with_tangent(p.v, d.dv), with_tangent(p.u, d.du),
                     {D(o.lambda0, d.dlambda0), D(o.stab_eps), o.nudge_period, D(o.nudge_eps), o.feature, o.ratio,
                      D(o.scale), o.normalize},
                     {}};
  const Eigen::Index K = p.dk(), V = p.dv();
  if (p.initial) {
    pd.initial = vla::Memory<D>{with_tangent(p.initial->s, d.d_initial.s), with_tangent(p.initial->a, d.d_initial.a),
                                with_tangent(p.initial->zeta, d.d_initial.zeta), p.initial->tokens};
  } else {  // the empty memory, A_0 = I/λ0 over duals, moved by δ
    pd.initial = vla::Memory<D>{with_tangent(Mat<S>(Mat<S>::Zero(K, V)), d.d_initial.s),
                                Mat<D>(Mat<D>::Identity(K, K) / pd.opt.lambda0 +
                                       with_tangent(Mat<S>(Mat<S>::Zero(K, K)), d.d_initial.a)),
                                with_tangent(Vec<S>(Vec<S>::Zero(K)), d.d_initial.zeta), 0};
  }
  const vla::Result<D> r = vla::serial(pd);
  using larc::ref::tangents_of;
  return {tangents_of(r.o), vla::Memory<S>{tangents_of(r.final_memory.s), tangents_of(r.final_memory.a),
                                           tangents_of(r.final_memory.zeta), r.final_memory.tokens}};
}

// ⟨do, ȯ⟩ + the final memory's pairing
template <class S>
Pairing<S> vla_cotangent_pairing(const vla::Cotangents<S>& c, const vla::Result<S>& tangents) {
  Pairing<S> r;
  r.add(c.d_o, tangents.o);
  if (c.d_final_state) r.add(*c.d_final_state, tangents.final_memory.s);
  if (c.d_final_penalty) r.add(*c.d_final_penalty, tangents.final_memory.a);
  if (c.d_final_normalizer) r.add(*c.d_final_normalizer, tangents.final_memory.zeta);
  return r;
}

// Σ_x ⟨∇_x L, δx⟩ (λ0 pairs only when there is no initial memory: otherwise it is not read).
template <class S>
Pairing<S> vla_input_pairing(const vla::Gradients<S>& g, const VlaTangent<S>& d) {
  Pairing<S> r;
  r.add(g.dq, d.dq);
  r.add(g.dk, d.dk);
  r.add(g.dv, d.dv);
  r.add(g.du, d.du);
  r.add(Vec<S>::Constant(1, g.dlambda0), Vec<S>::Constant(1, d.dlambda0));
  r.add(g.d_initial.s, d.d_initial.s);
  r.add(g.d_initial.a, d.d_initial.a);
  r.add(g.d_initial.zeta, d.d_initial.zeta);
  return r;
}

}  // namespace larc::testing::backward_checks
