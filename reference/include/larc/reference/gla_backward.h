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

// The states before tokens c0, …, c0 + n − 1 and after token c0 + n − 1, from `start`, the state before c0.
template <class S>
std::vector<Mat<S>> states_of_segment(const Problem<S>& p, const Mat<S>& start, Eigen::Index c0, Eigen::Index n) {
  std::vector<Mat<S>> states{start};
  states.reserve(static_cast<std::size_t>(n + 1));
  for (Eigen::Index t = c0; t < c0 + n; ++t) {
    states.push_back(states.back());
    advance(p, t, states.back());
  }
  return states;
}

template <class S>
void validate_cotangents(const Problem<S>& p, const Cotangents<S>& c) {
  if (c.d_o.size() != 0 && (c.d_o.rows() != p.T() || c.d_o.cols() != p.dv()))
    throw std::invalid_argument("gla::backward: d_o must be T×d_v (or empty for zero)");
  if (c.d_final_state && (c.d_final_state->rows() != p.dk() || c.d_final_state->cols() != p.dv()))
    throw std::invalid_argument("gla::backward: d_final_state must be d_k×d_v");
}

}  // namespace detail

// The adjoint of serial (docs/gradients.md, "GLA"). With D_t = ∂L/∂S_t (o_t's own term included):
//   D_T = dht + scale q_T do_T^T,   D_{t−1} = scale q_{t−1} do_{t−1}^T + Diag(a_t) D_t,   dS_0 = Diag(a_1) D_1,
//   dq_t = scale S_t do_t,  dk_t = D_t v_t,  dv_t = D_t^T k_t,  da_{t,i} = Σ_j S_{t−1,ij} D_{t,ij}.
// Checkpointing as in delta_rule::backward: S is kept before tokens 0, C, 2C, … and each segment's
// states are recomputed from its checkpoint with serial's own operations; a state is never recovered
// by inverting a step (that divides by a_t, and a decay may be 0).
template <class S>
Gradients<S> backward(const Problem<S>& p, const Cotangents<S>& c, Eigen::Index checkpoint = 64) {
  validate(p);
  detail::validate_cotangents(p, c);
  if (checkpoint < 1) throw std::invalid_argument("gla::backward: checkpoint must be >= 1");
  const Eigen::Index T = p.T(), K = p.dk(), V = p.dv();

  std::vector<Mat<S>> checkpoints{p.start_state()};  // the states before tokens 0, C, 2C, …
  for (Eigen::Index c0 = checkpoint; c0 < T; c0 += checkpoint) {
    Mat<S> state = checkpoints.back();
    for (Eigen::Index t = c0 - checkpoint; t < c0; ++t) detail::advance(p, t, state);
    checkpoints.push_back(std::move(state));
  }

  Gradients<S> g{Mat<S>::Zero(T, K), Mat<S>::Zero(T, K), Mat<S>::Zero(T, V), Mat<S>::Zero(T, K), {}};
  Mat<S> d_state = c.d_final_state ? *c.d_final_state : Mat<S>::Zero(K, V);  // D_t, carried backwards
  const bool has_do = c.d_o.size() != 0;
  for (auto seg = static_cast<Eigen::Index>(checkpoints.size()) - 1; seg >= 0; --seg) {
    const Eigen::Index c0 = seg * checkpoint, n = std::min(checkpoint, T - c0);
    const std::vector<Mat<S>> states = detail::states_of_segment(p, checkpoints[static_cast<std::size_t>(seg)], c0, n);
    for (Eigen::Index j = n - 1; j >= 0; --j) {
      const Eigen::Index t = c0 + j;
      if (has_do) {
        const auto d_o = c.d_o.row(t).transpose();
        d_state.noalias() += (p.scale * p.q.row(t).transpose()) * d_o.transpose();
        g.dq.row(t) = (p.scale * (states[static_cast<std::size_t>(j + 1)] * d_o)).transpose();
      }
      g.dk.row(t) = (d_state * p.v.row(t).transpose()).transpose();
      g.dv.row(t) = (d_state.transpose() * p.k.row(t).transpose()).transpose();
      g.da.row(t) = states[static_cast<std::size_t>(j)].cwiseProduct(d_state).rowwise().sum().transpose();
      d_state = p.a.row(t).transpose().asDiagonal() * d_state;
    }
  }
  g.d_initial_state = std::move(d_state);
  return g;
}

// The log-decay front end (a = e^{gk}, FLA's gla_batched): dgk = a ⊙ da. Exact, and 0 (finite) where
// gk = −∞ (a = 0).
template <class S>
Mat<S> log_decay_gradient(const Mat<S>& a, const Mat<S>& da) {
  return a.cwiseProduct(da);
}

}  // namespace larc::ref::gla
