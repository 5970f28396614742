// What the gla_backward_* tests share: seeded rational GLA problems and input tangents, and the two
// sides of the dot-product (duality) test of the adjoint (docs/gradients.md, "How the adjoint is checked"):
//
//     ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩   (ȯ, Ṡ_T = J·δ from serial over Dual<S>)
//   = Σ_x ⟨∇_x L, δx⟩        (∇L = Jᵀ·(do, dht) from backward)
//
// for a tangent δ of every input (q, k, v, a, S_0). GLA's cotangents are the delta rule's, so their
// seeding, casting and pairing come from delta_rule_backward_check.h.
#pragma once

#include <cstdint>

#include "delta_rule_backward_check.h"
#include "larc/reference/gla_backward.h"

namespace larc::testing::backward_checks {

namespace gla = larc::ref::gla;

// A tangent of the inputs (q, k, v, a, S_0) has the gradients' shapes.
template <class S>
using GlaInputTangent = gla::Gradients<S>;

// Random rationals n/d, |n| ≤ 9, d ≤ 8; decays a in (0, 1]; scale 1/2.
inline gla::Problem<rational> make_gla_rational_problem(const Shape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  gla::Problem<rational> p{src.matrix(s.T, s.dk), src.matrix(s.T, s.dk), src.matrix(s.T, s.dv),
                           Mat<rational>(s.T, s.dk), rational(1, 2), {}};
  for (Eigen::Index t = 0; t < s.T; ++t)
    for (Eigen::Index i = 0; i < s.dk; ++i) p.a(t, i) = src.unit_interval();
  if (s.initial_state) p.initial_state = src.matrix(s.dk, s.dv);
  return p;
}

inline GlaInputTangent<rational> make_gla_tangent(const Shape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  return {src.matrix(s.T, s.dk), src.matrix(s.T, s.dk), src.matrix(s.T, s.dv), src.matrix(s.T, s.dk), src.matrix(s.dk, s.dv)};
}

template <class To, class From>
gla::Problem<To> cast_gla_problem(const gla::Problem<From>& p) {
  using larc::ref::cast_matrix;
  gla::Problem<To> r{cast_matrix<To>(p.q), cast_matrix<To>(p.k), cast_matrix<To>(p.v), cast_matrix<To>(p.a),
                     larc::ref::convert<To>(p.scale), {}};
  if (p.initial_state) r.initial_state = cast_matrix<To>(*p.initial_state);
  return r;
}

template <class To, class From>
GlaInputTangent<To> cast_gla_tangent(const GlaInputTangent<From>& d) {
  using larc::ref::cast_matrix;
  return {cast_matrix<To>(d.dq), cast_matrix<To>(d.dk), cast_matrix<To>(d.dv), cast_matrix<To>(d.da),
          cast_matrix<To>(d.d_initial_state)};
}

// The problem x + δ ε over duals. S_0 is perturbed even when the problem has none (then S_0 = 0 + δS_0 ε).
template <class S>
gla::Problem<larc::ref::Dual<S>> gla_dual_problem(const gla::Problem<S>& p, const GlaInputTangent<S>& d) {
  using D = larc::ref::Dual<S>;
  using larc::ref::with_tangent;
  return {with_tangent(p.q, d.dq), with_tangent(p.k, d.dk), with_tangent(p.v, d.dv),
          with_tangent(p.a, d.da), D(p.scale), with_tangent(p.start_state(), d.d_initial_state)};
}

// J·δ: the tangents of the outputs and of the final state, from serial over duals.
template <class S>
larc::ref::SeqResult<S> gla_output_tangents(const gla::Problem<S>& p, const GlaInputTangent<S>& d) {
  const larc::ref::SeqResult<larc::ref::Dual<S>> r = gla::serial(gla_dual_problem(p, d));
  return {larc::ref::tangents_of(r.o), larc::ref::tangents_of(r.final_state)};
}

// Σ_x ⟨∇_x L, δx⟩
template <class S>
Pairing<S> gla_input_pairing(const gla::Gradients<S>& g, const GlaInputTangent<S>& d) {
  Pairing<S> p;
  p.add(g.dq, d.dq);
  p.add(g.dk, d.dk);
  p.add(g.dv, d.dv);
  p.add(g.da, d.da);
  p.add(g.d_initial_state, d.d_initial_state);
  return p;
}

}  // namespace larc::testing::backward_checks
