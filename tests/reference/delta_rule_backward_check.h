// What the delta_rule_backward_* tests share: seeded cases of the three mechanisms over rationals,
// the dot-product (duality) test of the adjoint against forward-mode duals, and the pairings it
// compares (docs/gradients.md, "How the adjoint is checked"):
//
//     ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩   (ȯ, Ṡ_T = J·δ from serial over Dual<S>)
//   = Σ_x ⟨∇_x L, δx⟩        (∇L = Jᵀ·(do, dht) from backward and the front ends)
//
// for a random tangent δ of every input (q, k, v, α, β or KLA's η, S_0).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>

#include "backward_duality.h"
#include "delta_rule_mechanisms.h"
#include "larc/proofs_check/exact.h"
#include "larc/reference/delta_rule_backward.h"
#include "larc/reference/dual.h"

namespace larc::testing::backward_checks {

namespace dr = larc::ref::delta_rule;
using larc::testing::Mechanism;
using larc::testing::mechanism_name;
using larc::testing::Shape;
using larc::ref::Mat;
using larc::ref::rational;
using larc::ref::Vec;


// A problem and, for KLA, the relaxation gates η its steps come from (β = η / (‖k‖² + ε)).
template <class S>
struct Case {
  dr::Problem<S> problem;
  std::optional<Vec<S>> eta;
  S eps = S(0);
};

// A tangent of the inputs (q, k, v, α, β or η, S_0) has the gradients' shapes.
template <class S>
using InputTangent = dr::Gradients<S>;


// Rational cases drawn as tests/delta_rule_forms_rational_test.cpp draws them: entries n/d with
// |n| ≤ 9, d ≤ 8; α (GDN, KLA) and β or η in (0, 1]; KLA's ε = 10⁻⁶; scale 1/2. With unit_keys the
// keys of DeltaNet and GDN are exact unit vectors (inverse stereographic projection), so every
// transition is a contraction (β‖k‖² ≤ 1, as KLA's are by construction) and rounded runs stay
// well conditioned.
inline Case<rational> make_rational_case(Mechanism m, const Shape& s, std::uint64_t seed, bool unit_keys = false) {
  larc::proofs::RationalSource src(seed, 9, 8);
  Case<rational> c;
  dr::Problem<rational>& p = c.problem;
  p.q = src.matrix(s.T, s.dk);
  p.k = src.matrix(s.T, s.dk);
  if (unit_keys && m != Mechanism::kla)
    for (Eigen::Index t = 0; t < s.T; ++t) p.k.row(t) = src.unit_vector(s.dk).transpose();
  p.v = src.matrix(s.T, s.dv);
  p.alpha = Vec<rational>::Ones(s.T);
  p.beta = Vec<rational>(s.T);
  for (Eigen::Index t = 0; t < s.T; ++t) {
    if (m != Mechanism::deltanet) p.alpha(t) = src.unit_interval();
    p.beta(t) = src.unit_interval();
  }
  if (m == Mechanism::kla) {
    c.eps = rational(1, 1000000);
    c.eta = p.beta;
    p.beta = dr::kla_beta<rational>(p.k, *c.eta, c.eps);
  }
  p.scale = rational(1, 2);
  if (s.initial_state) p.initial_state = src.matrix(s.dk, s.dv);
  return c;
}

inline dr::Cotangents<rational> make_rational_cotangents(const Shape& s, Seeds w, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  dr::Cotangents<rational> c;
  if (w != Seeds::d_final_state) c.d_o = src.matrix(s.T, s.dv);
  if (w != Seeds::d_o) c.d_final_state = src.matrix(s.dk, s.dv);
  return c;
}

inline InputTangent<rational> make_rational_tangent(const Shape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  return {src.matrix(s.T, s.dk), src.matrix(s.T, s.dk), src.matrix(s.T, s.dv),
          src.vector(s.T),       src.vector(s.T),       src.matrix(s.dk, s.dv)};
}

template <class To, class From>
Case<To> cast_case(const Case<From>& c) {
  using larc::ref::cast_matrix;
  using larc::ref::cast_vector;
  Case<To> r;
  const dr::Problem<From>& p = c.problem;
  r.problem = {cast_matrix<To>(p.q), cast_matrix<To>(p.k), cast_matrix<To>(p.v), cast_vector<To>(p.alpha),
               cast_vector<To>(p.beta), larc::ref::convert<To>(p.scale), {}};
  if (p.initial_state) r.problem.initial_state = cast_matrix<To>(*p.initial_state);
  if (c.eta) {
    r.eps = larc::ref::convert<To>(c.eps);
    r.eta = cast_vector<To>(*c.eta);
    r.problem.beta = dr::kla_beta<To>(r.problem.k, *r.eta, r.eps);  // the case is defined by η
  }
  return r;
}

template <class To, class From>
dr::Gradients<To> cast_gradients(const dr::Gradients<From>& g) {
  using larc::ref::cast_matrix;
  using larc::ref::cast_vector;
  return {cast_matrix<To>(g.dq),        cast_matrix<To>(g.dk),        cast_matrix<To>(g.dv),
          cast_vector<To>(g.dalpha),    cast_vector<To>(g.dbeta),     cast_matrix<To>(g.d_initial_state)};
}

template <class To, class From>
dr::Cotangents<To> cast_cotangents(const dr::Cotangents<From>& c) {
  dr::Cotangents<To> r{larc::ref::cast_matrix<To>(c.d_o), {}};
  if (c.d_final_state) r.d_final_state = larc::ref::cast_matrix<To>(*c.d_final_state);
  return r;
}

// The case's problem x + δ ε over duals (for KLA, β from η + δη ε). S_0 is perturbed even when the
// case has none (then S_0 = 0 + δS_0 ε).
template <class S>
dr::Problem<larc::ref::Dual<S>> dual_problem(const Case<S>& c, const InputTangent<S>& d) {
  using D = larc::ref::Dual<S>;
  using larc::ref::with_tangent;
  const dr::Problem<S>& p = c.problem;
  dr::Problem<D> pd;
  pd.q = with_tangent(p.q, d.dq);
  pd.k = with_tangent(p.k, d.dk);
  pd.v = with_tangent(p.v, d.dv);
  pd.alpha = with_tangent(p.alpha, d.dalpha);
  pd.beta = c.eta ? dr::kla_beta<D>(pd.k, with_tangent(*c.eta, d.dbeta), D(c.eps)) : with_tangent(p.beta, d.dbeta);
  pd.scale = D(p.scale);
  pd.initial_state = with_tangent(p.start_state(), d.d_initial_state);
  return pd;
}

// J·δ: the tangents of the outputs and of the final state, from serial over duals.
template <class S>
larc::ref::SeqResult<S> output_tangents(const Case<S>& c, const InputTangent<S>& d) {
  const larc::ref::SeqResult<larc::ref::Dual<S>> r = dr::serial(dual_problem(c, d));
  return {larc::ref::tangents_of(r.o), larc::ref::tangents_of(r.final_state)};
}

// Jᵀ·(do, dht): backward, then for KLA the chain rule through β = η / (‖k‖² + ε) (dbeta then holds dη).
template <class S>
dr::Gradients<S> input_gradients(const Case<S>& c, const dr::Cotangents<S>& cot, Eigen::Index checkpoint) {
  dr::Gradients<S> g = dr::backward(c.problem, cot, checkpoint);
  if (c.eta) {
    dr::KlaStepGradients<S> kg = dr::kla_beta_backward(c.problem.k, *c.eta, c.eps, g.dbeta, g.dk);
    g.dbeta = std::move(kg.deta);
    g.dk = std::move(kg.dk);
  }
  return g;
}

// ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩
template <class S>
Pairing<S> cotangent_pairing(const dr::Cotangents<S>& cot, const larc::ref::SeqResult<S>& tangents) {
  Pairing<S> r;
  r.add(cot.d_o, tangents.o);
  if (cot.d_final_state) r.add(*cot.d_final_state, tangents.final_state);
  return r;
}

// Σ_x ⟨∇_x L, δx⟩
template <class S>
Pairing<S> input_pairing(const dr::Gradients<S>& g, const InputTangent<S>& d) {
  Pairing<S> r;
  r.add(g.dq, d.dq);
  r.add(g.dk, d.dk);
  r.add(g.dv, d.dv);
  r.add(g.dalpha, d.dalpha);
  r.add(g.dbeta, d.dbeta);
  r.add(g.d_initial_state, d.d_initial_state);
  return r;
}

// A cell of the duality grids: mechanism, T, initial state. d_k ≠ d_v both ways: d_k = 3, d_v = 2
// with an initial state, d_k = 2, d_v = 3 without.
using GridParam = std::tuple<Mechanism, Eigen::Index, bool>;

inline Shape grid_shape(const GridParam& param) {
  const auto& [mech, T, init] = param;
  return init ? Shape{T, 3, 2, true} : Shape{T, 2, 3, false};
}

inline std::uint64_t grid_seed(const GridParam& param) {
  const auto& [mech, T, init] = param;
  return 1000 * static_cast<std::uint64_t>(T) + 10 * static_cast<std::uint64_t>(mech) + (init ? 1 : 0);
}

inline std::string grid_param_name(const ::testing::TestParamInfo<GridParam>& info) {
  const auto& [mech, T, init] = info.param;
  const Shape s = grid_shape(info.param);
  return mechanism_name(mech) + "_T" + std::to_string(T) + (init ? "_S0" : "_zero") + "_dk" + std::to_string(s.dk) +
         "_dv" + std::to_string(s.dv);
}

// The duality in a rounded scalar S over the cell's case (unit keys, so every transition is a
// contraction: β ≤ 1, and KLA's β‖k‖² ≤ η ≤ 1), for each cotangent combination and checkpoint
// C ∈ {1, 7, 64}: |lhs − rhs| ≤ c (T + d_k) u M, u the scalar's unit roundoff and M the sum of both
// sides' |terms| (each term is computed to a relative error growing at most linearly in T + d_k).
template <class S>
void expect_duality_to_rounding(const GridParam& param, double constant) {
  const Shape shape = grid_shape(param);
  const std::uint64_t seed = grid_seed(param);
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  const Case<S> c = cast_case<S>(make_rational_case(std::get<0>(param), shape, seed, /*unit_keys=*/true));
  const InputTangent<S> delta = cast_gradients<S>(make_rational_tangent(shape, seed + 1));
  const larc::ref::SeqResult<S> jvp = output_tangents(c, delta);
  const double u = larc::ref::to_double(larc::ref::unit_roundoff<S>());
  for (const Seeds w : {Seeds::d_o, Seeds::d_final_state, Seeds::both}) {
    const dr::Cotangents<S> cot = cast_cotangents<S>(make_rational_cotangents(shape, w, seed + 2));
    const Pairing<S> lhs = cotangent_pairing(cot, jvp);
    for (const Eigen::Index checkpoint : {1, 7, 64}) {
      const Pairing<S> rhs = input_pairing(input_gradients(c, cot, checkpoint), delta);
      const double residual = std::fabs(larc::ref::to_double(S(lhs.value - rhs.value)));
      const double scaled = static_cast<double>(shape.T + shape.dk) * u * larc::ref::to_double(S(lhs.magnitude + rhs.magnitude));
      EXPECT_LE(residual, constant * scaled) << larc::ref::ScalarTraits<S>::name << " " << mechanism_name(std::get<0>(param))
                                             << " seed " << seed << " cotangents " << seeds_name(w) << " checkpoint "
                                             << checkpoint << ": residual / ((T + d_k) u M) = " << residual / scaled;
    }
  }
}

}  // namespace larc::testing::backward_checks
