// The backward verb of CCQ (SPEC §2) on its two backbones, GDN (delta_rule.h) and GLA (gla.h): the
// reverse-mode adjoint of ccq::serial, the gradient oracle (docs/gradients.md, "CCQ"). For the loss
//
//     L = Σ_t ⟨do_t, o_t⟩ + ⟨dht, S_T⟩ + ⟨dC_T, C_T⟩ + dm_T·m_T + dn_T n_T
//
// (S_T the backbone's final state, (C_T, m_T, n_T) the final key statistics) it returns ∂L/∂ of every
// input of Problem: the backbone's (q, k, v, decays, β, S_0), the read's λ (given directly, or w and b
// of λ_t = σ(wᵀq_t + b)), the covariance decays when given, and the initial statistics.
//
// The composition is the forward's: backward of the backbone read with q̃ (the backbone's own backward
// verb) gives ∂L/∂q̃; the conditioner's adjoint maps it through q̃_t = q_t − λ_t Σ_t q_t to q, k, λ, the
// decays and the statistics. With λ given, everything uses + − × ÷ (÷ by n_t, where the forward divides),
// so it is exact over rationals; λ = σ(wᵀq + b) needs e^x (every rung but the exact one).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "larc/reference/ccq.h"
#include "larc/reference/checkpointed_reverse.h"
#include "larc/reference/delta_rule_backward.h"
#include "larc/reference/gla_backward.h"

namespace larc::ref::ccq {

// The cotangents of Result: the backbone's do, dht (each optional, zero when absent) and the final
// statistics' (optional).
template <class S>
struct Cotangents {
  Mat<S> d_o;
  std::optional<Mat<S>> d_final_state;
  std::optional<KeyStats<S>> d_final_stats;
};

// ∂L/∂ of each input of Problem. `backbone` holds the backbone's gradients with dq and dk total (the
// conditioner's paths included) and its decay gradient including the covariance's when the decayed
// covariance reads the backbone's decay.
template <class S, class BackboneGradients>
struct Gradients {
  BackboneGradients backbone;
  Vec<S> dlambda;          // T: ∂L/∂λ_t (λ given, or the value σ(wᵀq_t + b))
  Vec<S> dw;               // d_k, when λ comes from w and b (empty otherwise)
  S db = S(0);
  Vec<S> d_decay;          // T, when opt.decay is given for the decayed covariance (empty otherwise)
  KeyStats<S> d_initial_stats;  // returned whether or not the problem has initial statistics
};
template <class S>
using GdnGradients = Gradients<S, delta_rule::Gradients<S>>;
template <class S>
using GlaGradients = Gradients<S, gla::Gradients<S>>;

// What the conditioner's adjoint returns: ∂L/∂ of q (the read path and the conditioner), k (through the
// statistics), λ, the covariance decays γ and the initial statistics.
template <class S>
struct ConditionerGradients {
  Mat<S> dq, dk;
  Vec<S> dlambda, dgamma;
  KeyStats<S> d_initial_stats;
};

// The adjoint of conditioned_queries_recurrent, given ∂L/∂q̃ (T×d_k) and the final statistics'
// cotangent (absent: zero). With (D_C, D_m, D_n) the statistics' adjoints carried backwards, per token,
// s = Σ_t q_t = C q / n − m (m·q) / n², g = ∂L/∂q̃_t and ds = −λ_t g:
//   dλ_t = −g·s,   dq_t = g + Cᵀ ds / n − m (m·ds) / n²,
//   D_C += ds qᵀ / n,   D_m −= ((m·q) ds + (m·ds) q) / n²,   D_n += ds·(2 m (m·q) / n³ − C q / n²),
// then the absorb C = γ C' + k kᵀ, m = γ m' + k, n = γ n' + 1:
//   dk_t = (D_C + D_Cᵀ) k + D_m,   dγ_t = ⟨C', D_C⟩ + m'·D_m + n' D_n,   (D_C, D_m, D_n) ← γ_t (D_C, D_m, D_n).
// Checkpointed every `checkpoint` tokens over KeyStats (checkpointed_reverse.h); no statistics are
// recovered by undoing an absorb (that divides by γ, which may be 0).
template <class S>
ConditionerGradients<S> conditioned_queries_backward(const Mat<S>& q, const Mat<S>& k, const Vec<S>& lambda,
                                                     const Vec<S>& gamma, const KeyStats<S>& start,
                                                     const Mat<S>& d_q_tilde, const std::optional<KeyStats<S>>& d_final_stats,
                                                     Eigen::Index checkpoint = 64) {
  const Eigen::Index T = q.rows(), dk = q.cols();
  ConditionerGradients<S> g{Mat<S>::Zero(T, dk), Mat<S>::Zero(T, dk), Vec<S>::Zero(T), Vec<S>::Zero(T), {}};
  KeyStats<S> d = d_final_stats ? *d_final_stats : empty_stats<S>(dk);
  reverse_over_states(
      start, T, checkpoint,
      [&](Eigen::Index t, KeyStats<S>& st) { absorb(st, Vec<S>(k.row(t).transpose()), gamma(t)); },
      [&](Eigen::Index t, const KeyStats<S>& prev, const KeyStats<S>& st) {
        const Vec<S> qt = q.row(t).transpose(), kt = k.row(t).transpose();
        const Vec<S> gt = d_q_tilde.row(t).transpose();
        const Vec<S> cq = st.c * qt;
        const S mq = st.m.dot(qt), n2 = st.n * st.n;
        const Vec<S> s = sigma_times_given_cq<S>(cq, st.m, st.n, qt);
        g.dlambda(t) = -S(gt.dot(s));
        const Vec<S> ds = -lambda(t) * gt;
        const S mds = st.m.dot(ds);
        g.dq.row(t) = (gt + st.c.transpose() * ds / st.n - st.m * (mds / n2)).transpose();
        d.c.noalias() += ds * qt.transpose() / st.n;
        d.m -= (mq * ds + mds * qt) / n2;
        d.n += S(ds.dot(st.m)) * (S(2) * mq / (n2 * st.n)) - S(ds.dot(cq)) / n2;
        g.dk.row(t) = ((d.c + d.c.transpose()) * kt + d.m).transpose();
        g.dgamma(t) = prev.c.cwiseProduct(d.c).sum() + S(prev.m.dot(d.m)) + prev.n * d.n;
        d.c *= gamma(t);
        d.m *= gamma(t);
        d.n *= gamma(t);
      });
  g.d_initial_stats = std::move(d);
  return g;
}

namespace detail {

template <class S>
delta_rule::Gradients<S> backbone_backward(const delta_rule::Problem<S>& p, const delta_rule::Cotangents<S>& c,
                                           Eigen::Index checkpoint) {
  return delta_rule::backward(p, c, checkpoint);
}
template <class S>
gla::Gradients<S> backbone_backward(const gla::Problem<S>& p, const delta_rule::Cotangents<S>& c, Eigen::Index checkpoint) {
  return gla::backward(p, c, checkpoint);
}

// The covariance's decays read the backbone's scalar decay (backbone_scalar_decay): GDN's α, GLA's
// channel 0 of a.
template <class S>
void add_covariance_decay_gradient(delta_rule::Gradients<S>& g, const Vec<S>& dgamma) {
  g.dalpha += dgamma;
}
template <class S>
void add_covariance_decay_gradient(gla::Gradients<S>& g, const Vec<S>& dgamma) {
  g.da.col(0) += dgamma;
}

template <class S, class B>
void validate_cotangents(const Problem<S, B>& p, const Cotangents<S>& c) {
  validate_output_cotangents("ccq", p.backbone.T(), p.backbone.dk(), p.backbone.dv(), c.d_o, c.d_final_state);
  const Eigen::Index dk = p.backbone.dk();
  if (c.d_final_stats && (c.d_final_stats->c.rows() != dk || c.d_final_stats->c.cols() != dk || c.d_final_stats->m.size() != dk))
    throw std::invalid_argument("ccq::backward: d_final_stats must hold a d_k×d_k matrix and a d_k vector");
}

}  // namespace detail

// The adjoint of serial (docs/gradients.md, "CCQ"): the backbone's backward with q̃, then
// conditioned_queries_backward, then λ's front end (λ = σ(z_t), z_t = wᵀq_t + b: dz_t = λ_t (1 − λ_t) dλ_t,
// dq_t += dz_t w, dw = Σ_t dz_t q_t, db = Σ_t dz_t) when λ is not given.
template <class S, class B>
auto backward(const Problem<S, B>& p, const Cotangents<S>& c, Eigen::Index checkpoint = 64) {
  validate(p);
  detail::validate_cotangents(p, c);
  const Vec<S> lambda = lambdas(p), gamma = covariance_decays(p);
  const Conditioned<S> conditioned =
      conditioned_queries_recurrent(p.backbone.q, p.backbone.k, lambda, gamma, p.start_stats());
  B read = p.backbone;
  read.q = conditioned.q;
  auto bb = detail::backbone_backward(read, delta_rule::Cotangents<S>{c.d_o, c.d_final_state}, checkpoint);
  ConditionerGradients<S> cg = conditioned_queries_backward(p.backbone.q, p.backbone.k, lambda, gamma, p.start_stats(),
                                                            bb.dq, c.d_final_stats, checkpoint);
  Gradients<S, decltype(bb)> g{std::move(bb), std::move(cg.dlambda), Vec<S>(), S(0), Vec<S>(), std::move(cg.d_initial_stats)};
  g.backbone.dq = std::move(cg.dq);
  g.backbone.dk += cg.dk;
  if (p.opt.covariance == Covariance::decayed) {
    if (p.opt.decay) g.d_decay = std::move(cg.dgamma);
    else detail::add_covariance_decay_gradient(g.backbone, cg.dgamma);
  }
  if (!p.opt.lambda) {
    const Vec<S> dz = lambda.cwiseProduct((Vec<S>::Ones(lambda.size()) - lambda).cwiseProduct(g.dlambda));
    g.backbone.dq.noalias() += dz * p.opt.w.transpose();
    g.dw = p.backbone.q.transpose() * dz;
    g.db = dz.sum();
  }
  return g;
}

}  // namespace larc::ref::ccq
