// The backward verb of the delta-rule family (DeltaNet, GDN, KLA): the reverse-mode adjoint of
// delta_rule::serial, the gradient oracle (docs/gradients.md). For the loss
//
//     L = Σ_t ⟨do_t, o_t⟩ + ⟨dht, S_T⟩
//
// of the recurrence S_t = α_t (I − β_t k_t k_t^T) S_{t−1} + β_t k_t v_t^T, o_t = scale · S_t^T q_t,
// backward returns ∂L/∂ of every input of Problem (q, k, v, α, β, S_0); scale is a fixed parameter.
// The core adjoint uses + − × only, so it is exact over rationals; the front ends that map these
// gradients to other parameterisations (log-decays, KLA's η) follow it.
#pragma once

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "larc/reference/checkpointed_reverse.h"
#include "larc/reference/chunk_local_decay_gradient.h"
#include "larc/reference/delta_rule.h"

namespace larc::ref::delta_rule {

// The cotangents of the outputs: FLA's do (T×d_v) and dht (d_k×d_v). An empty d_o or an absent
// d_final_state counts as zero.
template <class S>
struct Cotangents {
  Mat<S> d_o;
  std::optional<Mat<S>> d_final_state;
};

// ∂L/∂ of each input of Problem, in its shape.
template <class S>
struct Gradients {
  Mat<S> dq, dk, dv;      // T×d_k, T×d_k, T×d_v
  Vec<S> dalpha, dbeta;   // T
  Mat<S> d_initial_state;  // d_k×d_v (returned whether or not the problem has an initial state)
};

namespace detail {

// One token of serial, in serial's order of operations: state ← S_t from state = S_{t−1}.
template <class S>
void advance(const Problem<S>& p, Eigen::Index t, Mat<S>& state) {
  const auto k = p.k.row(t).transpose();
  const Vec<S> kts = state.transpose() * k;
  state -= (p.beta(t) * k) * kts.transpose();
  state *= p.alpha(t);
  state.noalias() += (p.beta(t) * k) * p.v.row(t);
}

}  // namespace detail

// The adjoint of serial (docs/gradients.md, "The adjoint"). With D_t = ∂L/∂S_t (o_t's own term
// included), u_t = v_t − α_t S_{t−1}^T k_t and P_t = (I − β_t k_t k_t^T) S_{t−1}:
//   D_T = dht + scale q_T do_T^T,   D_{t−1} = scale q_{t−1} do_{t−1}^T + α_t (I − β_t k_t k_t^T) D_t,
//   dS_0 = α_1 (I − β_1 k_1 k_1^T) D_1,
//   dq_t = scale S_t do_t,  dv_t = β_t D_t^T k_t,  dβ_t = k_t^T D_t u_t,  dα_t = ⟨P_t, D_t⟩,
//   dk_t = β_t D_t u_t − α_t S_{t−1} dv_t.
// Checkpointed every `checkpoint` tokens (checkpointed_reverse.h): memory O((T/C + C) d_k d_v); no state
// is recovered by inverting a step (that divides by α_t (1 − β_t ‖k_t‖²), and α may be 0).
// dβ_t = (D_t^T k_t)·u_t, or with StepGradient::split as chunk (WY) kernels form it from the gradients of
// the β-scaled values and keys, (D_t^T k_t)·v_t − (D_t^T k_t)·(α_t S_{t−1}^T k_t): the same in exact
// arithmetic, another rounding in floating point (it cancels where u_t is small against v_t).
enum class StepGradient { direct, split };

template <class S>
Gradients<S> backward(const Problem<S>& p, const Cotangents<S>& c, Eigen::Index checkpoint = 64,
                      StepGradient step_gradient = StepGradient::direct) {
  validate(p);
  validate_output_cotangents("delta_rule", p.T(), p.dk(), p.dv(), c.d_o, c.d_final_state);
  const Eigen::Index T = p.T(), K = p.dk(), V = p.dv();
  Gradients<S> g{Mat<S>::Zero(T, K), Mat<S>::Zero(T, K), Mat<S>::Zero(T, V), Vec<S>::Zero(T), Vec<S>::Zero(T), {}};
  Mat<S> d_state = c.d_final_state ? *c.d_final_state : Mat<S>::Zero(K, V);  // D_t, carried backwards
  const bool has_do = c.d_o.size() != 0;
  reverse_over_states(
      p.start_state(), T, checkpoint, [&p](Eigen::Index t, Mat<S>& state) { detail::advance(p, t, state); },
      [&](Eigen::Index t, const Mat<S>& prev, const Mat<S>& state) {
        const auto q = p.q.row(t).transpose();
        const auto k = p.k.row(t).transpose();
        if (has_do) {
          const auto d_o = c.d_o.row(t).transpose();
          d_state.noalias() += (p.scale * q) * d_o.transpose();
          g.dq.row(t) = (p.scale * (state * d_o)).transpose();
        }
        const Vec<S> kts = prev.transpose() * k;              // S_{t−1}^T k_t
        const Vec<S> dtk = d_state.transpose() * k;           // D_t^T k_t
        const Vec<S> u = p.v.row(t).transpose() - p.alpha(t) * kts;
        g.dv.row(t) = (p.beta(t) * dtk).transpose();
        g.dbeta(t) = step_gradient == StepGradient::direct ? S(dtk.dot(u))
                                                            : S(dtk.dot(p.v.row(t).transpose()) - dtk.dot(p.alpha(t) * kts));
        // ⟨P_t, D_t⟩ = ⟨S_{t−1}, D_t⟩ − β_t (S_{t−1}^T k_t)·(D_t^T k_t)
        g.dalpha(t) = prev.cwiseProduct(d_state).sum() - p.beta(t) * kts.dot(dtk);
        g.dk.row(t) = (p.beta(t) * (d_state * u) - (p.alpha(t) * p.beta(t)) * (prev * dtk)).transpose();
        d_state -= (p.beta(t) * k) * dtk.transpose();          // (I − β_t k_t k_t^T) D_t
        d_state *= p.alpha(t);
      });
  g.d_initial_state = std::move(d_state);
  return g;
}

// The log-decay front end (α = e^g): dg_t = α_t dα_t. Exact, and 0 (finite) at g = −∞ (α = 0).
template <class S>
Vec<S> log_decay_gradient(const Vec<S>& alpha, const Vec<S>& dalpha) {
  return alpha.cwiseProduct(dalpha);
}

// The log-decay gradient by identity I3 (docs/gradients.md, "Identities"), the suffix-sum form:
//   dg_t = Σ_{s≥t} (o_s·do_s − v_s·dv_s) + ⟨S_T, dht⟩,
// from the forward's o (T×d_v) and S_T, the cotangents (absent: zero), v and backward's dv. Equal to
// log_decay_gradient(α, dα) over rationals; in floating point the suffix sums keep the size of the
// loss's terms while dg_t decays with the state, so under strong decay the form cancels — backward
// returns the direct form α_t dα_t instead.
template <class S>
Vec<S> log_decay_gradient_by_identity(const Mat<S>& o, const Mat<S>& final_state, const Mat<S>& v, const Mat<S>& dv,
                                      const Cotangents<S>& c) {
  const Eigen::Index T = v.rows();
  const S final_term = c.d_final_state ? S(final_state.cwiseProduct(*c.d_final_state).sum()) : S(0);
  // One chunk spanning the sequence (chunk_local_decay_gradient.h): no direct dg is read.
  return chunk_local_log_decay_gradient<S>(o, c.d_o, v, dv, Vec<S>::Zero(T), final_term, std::max<Eigen::Index>(T, 1));
}

// KLA's step β_t = η_t / (‖k_t‖² + ε) (kla_beta): the gradients of η and the key's total gradient
// (its direct dk plus the path through ‖k_t‖²):
//   dη_t = dβ_t / (‖k_t‖² + ε),   dk_t ← dk_t − 2 dβ_t η_t / (‖k_t‖² + ε)² · k_t.
template <class S>
struct KlaStepGradients {
  Vec<S> deta;
  Mat<S> dk;
};

template <class S>
KlaStepGradients<S> kla_beta_backward(const Mat<S>& k, const Vec<S>& eta, const S& eps, const Vec<S>& dbeta,
                                      const Mat<S>& dk) {
  KlaStepGradients<S> r{Vec<S>(k.rows()), dk};
  for (Eigen::Index t = 0; t < k.rows(); ++t) {
    const S denom = S(k.row(t).squaredNorm()) + eps;
    r.deta(t) = dbeta(t) / denom;
    r.dk.row(t) -= (S(2) * r.deta(t) * eta(t) / denom) * k.row(t);
  }
  return r;
}

}  // namespace larc::ref::delta_rule
