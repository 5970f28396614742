// The delta-rule family (SPEC "Baselines", §3): DeltaNet, Gated DeltaNet (GDN) and Kaczmarz linear
// attention (KLA) are one recurrence with per-token decay α_t and step β_t:
//
//     S_t = α_t (I − β_t k_t k_t^T) S_{t−1} + β_t k_t v_t^T,     o_t = scale · S_t^T q_t
//
// DeltaNet: α = 1. GDN: α = e^{g}, g ≤ 0 a log-decay. KLA: β = η / (‖k‖² + ε) (kla_beta).
// The state S is d_k × d_v. Decays are carried as α (not g) so that exact rational runs need no
// exp(); decays_from_log converts FLA's log-decays.
//
// Verbs: serial (the recurrence above), materialized (ordered-product definition), chunked (UT/WY,
// any chunk size), State::step (streaming, in FLA's order: decay, delta on the decayed state).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "larc/reference/family.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/tensor.h"
#include "larc/reference/types.h"

namespace larc::ref::delta_rule {

template <class S>
struct Problem {
  Mat<S> q, k, v;                      // T×d_k, T×d_k, T×d_v
  Vec<S> alpha;                        // T decays α_t ∈ [0, 1]
  Vec<S> beta;                         // T steps β_t
  S scale = S(1);                      // read scale (FLA default d_k^{-1/2}, see default_scale)
  std::optional<Mat<S>> initial_state;  // d_k×d_v, zero when absent

  Eigen::Index T() const { return q.rows(); }
  Eigen::Index dk() const { return q.cols(); }
  Eigen::Index dv() const { return v.cols(); }
  Mat<S> start_state() const { return initial_state ? *initial_state : Mat<S>::Zero(dk(), dv()); }
};

// Throws std::invalid_argument naming the field whose shape disagrees.
template <class S>
void validate(const Problem<S>& p) {
  const auto T = p.T();
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("delta_rule: " + what);
  };
  need(p.k.rows() == T && p.k.cols() == p.dk(), "k must be T×d_k like q");
  need(p.v.rows() == T, "v must have T rows like q");
  need(p.alpha.size() == T, "alpha must have T entries");
  need(p.beta.size() == T, "beta must have T entries");
  if (p.initial_state)
    need(p.initial_state->rows() == p.dk() && p.initial_state->cols() == p.dv(),
         "initial_state must be d_k×d_v");
}

// FLA's default read scale d_k^{-1/2}.
template <class S>
S default_scale(Eigen::Index dk) { return S(1) / sqrt_of(from_double<S>(static_cast<double>(dk))); }  // dd_real(long) is ambiguous

// KLA's Kaczmarz step (SPEC §3): β_t = η_t / (‖k_t‖² + ε).
template <class S>
Vec<S> kla_beta(const Mat<S>& k, const Vec<S>& eta, const S& eps) {
  Vec<S> beta(k.rows());
  for (Eigen::Index t = 0; t < k.rows(); ++t) beta(t) = eta(t) / (S(k.row(t).squaredNorm()) + eps);
  return beta;
}

// FLA's log-decays g (≤ 0, −∞ allowed) to the decays α = e^g the forms take; every caller converts here.
template <class S>
Vec<S> decays_from_log(const Vec<S>& g) {
  return g.unaryExpr([](const S& x) { return exp_of(x); });
}

// Streaming decode in FLA's order (SPEC "GDN"): S ← αS; u = β(v − S^T k); S ← S + k u^T; o = S^T(scale q).
template <class S>
class State {
 public:
  State(Eigen::Index dk, Eigen::Index dv) : s_(Mat<S>::Zero(dk, dv)) {}
  explicit State(Mat<S> initial) : s_(std::move(initial)) {}

  Vec<S> step(const Vec<S>& q, const Vec<S>& k, const Vec<S>& v, const S& alpha, const S& beta,
              const S& scale) {
    s_ *= alpha;
    const Vec<S> u = beta * (v - s_.transpose() * k);
    s_.noalias() += k * u.transpose();
    return s_.transpose() * (scale * q);
  }
  const Mat<S>& matrix() const { return s_; }

 private:
  Mat<S> s_;
};

// The recurrence as the papers print it, S_t = α_t (I − β_t k_t k_t^T) S_{t−1} + β_t k_t v_t^T,
// applied as rank-one updates (O(d_k d_v) per token) in the printed order: transition first, then
// the write. State::step computes the same map in FLA's order, so the two round differently.
template <class S>
SeqResult<S> serial(const Problem<S>& p) {
  validate(p);
  Mat<S> state = p.start_state();
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    const auto k = p.k.row(t).transpose();
    const Vec<S> kts = state.transpose() * k;  // (k^T S)^T
    state -= (p.beta(t) * k) * kts.transpose();
    state *= p.alpha(t);
    state.noalias() += (p.beta(t) * k) * p.v.row(t);
    o.row(t) = (p.scale * (state.transpose() * p.q.row(t).transpose())).transpose();
  }
  return {std::move(o), std::move(state)};
}

// The definition (SPEC "GDN", materialised form), O(T² d):
//   o_t = scale Σ_{s≤t} q_t^T [Π_{r=s+1..t} α_r (I − β_r k_r k_r^T)] β_s k_s v_s^T
//         + scale q_t^T [Π_{r=0..t} α_r (I − β_r k_r k_r^T)] S_0,
// evaluated by carrying the row vector q_t^T Π ... backwards from s = t; no state is formed.
template <class S>
SeqResult<S> materialized(const Problem<S>& p) {
  validate(p);
  const Mat<S> s0 = p.start_state();
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    Vec<S> x = p.q.row(t).transpose();  // x^T = q_t^T M_t ⋯ M_{s+1}
    Vec<S> acc = Vec<S>::Zero(p.dv());
    for (Eigen::Index s = t; s >= 0; --s) {
      const S xk = x.dot(p.k.row(s).transpose());
      acc += (xk * p.beta(s)) * p.v.row(s).transpose();
      x = (p.alpha(s) * (x - (p.beta(s) * xk) * p.k.row(s).transpose())).eval();  // x^T ← x^T M_s
    }
    acc += s0.transpose() * x;
    o.row(t) = (p.scale * acc).transpose();
  }
  // The final state is not part of the definition of the outputs; take it from the recurrence's
  // closed form  S_T = Σ_s [Π_{r>s} M_r] β_s k_s v_s^T + [Π_r M_r] S_0 , built column by column.
  Mat<S> final_state = Mat<S>::Zero(p.dk(), p.dv());
  if (p.T() > 0) {
    for (Eigen::Index i = 0; i < p.dk(); ++i) {
      Vec<S> x = Vec<S>::Unit(p.dk(), i);
      Vec<S> acc = Vec<S>::Zero(p.dv());
      for (Eigen::Index s = p.T() - 1; s >= 0; --s) {
        const S xk = x.dot(p.k.row(s).transpose());
        acc += (xk * p.beta(s)) * p.v.row(s).transpose();
        x = (p.alpha(s) * (x - (p.beta(s) * xk) * p.k.row(s).transpose())).eval();
      }
      acc += s0.transpose() * x;
      final_state.row(i) = acc.transpose();
    }
  } else {
    final_state = s0;
  }
  return {std::move(o), std::move(final_state)};
}

namespace detail {
// Solves (I + StrictLower(M)) X = R by forward substitution; M is C×C, the diagonal of M is ignored.
template <class S>
Mat<S> unit_lower_solve(const Mat<S>& m, Mat<S> r) {
  for (Eigen::Index i = 0; i < r.rows(); ++i)
    for (Eigen::Index j = 0; j < i; ++j) r.row(i) -= m(i, j) * r.row(j);
  return r;
}

// One chunk [c0, c0 + n) of the chunked form below, from the state S_c entering it: its inputs, the
// decay products Γ (lower triangle incl. diagonal) and γ, K Kᵀ, B K Kᵀ, U, W, V_new and P.
template <class S>
struct ChunkTerms {
  Mat<S> Q, K, V;
  Vec<S> beta, gamma;
  Mat<S> gamma_ij, kkt, bkkt, U, W, v_new, P;
};

template <class S>
ChunkTerms<S> chunk_terms(const Problem<S>& p, Eigen::Index c0, Eigen::Index n, const Mat<S>& state,
                          const MatmulOperands<S>& ops) {
  // T·R for T = (I + StrictLower(M))^{-1}: one solve on R, or, when operands are rounded, T formed
  // first so that it can be rounded as a product operand.
  auto apply_inverse = [&ops](const Mat<S>& m, const Mat<S>& r) -> Mat<S> {
    if (!ops.rounds()) return unit_lower_solve<S>(m, r);
    return ops.product(unit_lower_solve<S>(m, Mat<S>::Identity(m.rows(), m.rows())), r);
  };
  ChunkTerms<S> c;
  c.Q = p.q.middleRows(c0, n);
  c.K = p.k.middleRows(c0, n);
  c.V = p.v.middleRows(c0, n);
  c.beta = p.beta.segment(c0, n);
  c.gamma_ij = Mat<S>::Zero(n, n);
  c.gamma.resize(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    c.gamma_ij(i, i) = S(1);
    for (Eigen::Index j = i - 1; j >= 0; --j) c.gamma_ij(i, j) = c.gamma_ij(i, j + 1) * p.alpha(c0 + j + 1);
    c.gamma(i) = (i == 0 ? S(1) : c.gamma(i - 1)) * p.alpha(c0 + i);
  }
  c.kkt = ops.product(c.K, c.K.transpose());
  c.bkkt = c.beta.asDiagonal() * c.kkt;
  c.U = apply_inverse(c.bkkt.cwiseProduct(c.gamma_ij), c.beta.asDiagonal() * c.V);
  c.W = apply_inverse(c.bkkt, c.beta.asDiagonal() * c.K);
  c.v_new = c.U - c.gamma.asDiagonal() * ops.product(c.W, state);
  c.P = ops.product(c.Q, c.K.transpose()).cwiseProduct(c.gamma_ij);  // Γ is zero above the diagonal
  return c;
}
}  // namespace detail

// Chunked form with the UT/WY transform (SPEC "GDN", chunked form), chunk size C ≥ 1, any T.
// Within a chunk (local index i), Γ_ij = Π_{r=j+1..i} α_r (= e^{G_i−G_j}) and γ_i = Π_{r≤i} α_r
// (= e^{G_i}) are formed as products, never as ratios, so α = 0 and rationals are handled exactly.
//   T_u = (I + StrictLower(B K K^T ⊙ Γ))^{-1}, U = T_u B V
//   T_w = (I + StrictLower(B K K^T))^{-1},     W = T_w B K
//   V_new = U − Diag(γ) W S_c
//   O = scale [Diag(γ) Q S_c + ((Q K^T) ⊙ Γ ⊙ L) V_new]
//   S_{c+1} = γ_{C−1} S_c + (Diag(Γ_{C−1,·}) K)^T V_new
// KLA-C4's "only B changes": KLA runs through this very function with kla_beta's β.
// Every matrix product goes through `ops` (matmul_operands.h): with an operand format it is the `io`
// grade's baseline, whose rounded operands are K, Q, T_u and T_w (formed in S, then rounded), B V and
// B K, W and S_c (as operands of W S_c and Q S_c), V_new, P = (Q K^T) ⊙ Γ ⊙ L and Diag(Γ_{C−1,·}) K;
// U, γ, the solve and the carried state stay in S (docs/gate.md "Precision grades").
template <class S>
SeqResult<S> chunked(const Problem<S>& p, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  validate(p);
  if (chunk < 1) throw std::invalid_argument("delta_rule::chunked: chunk size must be >= 1");
  Mat<S> state = p.start_state();
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index c0 = 0; c0 < p.T(); c0 += chunk) {
    const Eigen::Index n = std::min(chunk, p.T() - c0);
    const detail::ChunkTerms<S> t = detail::chunk_terms(p, c0, n, state, ops);
    o.middleRows(c0, n) = p.scale * (t.gamma.asDiagonal() * ops.product(t.Q, state) + ops.product(t.P, t.v_new));
    const Vec<S> to_end = t.gamma_ij.row(n - 1).transpose();
    state = (t.gamma(n - 1) * state + ops.product((to_end.asDiagonal() * t.K).transpose(), t.v_new)).eval();
  }
  return {std::move(o), std::move(state)};
}

// Runs State::step over the whole sequence (the streaming form).
template <class S>
SeqResult<S> streamed(const Problem<S>& p) {
  validate(p);
  State<S> st(p.start_state());
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index t = 0; t < p.T(); ++t)
    o.row(t) = st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(),
                       p.alpha(t), p.beta(t), p.scale).transpose();
  return {std::move(o), st.matrix()};
}

// Runs the given form (chunk and ops are used by Form::chunked only).
template <class S>
SeqResult<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  switch (form) {
    case Form::serial: return serial(p);
    case Form::materialized: return materialized(p);
    case Form::chunked: return chunked(p, chunk, ops);
    case Form::streamed: return streamed(p);
  }
  throw std::invalid_argument("delta_rule::run: unknown form");
}

// The delta-rule family (GDN, DeltaNet, KLA: one Problem with per-token α and β) for the batched driver
// and the harness (family.h).
struct Family {
  static constexpr std::string_view name = "delta rule";
  static constexpr std::array forms{Form::serial, Form::materialized, Form::chunked, Form::streamed};
  template <class S>
  using Problem = delta_rule::Problem<S>;
  template <class S>
  using Result = SeqResult<S>;
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return delta_rule::run(p, form, chunk, ops);
  }
};
static_assert(MechanismFamily<Family>);

}  // namespace larc::ref::delta_rule

// ---- Batched wrappers with FLA's conventions ([B,T,H,D], g as log-decay, per-token β) ----------

namespace larc::ref::delta_rule {

using ref::Form;

template <class S>
struct BatchedResult {
  Tensor<S> o;            // [B, T, H, d_v]
  Tensor<S> final_state;  // [B, H, d_k, d_v]

  BatchedResult(const BatchedDims& d) : o({d.B, d.T, d.H, d.V}), final_state({d.B, d.H, d.K, d.V}) {}
  // Puts head (b, h)'s outputs and final state in place.
  void set_head(std::int64_t b, std::int64_t h, const SeqResult<S>& r) {
    set_head_rows(o, b, h, r.o);
    set_head_state(final_state, b, h, r.final_state);
  }
};

// The mechanism's per-token decay and step for one head, from its batched gate tensors.
template <class S>
struct HeadGates {
  Vec<S> alpha, beta;
};

// GDN's gates of head (b, h) from its batched log-decays g and steps beta [B,T,H]: α = e^g, β.
template <class S>
HeadGates<S> gdn_head_gates(const Tensor<S>& g, const Tensor<S>& beta, std::int64_t b, std::int64_t h) {
  return {decays_from_log(head_gate(g, b, h)), head_gate(beta, b, h)};
}

// (b, h)'s problem of a batched call: its rows of q, k, v, the gates `g`, the scale (d_k^{-1/2} when
// not given) and its initial state.
template <class S>
Problem<S> head_problem(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, HeadGates<S> g, std::optional<S> scale,
                        const std::optional<Tensor<S>>& initial_state, std::int64_t b, std::int64_t h) {
  Problem<S> p{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h), std::move(g.alpha), std::move(g.beta),
               scale ? *scale : default_scale<S>(q.dim(3)), {}};
  if (initial_state) p.initial_state = head_state(*initial_state, b, h);
  return p;
}

namespace detail {
template <class S, class GatesOf>
BatchedResult<S> run_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v,
                             std::optional<S> scale, const std::optional<Tensor<S>>& initial_state,
                             Form form, Eigen::Index chunk, OperandFormat operands, GatesOf&& gates_of) {
  const BatchedDims d = batched_dims(q, k, v, initial_state ? &*initial_state : nullptr);
  BatchedResult<S> r(d);
  run_each_head<Family, S>(
      d.B, d.H, form, chunk, operands,
      [&](std::int64_t b, std::int64_t h) { return head_problem(q, k, v, gates_of(b, h), scale, initial_state, b, h); },
      [&](std::int64_t b, std::int64_t h, const SeqResult<S>& res) { r.set_head(b, h, res); });
  return r;
}
}  // namespace detail

// GDN: g [B,T,H] log-decays (≤ 0), beta [B,T,H]; scale defaults to d_k^{-1/2}.
template <class S>
BatchedResult<S> gdn_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v,
                             const Tensor<S>& g, const Tensor<S>& beta, std::optional<std::type_identity_t<S>> scale = {},
                             const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {}, Form form = Form::serial,
                             Eigen::Index chunk = 64, OperandFormat operands = OperandFormat::none) {
  require_shape(g, "g", gate_shape_of(q));
  require_shape(beta, "beta", gate_shape_of(q));
  return detail::run_batched(q, k, v, scale, initial_state, form, chunk, operands,
                             [&](std::int64_t b, std::int64_t h) { return gdn_head_gates(g, beta, b, h); });
}

// DeltaNet: no decay.
template <class S>
BatchedResult<S> deltanet_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v,
                                  const Tensor<S>& beta, std::optional<std::type_identity_t<S>> scale = {},
                                  const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {}, Form form = Form::serial,
                                  Eigen::Index chunk = 64, OperandFormat operands = OperandFormat::none) {
  require_shape(beta, "beta", gate_shape_of(q));
  return detail::run_batched(q, k, v, scale, initial_state, form, chunk, operands, [&](std::int64_t b, std::int64_t h) {
    return HeadGates<S>{Vec<S>::Ones(q.dim(1)), head_gate(beta, b, h)};
  });
}

// KLA: g [B,T,H] log-decays, eta [B,T,H] relaxation gates in (0, 1], β = η / (‖k‖² + ε).
template <class S>
BatchedResult<S> kla_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v,
                             const Tensor<S>& g, const Tensor<S>& eta, std::type_identity_t<S> eps = S(1e-6), std::optional<std::type_identity_t<S>> scale = {},
                             const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {}, Form form = Form::serial,
                             Eigen::Index chunk = 64, OperandFormat operands = OperandFormat::none) {
  require_shape(g, "g", gate_shape_of(q));
  require_shape(eta, "eta", gate_shape_of(q));
  return detail::run_batched(q, k, v, scale, initial_state, form, chunk, operands, [&](std::int64_t b, std::int64_t h) {
    return HeadGates<S>{decays_from_log(head_gate(g, b, h)),
                        kla_beta<S>(head_rows(k, b, h), head_gate(eta, b, h), eps)};
  });
}

}  // namespace larc::ref::delta_rule
