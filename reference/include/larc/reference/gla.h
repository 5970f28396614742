// GLA, gated linear attention (SPEC "Baselines"): S_t = Diag(a_t) S_{t−1} + k_t v_t^T, o_t = scale · S_t^T q_t,
// a_t ∈ (0, 1]^{d_k} per-channel decays (held as a = e^{g}, so exact rational runs need no exp; gla_batched
// converts FLA's log-gates gk elementwise). S is d_k × d_v.
//
// Verbs: serial (= State::step over the sequence, as for LA), materialized (the O(T² d) definition
// o_t = scale Σ_{s≤t} (q_t ⊙ Π_{r=s+1..t} a_r)^T k_s v_s^T + scale (q_t ⊙ Π_{r≤t} a_r)^T S_0), chunked
// (inter-chunk state plus the decay-weighted intra-chunk product, any chunk size ≥ 1 and any T).
// Decay products are formed as products, never as ratios of cumulative products.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "larc/reference/delta_rule.h"
#include "larc/reference/family.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/tensor.h"
#include "larc/reference/types.h"

namespace larc::ref::gla {

template <class S>
struct Problem {
  Mat<S> q, k, v;  // T×d_k, T×d_k, T×d_v
  Mat<S> a;        // T×d_k decays in (0, 1]
  S scale = S(1);
  std::optional<Mat<S>> initial_state;  // d_k×d_v, zero when absent

  Eigen::Index T() const { return q.rows(); }
  Eigen::Index dk() const { return q.cols(); }
  Eigen::Index dv() const { return v.cols(); }
  Mat<S> start_state() const { return initial_state ? *initial_state : Mat<S>::Zero(dk(), dv()); }
};

template <class S>
void validate(const Problem<S>& p) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("gla: " + what);
  };
  need(p.k.rows() == p.T() && p.k.cols() == p.dk(), "k must be T×d_k like q");
  need(p.v.rows() == p.T(), "v must have T rows like q");
  need(p.a.rows() == p.T() && p.a.cols() == p.dk(), "a (decays) must be T×d_k like q");
  if (p.initial_state)
    need(p.initial_state->rows() == p.dk() && p.initial_state->cols() == p.dv(), "initial_state must be d_k×d_v");
}

template <class S>
class State {
 public:
  State(Eigen::Index dk, Eigen::Index dv) : s_(Mat<S>::Zero(dk, dv)) {}
  explicit State(Mat<S> initial) : s_(std::move(initial)) {}

  Vec<S> step(const Vec<S>& q, const Vec<S>& k, const Vec<S>& v, const Vec<S>& a, const S& scale) {
    s_ = a.asDiagonal() * s_;
    s_.noalias() += k * v.transpose();
    return s_.transpose() * (scale * q);
  }
  const Mat<S>& matrix() const { return s_; }

 private:
  Mat<S> s_;
};

template <class S>
SeqResult<S> serial(const Problem<S>& p) {
  validate(p);
  State<S> st(p.start_state());
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index t = 0; t < p.T(); ++t)
    o.row(t) = st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(),
                       p.a.row(t).transpose(), p.scale).transpose();
  return {std::move(o), st.matrix()};
}

template <class S>
SeqResult<S> materialized(const Problem<S>& p) {
  validate(p);
  const Mat<S> s0 = p.start_state();
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    Vec<S> x = p.q.row(t).transpose();  // q_t ⊙ Π_{r=s+1..t} a_r, carried backwards from s = t
    Vec<S> acc = Vec<S>::Zero(p.dv());
    for (Eigen::Index s = t; s >= 0; --s) {
      acc += S(x.dot(p.k.row(s).transpose())) * p.v.row(s).transpose();
      x = x.cwiseProduct(p.a.row(s).transpose());
    }
    acc += s0.transpose() * x;
    o.row(t) = (p.scale * acc).transpose();
  }
  // Closed form of the final state: Σ_s Diag(Π_{r>s} a_r) k_s v_s^T + Diag(Π_r a_r) S_0.
  Vec<S> carry = Vec<S>::Ones(p.dk());
  Mat<S> final_state = Mat<S>::Zero(p.dk(), p.dv());
  for (Eigen::Index s = p.T() - 1; s >= 0; --s) {
    final_state.noalias() += carry.cwiseProduct(p.k.row(s).transpose()) * p.v.row(s);
    carry = carry.cwiseProduct(p.a.row(s).transpose());
  }
  final_state.noalias() += carry.asDiagonal() * s0;
  return {std::move(o), std::move(final_state)};
}

namespace detail {
// One chunk [c0, c0 + n) of the chunked form below: Γ_ij (row n·i + j of `gamma`, j ≤ i, a d_k vector),
// b_i (row i of `b`), the intra-chunk scores P_ij = (q_i ⊙ Γ_ij)^T k_j (lower triangle incl. diagonal)
// and the keys decayed to the chunk's end, Diag(Γ_last,·) K.
template <class S>
struct ChunkTerms {
  Mat<S> gamma, b, scores, keys_to_end;
};

template <class S>
ChunkTerms<S> chunk_terms(const Problem<S>& p, Eigen::Index c0, Eigen::Index n) {
  ChunkTerms<S> c{Mat<S>::Zero(n * n, p.dk()), Mat<S>(n, p.dk()), Mat<S>::Zero(n, n), Mat<S>(n, p.dk())};
  for (Eigen::Index i = 0; i < n; ++i) {
    c.gamma.row(n * i + i).setOnes();
    for (Eigen::Index j = i - 1; j >= 0; --j)
      c.gamma.row(n * i + j) = c.gamma.row(n * i + j + 1).cwiseProduct(p.a.row(c0 + j + 1));
    c.b.row(i) = (i == 0 ? Mat<S>(Mat<S>::Ones(1, p.dk())) : Mat<S>(c.b.row(i - 1))).cwiseProduct(p.a.row(c0 + i));
  }
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index j = 0; j <= i; ++j)
      c.scores(i, j) = p.q.row(c0 + i).cwiseProduct(c.gamma.row(n * i + j)).dot(p.k.row(c0 + j));
  for (Eigen::Index j = 0; j < n; ++j) c.keys_to_end.row(j) = p.k.row(c0 + j).cwiseProduct(c.gamma.row(n * (n - 1) + j));
  return c;
}
}  // namespace detail

// Chunked: for a chunk with local index i and products b_i = Π_{r≤i} a_r (from the chunk's start) and
// Γ_ij = Π_{r=j+1..i} a_r (j ≤ i):
//   o_i = scale [ (q_i ⊙ b_i)^T S_c + Σ_{j≤i} (q_i ⊙ Γ_ij)^T k_j v_j^T ],
//   S_{c+1} = Diag(b_last) S_c + Σ_j (Γ_last,j ⊙ k_j) v_j^T.
// Every matrix product goes through `ops` (matmul_operands.h): with an operand format it is the `io`
// grade's baseline, whose rounded operands are Q ⊙ b and S_c (the inter-chunk read), the intra-chunk
// scores P_ij = (q_i ⊙ Γ_ij)^T k_j and V (P V), and Diag(Γ_last,·) K and V (the state update). P is
// no matrix product (each pair has its own decay vector): it is formed in S like the decays, and the
// carried state stays in S (docs/gate.md "Precision grades").
template <class S>
SeqResult<S> chunked(const Problem<S>& p, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  validate(p);
  if (chunk < 1) throw std::invalid_argument("gla::chunked: chunk size must be >= 1");
  Mat<S> state = p.start_state();
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index c0 = 0; c0 < p.T(); c0 += chunk) {
    const Eigen::Index n = std::min(chunk, p.T() - c0);
    const detail::ChunkTerms<S> t = detail::chunk_terms(p, c0, n);
    const Mat<S> V = p.v.middleRows(c0, n);
    o.middleRows(c0, n) =
        p.scale * (ops.product(p.q.middleRows(c0, n).cwiseProduct(t.b), state) + ops.product(t.scores, V));
    state = (t.b.row(n - 1).transpose().asDiagonal() * state + ops.product(t.keys_to_end.transpose(), V)).eval();
  }
  return {std::move(o), std::move(state)};
}

// serial is State::step over the sequence, so Form::streamed and Form::serial coincide (as for LA).
// chunk and ops are used by Form::chunked only.
template <class S>
SeqResult<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  switch (form) {
    case Form::serial:
    case Form::streamed: return serial(p);
    case Form::materialized: return materialized(p);
    case Form::chunked: return chunked(p, chunk, ops);
  }
  throw std::invalid_argument("gla::run: unknown form");
}

// The GLA family (per-channel decays) for the batched driver and the harness (family.h).
struct Family {
  static constexpr std::string_view name = "gla";
  static constexpr std::array forms{Form::serial, Form::materialized, Form::chunked};
  template <class S>
  using Problem = gla::Problem<S>;
  template <class S>
  using Result = SeqResult<S>;
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return gla::run(p, form, chunk, ops);
  }
};
static_assert(MechanismFamily<Family>);

// (b, h)'s problem of a batched call: its rows of q, k, v, the decays a = e^{gk}, the scale (d_k^{-1/2}
// when not given) and its initial state.
template <class S>
Problem<S> head_problem(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Tensor<S>& gk,
                        std::optional<S> scale, const std::optional<Tensor<S>>& initial_state, std::int64_t b,
                        std::int64_t h) {
  Problem<S> p{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h),
               Mat<S>(head_rows(gk, b, h).unaryExpr([](const S& g) { return exp_of(g); })),
               scale ? *scale : delta_rule::default_scale<S>(q.dim(3)), {}};
  if (initial_state) p.initial_state = head_state(*initial_state, b, h);
  return p;
}

// FLA's conventions: q, k [B, T, H, d_k], v [B, T, H, d_v], gk [B, T, H, d_k] log-decays (≤ 0);
// scale defaults to d_k^{-1/2}; optional initial state and the final state [B, H, d_k, d_v]; `operands`
// rounds the chunked form's product operands (the io grade's baseline, see chunked).
template <class S>
delta_rule::BatchedResult<S> gla_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Tensor<S>& gk,
                                         std::optional<std::type_identity_t<S>> scale = {},
                                         const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                                         Form form = Form::serial, Eigen::Index chunk = 64,
                                         OperandFormat operands = OperandFormat::none) {
  const BatchedDims d = batched_dims(q, k, v, initial_state ? &*initial_state : nullptr);
  require_shape(gk, "gk", {d.B, d.T, d.H, d.K});
  delta_rule::BatchedResult<S> r(d);
  run_each_head<Family, S>(
      d.B, d.H, form, chunk, operands,
      [&](std::int64_t b, std::int64_t h) { return head_problem(q, k, v, gk, scale, initial_state, b, h); },
      [&](std::int64_t b, std::int64_t h, const SeqResult<S>& res) { r.set_head(b, h, res); });
  return r;
}

}  // namespace larc::ref::gla
