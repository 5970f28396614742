// What the hla_backward_* tests share: the four recurrences with an adjoint (second order unmasked,
// masked, masked as printed; AHLA), seeded rational problems, tangents and cotangents, and the two
// sides of the dot-product (duality) test (docs/gradients.md, "How the adjoint is checked"):
//
//     ⟨do, ȯ⟩ + ⟨dden, ḋen⟩      (J·δ from the serial form over Dual<S>)
//   = Σ_x ⟨∇_x L, δx⟩           (∇L = Jᵀ·(do, dden) from the backward verb)
//
// for a tangent δ of every input (q, k, v, γ, and the initial summaries when the problem has them).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "backward_duality.h"
#include "larc/proofs_check/exact.h"
#include "larc/reference/dual.h"
#include "larc/reference/hla_backward.h"

namespace larc::testing::backward_checks {

namespace hla = larc::ref::hla;
using larc::ref::Mat;
using larc::ref::rational;
using larc::ref::Vec;

enum class HlaRecurrence { second_unmasked, second_masked, second_masked_as_printed, ahla };

inline std::string hla_recurrence_name(HlaRecurrence r) {
  switch (r) {
    case HlaRecurrence::second_unmasked: return "second_unmasked";
    case HlaRecurrence::second_masked: return "second_masked";
    case HlaRecurrence::second_masked_as_printed: return "second_masked_as_printed";
    case HlaRecurrence::ahla: return "ahla";
  }
  return "?";
}

// gtest prints test parameters through this (found by argument-dependent lookup).
inline void PrintTo(HlaRecurrence r, std::ostream* os) { *os << hla_recurrence_name(r); }

inline constexpr HlaRecurrence kHlaRecurrences[] = {HlaRecurrence::second_unmasked, HlaRecurrence::second_masked,
                                                    HlaRecurrence::second_masked_as_printed, HlaRecurrence::ahla};

inline hla::SecondOrder second_order_of(HlaRecurrence r) {
  return r == HlaRecurrence::second_unmasked ? hla::SecondOrder::unmasked
         : r == HlaRecurrence::second_masked ? hla::SecondOrder::masked
                                             : hla::SecondOrder::masked_as_printed;
}

template <class S>
hla::Result<S> hla_serial(HlaRecurrence r, const hla::Problem<S>& p) {
  return r == HlaRecurrence::ahla ? hla::ahla_serial(p) : hla::second_serial(p, second_order_of(r));
}

template <class S>
hla::Gradients<S> hla_backward(HlaRecurrence r, const hla::Problem<S>& p, const hla::Cotangents<S>& c,
                               Eigen::Index checkpoint) {
  return r == HlaRecurrence::ahla ? hla::ahla_backward(p, c, checkpoint)
                                  : hla::second_backward(p, second_order_of(r), c, checkpoint);
}

// The adjoint of the materialised form (none for the printed decay, which has no such form).
template <class S>
hla::Gradients<S> hla_materialized_backward(HlaRecurrence r, const hla::Problem<S>& p, const hla::Cotangents<S>& c) {
  return r == HlaRecurrence::ahla ? hla::ahla_materialized_backward(p, c)
                                  : hla::second_materialized_backward(p, second_order_of(r), c);
}

struct HlaShape {
  Eigen::Index T = 1, d = 1, dv = 1;
  bool normalized = false;
  bool decay = false;  // γ < 1

  std::string describe() const {
    return "T=" + std::to_string(T) + " d=" + std::to_string(d) + " dv=" + std::to_string(dv) +
           (normalized ? " normalised" : " plain") + (decay ? " gamma<1" : " gamma=1");
  }
};

// Random rationals n/d, |n| ≤ 9, d ≤ 8; γ in (0, 1) when decay (else 1); ε = 1/1009 when normalised:
// every denominator's prime factors are ≤ 7, so den_t + ε is never 0.
inline hla::Problem<rational> make_hla_rational_problem(const HlaShape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  hla::Problem<rational> p{src.matrix(s.T, s.d), src.matrix(s.T, s.d), src.matrix(s.T, s.dv), {}};
  p.opt.normalized = s.normalized;
  if (s.normalized) p.opt.eps = rational(1, 1009);
  if (s.decay) {
    p.opt.gamma = src.unit_interval();
    if (p.opt.gamma == rational(1)) p.opt.gamma = rational(3, 4);
  }
  return p;
}

// Random rational initial summaries of recurrence r's family (d×d and d×w, w = value_width).
inline void add_initial_summaries(HlaRecurrence r, hla::Problem<rational>& p, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  const Eigen::Index d = p.dk(), w = hla::value_width(p.opt, p.dv());
  if (r == HlaRecurrence::ahla) p.ahla_initial = hla::AhlaMemory<rational>{src.matrix(d, w), src.matrix(d, w)};
  else p.second_order_initial = hla::SecondOrderMemory<rational>{src.matrix(d, d), src.matrix(d, w), src.matrix(d, w)};
}

// A tangent of (q, k, v, γ, the initial summaries) has the gradients' shapes.
template <class S>
using HlaTangent = hla::Gradients<S>;

// A random tangent of p's initial summaries, in the same slots.
inline void add_initial_tangent(const hla::Problem<rational>& p, HlaTangent<rational>& d, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  if (const auto& m = p.second_order_initial)
    d.d_second_order_initial = hla::SecondOrderMemory<rational>{src.matrix(m->sk.rows(), m->sk.cols()),
                                                                src.matrix(m->c.rows(), m->c.cols()),
                                                                src.matrix(m->g.rows(), m->g.cols())};
  if (const auto& m = p.ahla_initial)
    d.d_ahla_initial = hla::AhlaMemory<rational>{src.matrix(m->p.rows(), m->p.cols()), src.matrix(m->e.rows(), m->e.cols())};
}

inline HlaTangent<rational> make_hla_tangent(const HlaShape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  return {src.matrix(s.T, s.d), src.matrix(s.T, s.d), src.matrix(s.T, s.dv), src.next()};
}

// do always; dden too for the normalised variants when with_d_den.
inline hla::Cotangents<rational> make_hla_cotangents(const HlaShape& s, std::uint64_t seed, bool with_d_den = true) {
  larc::proofs::RationalSource src(seed, 9, 8);
  hla::Cotangents<rational> c{src.matrix(s.T, s.dv), {}};
  if (s.normalized && with_d_den) c.d_den = src.vector(s.T);
  return c;
}

template <class To, class From>
hla::Problem<To> cast_hla_problem(const hla::Problem<From>& p) {
  using larc::ref::cast_matrix;
  using larc::ref::convert;
  return {cast_matrix<To>(p.q), cast_matrix<To>(p.k), cast_matrix<To>(p.v),
          {p.opt.normalized, convert<To>(p.opt.eps), convert<To>(p.opt.gamma)}};
}

template <class To, class From>
HlaTangent<To> cast_hla_tangent(const HlaTangent<From>& d) {
  using larc::ref::cast_matrix;
  return {cast_matrix<To>(d.dq), cast_matrix<To>(d.dk), cast_matrix<To>(d.dv), larc::ref::convert<To>(d.dgamma)};
}

template <class To, class From>
hla::Cotangents<To> cast_hla_cotangents(const hla::Cotangents<From>& c) {
  hla::Cotangents<To> r{larc::ref::cast_matrix<To>(c.d_o), {}};
  if (c.d_den) r.d_den = larc::ref::cast_vector<To>(*c.d_den);
  return r;
}

// J·δ: the tangents of the outputs and denominators, from the serial form over duals.
template <class S>
hla::Result<S> hla_output_tangents(HlaRecurrence r, const hla::Problem<S>& p, const HlaTangent<S>& d) {
  using D = larc::ref::Dual<S>;
  using larc::ref::with_tangent;
  hla::Problem<D> pd{with_tangent(p.q, d.dq), with_tangent(p.k, d.dk), with_tangent(p.v, d.dv),
                     {p.opt.normalized, D(p.opt.eps), D(p.opt.gamma, d.dgamma)}};
  if (const auto& m = p.second_order_initial)
    pd.second_order_initial = hla::SecondOrderMemory<D>{with_tangent(m->sk, d.d_second_order_initial->sk),
                                                        with_tangent(m->c, d.d_second_order_initial->c),
                                                        with_tangent(m->g, d.d_second_order_initial->g)};
  if (const auto& m = p.ahla_initial)
    pd.ahla_initial = hla::AhlaMemory<D>{with_tangent(m->p, d.d_ahla_initial->p), with_tangent(m->e, d.d_ahla_initial->e)};
  const hla::Result<D> res = hla_serial(r, pd);
  return {larc::ref::tangents_of(res.o), larc::ref::tangents_of(res.den)};
}

// ⟨do, ȯ⟩ + ⟨dden, ḋen⟩
template <class S>
Pairing<S> hla_cotangent_pairing(const hla::Cotangents<S>& c, const hla::Result<S>& tangents) {
  Pairing<S> p;
  p.add(c.d_o, tangents.o);
  if (c.d_den) p.add(*c.d_den, tangents.den);
  return p;
}

// Σ_x ⟨∇_x L, δx⟩
template <class S>
Pairing<S> hla_input_pairing(const hla::Gradients<S>& g, const HlaTangent<S>& d) {
  Pairing<S> p;
  p.add(g.dq, d.dq);
  p.add(g.dk, d.dk);
  p.add(g.dv, d.dv);
  p.add(Vec<S>::Constant(1, g.dgamma), Vec<S>::Constant(1, d.dgamma));
  if (g.d_second_order_initial && d.d_second_order_initial) {
    p.add(g.d_second_order_initial->sk, d.d_second_order_initial->sk);
    p.add(g.d_second_order_initial->c, d.d_second_order_initial->c);
    p.add(g.d_second_order_initial->g, d.d_second_order_initial->g);
  }
  if (g.d_ahla_initial && d.d_ahla_initial) {
    p.add(g.d_ahla_initial->p, d.d_ahla_initial->p);
    p.add(g.d_ahla_initial->e, d.d_ahla_initial->e);
  }
  return p;
}

}  // namespace larc::testing::backward_checks
