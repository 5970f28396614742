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

// gla_batched's inputs: dq, dk, dv, dgk ([B, T, H, d_k], through a = e^{gk}) and dh0 [B, H, d_k, d_v] of
// L = Σ ⟨do, o⟩ + ⟨dht, final_state⟩ over sequences and heads.
template <class S>
struct BatchedGradients {
  Tensor<S> dq, dk, dv, dgk, d_initial_state;
};

template <class S>
BatchedGradients<S> gla_backward_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Tensor<S>& gk,
                                         const BatchedCotangents<S>& cot, std::optional<std::type_identity_t<S>> scale = {},
                                         const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                                         Eigen::Index checkpoint = 64) {
  const BatchedDims d = batched_dims(q, k, v, initial_state ? &*initial_state : nullptr);
  const auto [B, T, H, K, V] = d;
  require_shape(gk, "gk", {B, T, H, K});
  cot.require_shapes(d);
  BatchedGradients<S> r{Tensor<S>({B, T, H, K}), Tensor<S>({B, T, H, K}), Tensor<S>({B, T, H, V}), Tensor<S>({B, T, H, K}),
                        Tensor<S>({B, H, K, V})};
  for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const Problem<S> p = head_problem(q, k, v, gk, scale, initial_state, b, h);
    const Gradients<S> g = backward(p, Cotangents<S>{cot.head_d_o(b, h), cot.head_d_final_state(b, h)}, checkpoint);
    set_head_rows(r.dq, b, h, g.dq);
    set_head_rows(r.dk, b, h, g.dk);
    set_head_rows(r.dv, b, h, g.dv);
    set_head_rows(r.dgk, b, h, log_decay_gradient(p.a, g.da));
    set_head_state(r.d_initial_state, b, h, g.d_initial_state);
  });
  return r;
}

}  // namespace larc::ref::gla
