// What the ccq_backward_* tests share: seeded rational CCQ problems on the GDN and GLA backbones (λ given
// directly, so that everything is exact), tangents, cotangents and the two sides of the dot-product
// (duality) test (docs/gradients.md, "How the adjoint is checked"):
//
//     ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ + ⟨dC_T, Ċ_T⟩ + dm_T·ṁ_T + dn_T ṅ_T    (J·δ from ccq::serial over Dual<S>)
//   = Σ_x ⟨∇_x L, δx⟩                                           (∇L from ccq::backward)
//
// for a tangent δ of every input: the backbone's (from delta_rule_backward_check.h and
// gla_backward_check.h), λ, the given covariance decays and the initial statistics.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <type_traits>

#include "delta_rule_backward_check.h"
#include "gla_backward_check.h"
#include "larc/reference/ccq_backward.h"

namespace larc::testing::backward_checks {

namespace ccq = larc::ref::ccq;

enum class CcqBackbone { gdn, gla };
// uniform; decayed with the backbone's decay; decayed with opt.decay given.
enum class CcqCovariance { uniform, decayed_backbone, decayed_given };

inline std::string ccq_config_name(CcqBackbone b, CcqCovariance c) {
  return std::string(b == CcqBackbone::gdn ? "gdn" : "gla") +
         (c == CcqCovariance::uniform ? "_uniform" : c == CcqCovariance::decayed_backbone ? "_decayed_backbone" : "_decayed_given");
}

// gtest prints test parameters through these (found by argument-dependent lookup).
inline void PrintTo(CcqBackbone b, std::ostream* os) { *os << (b == CcqBackbone::gdn ? "GDN" : "GLA"); }
inline void PrintTo(CcqCovariance c, std::ostream* os) {
  *os << (c == CcqCovariance::uniform ? "uniform" : c == CcqCovariance::decayed_backbone ? "decayed (backbone's decay)" : "decayed (given)");
}

// The backbone problem type per backbone, and its gradients (also its tangents' type).
template <CcqBackbone B, class S>
using CcqBackboneProblem = std::conditional_t<B == CcqBackbone::gdn, dr::Problem<S>, gla::Problem<S>>;
template <CcqBackbone B, class S>
using CcqBackboneGradients = std::conditional_t<B == CcqBackbone::gdn, dr::Gradients<S>, gla::Gradients<S>>;
template <CcqBackbone B, class S>
using CcqProblem = ccq::Problem<S, CcqBackboneProblem<B, S>>;
// A tangent of every input has the gradients' shapes (dλ when λ is given, dw and db when it is σ(wᵀq + b)).
template <CcqBackbone B, class S>
using CcqTangent = ccq::Gradients<S, CcqBackboneGradients<B, S>>;

// The backbone's rational problem and tangent (GDN: delta_rule_backward_check.h; GLA: gla_backward_check.h).
template <CcqBackbone B>
CcqBackboneProblem<B, rational> make_ccq_backbone(const Shape& s, std::uint64_t seed, bool unit_keys = false) {
  if constexpr (B == CcqBackbone::gdn) return make_rational_case(Mechanism::gdn, s, seed, unit_keys).problem;
  else return make_gla_rational_problem(s, seed);
}
template <CcqBackbone B>
CcqBackboneGradients<B, rational> make_ccq_backbone_tangent(const Shape& s, std::uint64_t seed) {
  if constexpr (B == CcqBackbone::gdn) return make_rational_tangent(s, seed);
  else return make_gla_tangent(s, seed);
}

// λ in (0, 1] given directly; the covariance; with s.initial_state also initial statistics (n_0 = 3).
// For GLA with the backbone's decay, every channel of a is set to channel 0 (a scalar gate). unit_keys
// gives GDN exact unit keys (every transition a contraction, for rounded runs).
template <CcqBackbone B>
CcqProblem<B, rational> make_ccq_rational_problem(const Shape& s, CcqCovariance cov, std::uint64_t seed,
                                                  bool unit_keys = false) {
  larc::proofs::RationalSource src(seed + 7, 9, 8);
  CcqProblem<B, rational> p{make_ccq_backbone<B>(s, seed, unit_keys), {}, {}};
  Vec<rational> lambda(s.T);
  for (Eigen::Index t = 0; t < s.T; ++t) lambda(t) = src.unit_interval();
  p.opt.lambda = lambda;
  if (cov != CcqCovariance::uniform) p.opt.covariance = ccq::Covariance::decayed;
  if (cov == CcqCovariance::decayed_given) {
    Vec<rational> decay(s.T);
    for (Eigen::Index t = 0; t < s.T; ++t) decay(t) = src.unit_interval();
    p.opt.decay = decay;
  }
  if constexpr (B == CcqBackbone::gla)
    if (cov == CcqCovariance::decayed_backbone)
      for (Eigen::Index i = 1; i < s.dk; ++i) p.backbone.a.col(i) = p.backbone.a.col(0);
  if (s.initial_state) p.initial_stats = ccq::KeyStats<rational>{src.matrix(s.dk, s.dk), src.vector(s.dk), rational(3)};
  return p;
}

template <CcqBackbone B>
CcqTangent<B, rational> make_ccq_tangent(const Shape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed + 7, 9, 8);
  CcqTangent<B, rational> d{make_ccq_backbone_tangent<B>(s, seed), src.vector(s.T), Vec<rational>(), rational(0),
                            src.vector(s.T), {src.matrix(s.dk, s.dk), src.vector(s.dk), src.next()}};
  return d;
}

inline ccq::Cotangents<rational> make_ccq_cotangents(const Shape& s, Seeds w, std::uint64_t seed) {
  const dr::Cotangents<rational> bb = make_rational_cotangents(s, w, seed);
  ccq::Cotangents<rational> c{bb.d_o, bb.d_final_state, {}};
  if (w != Seeds::d_o) {
    larc::proofs::RationalSource src(seed + 7, 9, 8);
    c.d_final_stats = ccq::KeyStats<rational>{src.matrix(s.dk, s.dk), src.vector(s.dk), src.next()};
  }
  return c;
}

template <class To, class From>
ccq::KeyStats<To> cast_stats(const ccq::KeyStats<From>& s) {
  return {larc::ref::cast_matrix<To>(s.c), larc::ref::cast_vector<To>(s.m), larc::ref::convert<To>(s.n)};
}

// A rational problem (λ given), tangent and cotangents in another scalar.
template <CcqBackbone B, class To>
CcqProblem<B, To> cast_ccq_problem(const CcqProblem<B, rational>& p) {
  CcqProblem<B, To> r;
  if constexpr (B == CcqBackbone::gdn) r.backbone = cast_case<To>(Case<rational>{p.backbone, {}, 0}).problem;
  else r.backbone = cast_gla_problem<To>(p.backbone);
  r.opt.lambda = larc::ref::cast_vector<To>(*p.opt.lambda);
  r.opt.covariance = p.opt.covariance;
  if (p.opt.decay) r.opt.decay = larc::ref::cast_vector<To>(*p.opt.decay);
  if (p.initial_stats) r.initial_stats = cast_stats<To>(*p.initial_stats);
  return r;
}

template <CcqBackbone B, class To>
CcqTangent<B, To> cast_ccq_tangent(const CcqTangent<B, rational>& d) {
  CcqTangent<B, To> r;
  if constexpr (B == CcqBackbone::gdn) r.backbone = cast_gradients<To>(d.backbone);
  else r.backbone = cast_gla_tangent<To>(d.backbone);
  r.dlambda = larc::ref::cast_vector<To>(d.dlambda);
  r.d_decay = larc::ref::cast_vector<To>(d.d_decay);
  r.d_initial_stats = cast_stats<To>(d.d_initial_stats);
  return r;
}

template <class To>
ccq::Cotangents<To> cast_ccq_cotangents(const ccq::Cotangents<rational>& c) {
  ccq::Cotangents<To> r{larc::ref::cast_matrix<To>(c.d_o), {}, {}};
  if (c.d_final_state) r.d_final_state = larc::ref::cast_matrix<To>(*c.d_final_state);
  if (c.d_final_stats) r.d_final_stats = cast_stats<To>(*c.d_final_stats);
  return r;
}

template <class S>
ccq::KeyStats<larc::ref::Dual<S>> dual_stats(const ccq::KeyStats<S>& x, const ccq::KeyStats<S>& d) {
  using larc::ref::with_tangent;
  return {with_tangent(x.c, d.c), with_tangent(x.m, d.m), larc::ref::Dual<S>(x.n, d.n)};
}

// The problem x + δ ε over duals; the initial statistics are perturbed even when absent (from empty).
template <CcqBackbone B, class S>
CcqProblem<B, larc::ref::Dual<S>> ccq_dual_problem(const CcqProblem<B, S>& p, const CcqTangent<B, S>& d) {
  using larc::ref::with_tangent;
  CcqProblem<B, larc::ref::Dual<S>> r;
  if constexpr (B == CcqBackbone::gdn) r.backbone = dual_problem(Case<S>{p.backbone, {}, S(0)}, d.backbone);
  else r.backbone = gla_dual_problem(p.backbone, d.backbone);
  r.opt.lambda = with_tangent(*p.opt.lambda, d.dlambda);
  r.opt.covariance = p.opt.covariance;
  if (p.opt.decay) r.opt.decay = with_tangent(*p.opt.decay, d.d_decay);
  r.initial_stats = dual_stats(p.start_stats(), d.d_initial_stats);
  return r;
}

template <class S>
ccq::Result<S> tangents_of_result(const ccq::Result<larc::ref::Dual<S>>& r) {
  using larc::ref::tangents_of;
  return {tangents_of(r.o), tangents_of(r.final_state),
          {tangents_of(r.final_stats.c), tangents_of(r.final_stats.m), r.final_stats.n.tangent}};
}

// J·δ from ccq::serial over duals.
template <CcqBackbone B, class S>
ccq::Result<S> ccq_output_tangents(const CcqProblem<B, S>& p, const CcqTangent<B, S>& d) {
  return tangents_of_result<S>(ccq::serial(ccq_dual_problem<B, S>(p, d)));
}

template <class S>
void add_stats_pairing(Pairing<S>& r, const ccq::KeyStats<S>& a, const ccq::KeyStats<S>& b) {
  r.add(a.c, b.c);
  r.add(a.m, b.m);
  r.add(Vec<S>::Constant(1, a.n), Vec<S>::Constant(1, b.n));
}

// ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ + the final statistics' pairing
template <class S>
Pairing<S> ccq_cotangent_pairing(const ccq::Cotangents<S>& c, const ccq::Result<S>& tangents) {
  Pairing<S> r;
  r.add(c.d_o, tangents.o);
  if (c.d_final_state) r.add(*c.d_final_state, tangents.final_state);
  if (c.d_final_stats) add_stats_pairing(r, *c.d_final_stats, tangents.final_stats);
  return r;
}

// Σ_x ⟨∇_x L, δx⟩
template <CcqBackbone B, class S>
Pairing<S> ccq_input_pairing(const CcqTangent<B, S>& g, const CcqTangent<B, S>& d) {
  Pairing<S> r;
  if constexpr (B == CcqBackbone::gdn) r = input_pairing(g.backbone, d.backbone);
  else r = gla_input_pairing(g.backbone, d.backbone);
  if (g.dw.size() != 0) {  // λ = σ(wᵀq + b): w and b are the inputs
    r.add(g.dw, d.dw);
    r.add(Vec<S>::Constant(1, g.db), Vec<S>::Constant(1, d.db));
  } else {
    r.add(g.dlambda, d.dlambda);
  }
  if (g.d_decay.size() != 0) r.add(g.d_decay, d.d_decay);
  add_stats_pairing(r, g.d_initial_stats, d.d_initial_stats);
  return r;
}

}  // namespace larc::testing::backward_checks
