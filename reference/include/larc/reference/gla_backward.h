// The backward verb of GLA (SPEC "Baselines"): the reverse-mode adjoint of gla::serial, the gradient
// oracle (docs/gradients.md, "GLA"). For the loss
//
//     L = Σ_t ⟨do_t, o_t⟩ + ⟨dht, S_T⟩
//
// of S_t = Diag(a_t) S_{t−1} + k_t v_t^T, o_t = scale · S_t^T q_t, backward returns ∂L/∂ of every input
// of Problem (q, k, v, the decays a, S_0); scale is a fixed parameter. The adjoint uses + − × only, so
// it is exact over rationals; log_decay_gradient maps da to FLA's log-gates gk (a = e^{gk}).
#pragma once

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "larc/reference/delta_rule_backward.h"
#include "larc/reference/gla.h"

namespace larc::ref::gla {

// The cotangents of the outputs, as for the delta rule: do (T×d_v) and dht (d_k×d_v), either absent
// (empty d_o, no d_final_state) counting as zero.
template <class S>
using Cotangents = delta_rule::Cotangents<S>;

// ∂L/∂ of each input of Problem, in its shape.
template <class S>
struct Gradients {
  Mat<S> dq, dk, dv;        // T×d_k, T×d_k, T×d_v
  Mat<S> da;                // T×d_k
  Mat<S> d_initial_state;   // d_k×d_v (returned whether or not the problem has an initial state)
};

namespace detail {

// One token of State::step, in its order of operations: state ← S_t from state = S_{t−1}.
template <class S>
void advance(const Problem<S>& p, Eigen::Index t, Mat<S>& state) {
  state = p.a.row(t).transpose().asDiagonal() * state;
  state.noalias() += p.k.row(t).transpose() * p.v.row(t);
}

}  // namespace detail

// The adjoint of serial (docs/gradients.md, "GLA"). With D_t = ∂L/∂S_t (o_t's own term included):
//   D_T = dht + scale q_T do_T^T,   D_{t−1} = scale q_{t−1} do_{t−1}^T + Diag(a_t) D_t,   dS_0 = Diag(a_1) D_1,
//   dq_t = scale S_t do_t,  dk_t = D_t v_t,  dv_t = D_t^T k_t,  da_{t,i} = Σ_j S_{t−1,ij} D_{t,ij}.
// Checkpointed every `checkpoint` tokens (checkpointed_reverse.h); a state is never recovered by
// inverting a step (that divides by a_t, and a decay may be 0).
template <class S>
Gradients<S> backward(const Problem<S>& p, const Cotangents<S>& c, Eigen::Index checkpoint = 64) {
  validate(p);
  validate_output_cotangents("gla", p.T(), p.dk(), p.dv(), c.d_o, c.d_final_state);
  const Eigen::Index T = p.T(), K = p.dk(), V = p.dv();
  Gradients<S> g{Mat<S>::Zero(T, K), Mat<S>::Zero(T, K), Mat<S>::Zero(T, V), Mat<S>::Zero(T, K), {}};
  Mat<S> d_state = c.d_final_state ? *c.d_final_state : Mat<S>::Zero(K, V);  // D_t, carried backwards
  const bool has_do = c.d_o.size() != 0;
  reverse_over_states(
      p.start_state(), T, checkpoint, [&p](Eigen::Index t, Mat<S>& state) { detail::advance(p, t, state); },
      [&](Eigen::Index t, const Mat<S>& prev, const Mat<S>& state) {
        if (has_do) {
          const auto d_o = c.d_o.row(t).transpose();
          d_state.noalias() += (p.scale * p.q.row(t).transpose()) * d_o.transpose();
          g.dq.row(t) = (p.scale * (state * d_o)).transpose();
        }
        g.dk.row(t) = (d_state * p.v.row(t).transpose()).transpose();
        g.dv.row(t) = (d_state.transpose() * p.k.row(t).transpose()).transpose();
        g.da.row(t) = prev.cwiseProduct(d_state).rowwise().sum().transpose();
        d_state = p.a.row(t).transpose().asDiagonal() * d_state;
      });
  g.d_initial_state = std::move(d_state);
  return g;
}

// The log-decay front end (a = e^{gk}, FLA's gla_batched): dgk = a ⊙ da. Exact, and 0 (finite) where
// gk = −∞ (a = 0).
template <class S>
Mat<S> log_decay_gradient(const Mat<S>& a, const Mat<S>& da) {
  return a.cwiseProduct(da);
}

// chunked_backward, GLA's backward in chunked form: the adjoint of gla::chunked, chunk by chunk in
// reverse, as chunked backward kernels compute it (docs/gradients.md, "The chunked backward"). Over
// rationals it equals backward (the adjoint of serial) exactly; with an operand format every operand of
// every matrix product is rounded (the carried S_c and ∂L/∂S_{c+1} included, when read): the `io`
// grade's gradient baseline. The decays, the intra-chunk scores (no matrix product: each pair has its own decay vector),
// elementwise work and the carried S_c, ∂L/∂S_c stay in S.
//
// Per chunk, in gla::chunked's notation (b_i, Γ_ij, P_ij = (q_i ⊙ Γ_ij)ᵀ k_j, E = Diag(Γ_last,·) K):
//   O = scale [(Q ⊙ b) S_c + P V],   S_{c+1} = Diag(b_last) S_c + Eᵀ V.
// Given dO and D = ∂L/∂S_{c+1} (dht after the last chunk), with dO' = scale dO:
//   dQ = b ⊙ (dO' S_cᵀ) + Σ_j dP_ij (Γ_ij ⊙ k_j),   dP = dO' Vᵀ ⊙ L,
//   dK_j = Γ_last,j ⊙ (V Dᵀ)_j + Σ_i dP_ij (Γ_ij ⊙ q_i),   dV = Pᵀ dO' + E D,
//   ∂L/∂S_c = Diag(b_last) D + (Q ⊙ b)ᵀ dO'.
// The log-gates' gradient in the chunk-local identity form chunk kernels use
// (chunk_local_decay_gradient.h): dgk_t = Σ_{s=t}^{end} (q_s ⊙ dq_s − k_s ⊙ dk_s) + rowsum(S_{c+1} ⊙ D).
//
// The chunked backward's gradients: backward's (da left empty) and the log-gates' dgk (T×d_k).
template <class S>
struct ChunkedGradients {
  Gradients<S> grads;
  Mat<S> dgk;
};

template <class S>
ChunkedGradients<S> chunked_backward(const Problem<S>& p, const Cotangents<S>& c, Eigen::Index chunk,
                                     const MatmulOperands<S>& ops = {}) {
  validate(p);
  validate_output_cotangents("gla", p.T(), p.dk(), p.dv(), c.d_o, c.d_final_state);
  if (chunk < 1) throw std::invalid_argument("gla::chunked_backward: chunk size must be >= 1");
  const Eigen::Index T = p.T(), K = p.dk(), V = p.dv();
  // The states entering each chunk, as gla::chunked carries them (each chunk run as a problem of its own).
  std::vector<Mat<S>> starts{p.start_state()};
  for (Eigen::Index c0 = 0; c0 < T; c0 += chunk) {
    const Eigen::Index n = std::min(chunk, T - c0);
    const Problem<S> part{p.q.middleRows(c0, n), p.k.middleRows(c0, n), p.v.middleRows(c0, n), p.a.middleRows(c0, n),
                          p.scale, starts.back()};
    starts.push_back(chunked(part, chunk, ops).final_state);
  }
  ChunkedGradients<S> r{{Mat<S>::Zero(T, K), Mat<S>::Zero(T, K), Mat<S>::Zero(T, V), Mat<S>(), {}}, {}};
  Gradients<S>& g = r.grads;
  Mat<S> d_state = c.d_final_state ? *c.d_final_state : Mat<S>::Zero(K, V);  // ∂L/∂S_{c+1}
  const Vec<S> final_term = starts.back().cwiseProduct(d_state).rowwise().sum();  // rowsum(S_T ⊙ dht)
  Mat<S> seeds = Mat<S>::Zero(T, K);  // rowsum(S_{c+1} ⊙ ∂L/∂S_{c+1}) at each next chunk's first token
  const bool has_do = c.d_o.size() != 0;
  for (Eigen::Index ci = T > 0 ? (T - 1) / chunk : -1; ci >= 0; --ci) {
    const Eigen::Index c0 = ci * chunk, n = std::min(chunk, T - c0);
    const Mat<S>& state = starts[static_cast<std::size_t>(ci)];
    if (c0 + n < T)
      seeds.row(c0 + n) = starts[static_cast<std::size_t>(ci + 1)].cwiseProduct(d_state).rowwise().sum().transpose();
    const detail::ChunkTerms<S> t = detail::chunk_terms(p, c0, n);
    const Mat<S> Q = p.q.middleRows(c0, n), Kc = p.k.middleRows(c0, n), Vc = p.v.middleRows(c0, n);
    const Mat<S> qb = Q.cwiseProduct(t.b);
    const Mat<S> d_o = has_do ? Mat<S>(p.scale * c.d_o.middleRows(c0, n)) : Mat<S>::Zero(n, V);
    const Mat<S> d_scores = ops.product(d_o, Vc.transpose()).template triangularView<Eigen::Lower>();
    Mat<S> dq = t.b.cwiseProduct(ops.product(d_o, state.transpose()));
    Mat<S> dk = t.gamma.bottomRows(n).cwiseProduct(ops.product(Vc, d_state.transpose()));  // rows n(n−1)+j: Γ_last,j
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j <= i; ++j) {
        dq.row(i) += d_scores(i, j) * t.gamma.row(n * i + j).cwiseProduct(Kc.row(j));
        dk.row(j) += d_scores(i, j) * t.gamma.row(n * i + j).cwiseProduct(Q.row(i));
      }
    g.dq.middleRows(c0, n) = dq;
    g.dk.middleRows(c0, n) = dk;
    g.dv.middleRows(c0, n) = ops.product(t.scores.transpose(), d_o) + ops.product(t.keys_to_end, d_state);
    d_state = (t.b.row(n - 1).transpose().asDiagonal() * d_state + ops.product(qb.transpose(), d_o)).eval();
  }
  g.d_initial_state = std::move(d_state);
  r.dgk = chunk_local_suffix_sums<S>(p.q.cwiseProduct(g.dq) - p.k.cwiseProduct(g.dk), seeds, final_term, chunk);
  return r;
}

// gla_batched's inputs: dq, dk, dv, dgk ([B, T, H, d_k], through a = e^{gk}) and dh0 [B, H, d_k, d_v] of
// L = Σ ⟨do, o⟩ + ⟨dht, final_state⟩ over sequences and heads; through backward, or, given `chunk`,
// chunked_backward at that chunk size with `ops`.
template <class S>
struct BatchedGradients {
  Tensor<S> dq, dk, dv, dgk, d_initial_state;
};

template <class S>
BatchedGradients<S> gla_backward_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Tensor<S>& gk,
                                         const BatchedCotangents<S>& cot, std::optional<std::type_identity_t<S>> scale = {},
                                         const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                                         Eigen::Index checkpoint = 64, std::optional<Eigen::Index> chunk = {},
                                         const MatmulOperands<std::type_identity_t<S>>& ops = {}) {
  const BatchedDims d = batched_dims(q, k, v, initial_state ? &*initial_state : nullptr);
  const auto [B, T, H, K, V] = d;
  require_shape(gk, "gk", {B, T, H, K});
  cot.require_shapes(d);
  BatchedGradients<S> r{Tensor<S>({B, T, H, K}), Tensor<S>({B, T, H, K}), Tensor<S>({B, T, H, V}), Tensor<S>({B, T, H, K}),
                        Tensor<S>({B, H, K, V})};
  for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const Problem<S> p = head_problem(q, k, v, gk, scale, initial_state, b, h);
    const Cotangents<S> c{cot.head_d_o(b, h), cot.head_d_final_state(b, h)};
    ChunkedGradients<S> head;
    if (chunk) {
      head = chunked_backward(p, c, *chunk, ops);
    } else {
      head.grads = backward(p, c, checkpoint);
      head.dgk = log_decay_gradient(p.a, head.grads.da);
    }
    const Gradients<S>& g = head.grads;
    set_head_rows(r.dq, b, h, g.dq);
    set_head_rows(r.dk, b, h, g.dk);
    set_head_rows(r.dv, b, h, g.dv);
    set_head_rows(r.dgk, b, h, head.dgk);
    set_head_state(r.d_initial_state, b, h, g.d_initial_state);
  });
  return r;
}

}  // namespace larc::ref::gla
