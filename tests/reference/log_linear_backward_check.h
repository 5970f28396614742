// What the log_linear_backward_* tests share: seeded rational log-linear problems (Mamba-2 and GDN),
// input tangents and cotangents, and the two sides of the dot-product (duality) test of the adjoint
// (docs/gradients.md, "How the adjoint is checked"):
//
//     ⟨do, ȯ⟩              (ȯ = J·δ from serial over Dual<S>)
//   = Σ_x ⟨∇_x L, δx⟩     (∇L = Jᵀ·do from backward or materialized_backward)
//
// for a tangent δ of every input (q, k, v, α, β, λ and, for a problem continuing after t0 > 0 tokens,
// its carried level states). The problem has no final state.
#pragma once

#include <cstdint>
#include <ostream>
#include <random>
#include <optional>
#include <string>
#include <vector>

#include "backward_duality.h"
#include "larc/proofs_check/exact.h"
#include "larc/reference/dual.h"
#include "larc/reference/log_linear_backward.h"

namespace larc::testing::backward_checks {

namespace ll = larc::ref::log_linear;
using larc::ref::Mat;
using larc::ref::rational;
using larc::ref::Vec;

}  // namespace larc::testing::backward_checks

namespace larc::ref::log_linear {
// gtest prints test parameters through this (found by argument-dependent lookup).
inline void PrintTo(Variant v, std::ostream* os) { *os << variant_name(v); }
}  // namespace larc::ref::log_linear

namespace larc::testing::backward_checks {

struct LogLinearShape {
  ll::Variant variant = ll::Variant::mamba2;
  Eigen::Index T = 1, dk = 1, dv = 1;
  int extra_levels = 0;  // λ columns beyond level_count(t0 + T): their gradient must be 0
  std::uint64_t t0 = 0;  // > 0: the problem continues after t0 tokens from random carried level states

  std::string describe() const {
    return std::string(ll::variant_name(variant)) + " T=" + std::to_string(T) + " dk=" + std::to_string(dk) +
           " dv=" + std::to_string(dv) + " extra_levels=" + std::to_string(extra_levels) + " t0=" + std::to_string(t0);
  }
};

inline Eigen::Index lambda_columns(const LogLinearShape& s) {
  return larc::ref::fenwick::level_count(s.t0 + static_cast<std::uint64_t>(s.T)) + s.extra_levels;
}

// One random rational d_k×d_v matrix per carried level of t0 (none for t0 = 0).
inline std::vector<Mat<rational>> carried_matrices(larc::proofs::RationalSource& src, const LogLinearShape& s) {
  std::vector<Mat<rational>> out;
  for (std::size_t i = 0; i < larc::ref::fenwick::carried_levels(s.t0).size(); ++i) out.push_back(src.matrix(s.dk, s.dv));
  return out;
}

// A tangent of the inputs (q, k, v, α, β, λ) has the gradients' shapes.
template <class S>
using LogLinearTangent = ll::Gradients<S>;

// Random rationals n/d, |n| ≤ 9, d ≤ 8 (λ too: any sign); α and β in (0, 1], with about a third of
// the α exactly 0 when zero_decays; scale 1/2. β is drawn for Mamba-2 too (it must be ignored). With
// unit_keys the keys are exact unit vectors, so every GDN transition is a contraction (β ≤ 1) and rounded
// runs stay well conditioned.
inline ll::Problem<rational> make_log_linear_rational_problem(const LogLinearShape& s, std::uint64_t seed,
                                                              bool zero_decays = false, bool unit_keys = false) {
  larc::proofs::RationalSource src(seed, 9, 8);
  ll::Problem<rational> p;
  p.variant = s.variant;
  p.q = src.matrix(s.T, s.dk);
  p.k = src.matrix(s.T, s.dk);
  if (unit_keys)
    for (Eigen::Index t = 0; t < s.T; ++t) p.k.row(t) = src.unit_vector(s.dk).transpose();
  p.v = src.matrix(s.T, s.dv);
  p.alpha = Vec<rational>(s.T);
  p.beta = Vec<rational>(s.T);
  for (Eigen::Index t = 0; t < s.T; ++t) {
    p.alpha(t) = src.unit_interval();
    p.beta(t) = src.unit_interval();
  }
  if (zero_decays) {
    std::mt19937_64 rng(seed + 17);
    for (Eigen::Index t = 0; t < s.T; ++t)
      if (rng() % 3 == 0) p.alpha(t) = 0;
  }
  p.lambda = src.matrix(s.T, lambda_columns(s));
  p.scale = rational(1, 2);
  if (s.t0 > 0) p.start = ll::Start<rational>{s.t0, carried_matrices(src, s)};
  return p;
}

inline LogLinearTangent<rational> make_log_linear_tangent(const LogLinearShape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  LogLinearTangent<rational> d{src.matrix(s.T, s.dk), src.matrix(s.T, s.dk), src.matrix(s.T, s.dv),
                               src.vector(s.T),       src.vector(s.T),       src.matrix(s.T, lambda_columns(s)), {}};
  d.d_start_states = carried_matrices(src, s);
  return d;
}

inline Mat<rational> make_log_linear_cotangent(const LogLinearShape& s, std::uint64_t seed) {
  return larc::proofs::RationalSource(seed, 9, 8).matrix(s.T, s.dv);
}

template <class To, class From>
std::vector<Mat<To>> cast_matrices(const std::vector<Mat<From>>& ms) {
  std::vector<Mat<To>> out;
  for (const Mat<From>& m : ms) out.push_back(larc::ref::cast_matrix<To>(m));
  return out;
}

template <class To, class From>
ll::Problem<To> cast_log_linear_problem(const ll::Problem<From>& p) {
  using larc::ref::cast_matrix;
  using larc::ref::cast_vector;
  std::optional<ll::Start<To>> start;
  if (p.start) start = ll::Start<To>{p.start->offset, cast_matrices<To>(p.start->level_states)};
  return {p.variant,           cast_matrix<To>(p.q),     cast_matrix<To>(p.k),      cast_matrix<To>(p.v),
          cast_vector<To>(p.alpha), cast_vector<To>(p.beta), cast_matrix<To>(p.lambda), larc::ref::convert<To>(p.scale),
          std::move(start)};
}

template <class To, class From>
LogLinearTangent<To> cast_log_linear_tangent(const LogLinearTangent<From>& d) {
  using larc::ref::cast_matrix;
  using larc::ref::cast_vector;
  return {cast_matrix<To>(d.dq),     cast_matrix<To>(d.dk),    cast_matrix<To>(d.dv),
          cast_vector<To>(d.dalpha), cast_vector<To>(d.dbeta), cast_matrix<To>(d.dlambda),
          cast_matrices<To>(d.d_start_states)};
}

// J·δ: the tangents of the outputs, from serial over duals.
template <class S>
Mat<S> log_linear_output_tangents(const ll::Problem<S>& p, const LogLinearTangent<S>& d) {
  using D = larc::ref::Dual<S>;
  using larc::ref::with_tangent;
  std::optional<ll::Start<D>> start;
  if (p.start) {
    start = ll::Start<D>{p.start->offset, {}};
    for (std::size_t i = 0; i < p.start->level_states.size(); ++i)
      start->level_states.push_back(with_tangent(p.start->level_states[i], d.d_start_states[i]));
  }
  const ll::Problem<D> pd{p.variant,
                          with_tangent(p.q, d.dq),
                          with_tangent(p.k, d.dk),
                          with_tangent(p.v, d.dv),
                          with_tangent(p.alpha, d.dalpha),
                          with_tangent(p.beta, d.dbeta),
                          with_tangent(p.lambda, d.dlambda),
                          D(p.scale),
                          std::move(start)};
  return larc::ref::tangents_of(ll::serial(pd));
}

// Σ_x ⟨∇_x L, δx⟩
template <class S>
Pairing<S> log_linear_input_pairing(const ll::Gradients<S>& g, const LogLinearTangent<S>& d) {
  Pairing<S> p;
  p.add(g.dq, d.dq);
  p.add(g.dk, d.dk);
  p.add(g.dv, d.dv);
  p.add(g.dalpha, d.dalpha);
  p.add(g.dbeta, d.dbeta);
  p.add(g.dlambda, d.dlambda);
  for (std::size_t i = 0; i < g.d_start_states.size(); ++i) p.add(g.d_start_states[i], d.d_start_states[i]);
  return p;
}

// ⟨do, ȯ⟩
template <class S>
Pairing<S> log_linear_cotangent_pairing(const Mat<S>& d_o, const Mat<S>& output_tangents) {
  Pairing<S> p;
  p.add(d_o, output_tangents);
  return p;
}

// The first field in which two gradients differ ("" when all are equal).
template <class S>
std::string first_difference(const ll::Gradients<S>& a, const ll::Gradients<S>& b) {
  if (a.dq != b.dq) return "dq";
  if (a.dk != b.dk) return "dk";
  if (a.dv != b.dv) return "dv";
  if (a.dalpha != b.dalpha) return "dalpha";
  if (a.dbeta != b.dbeta) return "dbeta";
  if (a.dlambda != b.dlambda) return "dlambda";
  if (a.d_start_states != b.d_start_states) return "d_start_states";
  return "";
}

}  // namespace larc::testing::backward_checks
