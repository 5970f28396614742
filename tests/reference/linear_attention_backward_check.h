// What the linear_attention_backward_* tests share: seeded cotangents and input tangents, and the two
// sides of the dot-product (duality) test of the adjoint (docs/gradients.md, "How the adjoint is checked"):
//
//     ⟨do, ȯ⟩ + ⟨dS_T, Ṡ_T⟩ + ⟨dz_T, ż_T⟩   ((ȯ, Ṡ_T, ż_T) = J·δ from serial over Dual<S>)
//   = Σ_x ⟨∇_x L, δx⟩                       (∇L = Jᵀ·(do, dS_T, dz_T) from backward)
//
// for a tangent δ of every input (q, k, v, S_0, z_0). Problems come from linear_attention_cases.h.
#pragma once

#include <cstdint>
#include <string>

#include "backward_duality.h"
#include "larc/proofs_check/exact.h"
#include "larc/reference/dual.h"
#include "larc/reference/linear_attention_backward.h"
#include "linear_attention_cases.h"

namespace larc::testing::backward_checks {

namespace la = larc::ref::linear_attention;
using larc::ref::Mat;
using larc::ref::rational;
using larc::ref::Vec;

// A tangent of the inputs (q, k, v, S_0, z_0) has the gradients' shapes.
template <class S>
using LaInputTangent = la::Gradients<S>;

// Random rationals n/d, |n| ≤ 9, d ≤ 8, for the cotangents the seeds ask for (dht seeds dS_T and dz_T).
inline la::Cotangents<rational> make_la_cotangents(const LaShape& s, Seeds w, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  la::Cotangents<rational> c;
  if (w != Seeds::d_final_state) c.d_o = src.matrix(s.T, s.dv);
  if (w != Seeds::d_o) {
    c.d_final_state = src.matrix(s.dk, s.dv);
    c.d_final_normalizer = src.vector(s.dk);
  }
  return c;
}

inline LaInputTangent<rational> make_la_tangent(const LaShape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  return {src.matrix(s.T, s.dk), src.matrix(s.T, s.dk), src.matrix(s.T, s.dv), src.matrix(s.dk, s.dv), src.vector(s.dk)};
}

template <class To, class From>
la::Cotangents<To> cast_la_cotangents(const la::Cotangents<From>& c) {
  la::Cotangents<To> r{larc::ref::cast_matrix<To>(c.d_o), {}, {}};
  if (c.d_final_state) r.d_final_state = larc::ref::cast_matrix<To>(*c.d_final_state);
  if (c.d_final_normalizer) r.d_final_normalizer = larc::ref::cast_vector<To>(*c.d_final_normalizer);
  return r;
}

template <class To, class From>
LaInputTangent<To> cast_la_tangent(const LaInputTangent<From>& d) {
  using larc::ref::cast_matrix;
  return {cast_matrix<To>(d.dq), cast_matrix<To>(d.dk), cast_matrix<To>(d.dv), cast_matrix<To>(d.d_initial_state),
          larc::ref::cast_vector<To>(d.d_initial_normalizer)};
}

// J·δ: the tangents of the outputs and of the final memory, from serial over duals. The initial memory
// is perturbed even when the problem has none (then S_0 = 0 + δS_0 ε, z_0 = 0 + δz_0 ε).
template <class S>
la::Result<S> la_output_tangents(const la::Problem<S>& p, const LaInputTangent<S>& d) {
  using D = larc::ref::Dual<S>;
  using larc::ref::with_tangent;
  const la::Memory<S> m0 = la::start_memory(p);
  la::Problem<D> pd{with_tangent(p.q, d.dq),
                    with_tangent(p.k, d.dk),
                    with_tangent(p.v, d.dv),
                    {p.opt.feature, p.opt.ratio, D(p.opt.eps), D(p.opt.scale)},
                    with_tangent(m0.s, d.d_initial_state),
                    with_tangent(m0.z, d.d_initial_normalizer)};
  const la::Result<D> r = la::serial(pd);
  return {larc::ref::tangents_of(r.o), {larc::ref::tangents_of(r.final_memory.s), larc::ref::tangents_of(r.final_memory.z)}};
}

// ⟨do, o⟩ + ⟨dS_T, S_T⟩ + ⟨dz_T, z_T⟩ of a result, or of its tangents: the loss L, or ⟨cotangents, J·δ⟩.
template <class S>
Pairing<S> la_cotangent_pairing(const la::Cotangents<S>& cot, const la::Result<S>& r) {
  Pairing<S> p;
  p.add(cot.d_o, r.o);
  if (cot.d_final_state) p.add(*cot.d_final_state, r.final_memory.s);
  if (cot.d_final_normalizer) p.add(*cot.d_final_normalizer, r.final_memory.z);
  return p;
}

// Σ_x ⟨∇_x L, δx⟩
template <class S>
Pairing<S> la_input_pairing(const la::Gradients<S>& g, const LaInputTangent<S>& d) {
  Pairing<S> p;
  p.add(g.dq, d.dq);
  p.add(g.dk, d.dk);
  p.add(g.dv, d.dv);
  p.add(g.d_initial_state, d.d_initial_state);
  p.add(g.d_initial_normalizer, d.d_initial_normalizer);
  return p;
}

}  // namespace larc::testing::backward_checks
