// The backward verb of linear attention (SPEC "Baselines", LA): the reverse-mode adjoint of
// linear_attention::serial, the gradient oracle (docs/gradients.md, "Linear attention"). For the loss
//
//     L = Σ_t ⟨do_t, o_t⟩ + ⟨dS_T, S_T⟩ + ⟨dz_T, z_T⟩
//
// of S_t = S_{t−1} + φ(k_t) v_t^T, z_t = z_{t−1} + φ(k_t) and the plain read o_t = scale · S_t^T φ(q_t)
// or the ratio read o_t = S_t^T φ(q_t) / (z_t^T φ(q_t) + ε), backward returns ∂L/∂ of every input of
// Problem (q, k, v, S_0, z_0); scale and ε are fixed parameters.
//
// Two layers: feature_space_backward is the adjoint with respect to the features φ(q), φ(k); it uses
// + − × (and ÷ for the ratio read, where the forward divides), so it is exact over rationals.
// feature_rows_backward is the feature map's chain rule, applied outside it; for the identity map it
// is the identity, so with identity features the whole of backward runs exactly in rationals, while
// ELU + 1 needs e^x for negative inputs (every rung but the exact one).
#pragma once

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <vector>

#include "larc/reference/checkpointed_reverse.h"
#include "larc/reference/linear_attention.h"

namespace larc::ref::linear_attention {

// The cotangents of the outputs: do (T×d_v), the final memory's dS_T (d_k×d_v) and dz_T (d_k). An
// empty d_o or an absent final cotangent counts as zero.
template <class S>
struct Cotangents {
  Mat<S> d_o;
  std::optional<Mat<S>> d_final_state;
  std::optional<Vec<S>> d_final_normalizer;
};

// ∂L/∂ of each input of Problem, in its shape (the initial memory's whether or not the problem has one).
template <class S>
struct Gradients {
  Mat<S> dq, dk, dv;          // T×d_k, T×d_k, T×d_v
  Mat<S> d_initial_state;     // d_k×d_v
  Vec<S> d_initial_normalizer;  // d_k
};

namespace detail {

// One token of State::step's write, in its order of operations: m ← (S_t, z_t) from m = (S_{t−1}, z_{t−1}).
template <class S>
void write(const Mat<S>& phi_k, const Mat<S>& v, Eigen::Index t, Memory<S>& m) {
  m.s.noalias() += phi_k.row(t).transpose() * v.row(t);
  m.z += phi_k.row(t).transpose();
}

template <class S>
void validate_cotangents(const Problem<S>& p, const Cotangents<S>& c) {
  auto need = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("linear_attention::backward: ") + what);
  };
  validate_output_cotangents("linear_attention", p.T(), p.dk(), p.dv(), c.d_o, c.d_final_state);
  need(!c.d_final_normalizer || c.d_final_normalizer->size() == p.dk(), "d_final_normalizer must have d_k entries");
}

}  // namespace detail

// The adjoint of serial with respect to the features: p's q and k are read as φ(q), φ(k) (p.opt.feature
// must be the identity; backward applies the map first). With D_t = ∂L/∂S_t and E_t = ∂L/∂z_t (o_t's own
// term included; the write is the identity on (S, z), so the adjoints only accumulate backwards):
//   plain:  D_t = D_{t+1} + scale q_t do_t^T,   E_t = E_{t+1},   dq_t = scale S_t do_t
//   ratio:  with den_t = z_t^T q_t + ε, r_t = do_t / den_t and e_t = −(o_t·do_t) / den_t:
//           D_t = D_{t+1} + q_t r_t^T,   E_t = E_{t+1} + e_t q_t,   dq_t = S_t r_t + e_t z_t
//   D_{T+1} = dS_T, E_{T+1} = dz_T;   dv_t = D_t^T k_t,   dk_t = D_t v_t + E_t,   dS_0 = D_1,   dz_0 = E_1.
// Checkpointed every `checkpoint` tokens (checkpointed_reverse.h): the memories are recomputed from
// checkpoints with serial's own operations, never by subtracting a write.
template <class S>
Gradients<S> feature_space_backward(const Problem<S>& p, const Cotangents<S>& c, Eigen::Index checkpoint = 64) {
  validate(p);
  detail::validate_cotangents(p, c);
  if (p.opt.feature != FeatureMap::identity)
    throw std::invalid_argument("linear_attention::feature_space_backward: q and k must already be features");
  const Eigen::Index T = p.T(), K = p.dk(), V = p.dv();
  Gradients<S> g{Mat<S>::Zero(T, K), Mat<S>::Zero(T, K), Mat<S>::Zero(T, V), {}, {}};
  Mat<S> d_state = c.d_final_state ? *c.d_final_state : Mat<S>::Zero(K, V);              // D_t, carried backwards
  Vec<S> d_normalizer = c.d_final_normalizer ? *c.d_final_normalizer : Vec<S>::Zero(K);  // E_t
  const bool has_do = c.d_o.size() != 0;
  reverse_over_states(
      start_memory(p), T, checkpoint, [&p](Eigen::Index t, Memory<S>& m) { detail::write(p.k, p.v, t, m); },
      [&](Eigen::Index t, const Memory<S>&, const Memory<S>& m) {  // m = (S_t, z_t)
        const auto q = p.q.row(t).transpose();
        if (has_do) {
          const auto d_o = c.d_o.row(t).transpose();
          if (!p.opt.ratio) {
            const Vec<S> r = p.opt.scale * d_o;
            d_state.noalias() += q * r.transpose();
            g.dq.row(t) = (m.s * r).transpose();
          } else {
            const S den = S(m.z.dot(q)) + p.opt.eps;
            const Vec<S> o = read(p.opt, m, Vec<S>(q));
            const Vec<S> r = d_o / den;
            const S e = -S(o.dot(d_o)) / den;
            d_state.noalias() += q * r.transpose();
            d_normalizer += e * q;
            g.dq.row(t) = (m.s * r + e * m.z).transpose();
          }
        }
        g.dv.row(t) = (d_state.transpose() * p.k.row(t).transpose()).transpose();
        g.dk.row(t) = (d_state * p.v.row(t).transpose() + d_normalizer).transpose();
      });
  g.d_initial_state = std::move(d_state);
  g.d_initial_normalizer = std::move(d_normalizer);
  return g;
}

// The feature map's chain rule, row-wise: dx = φ'(x) ⊙ dφ. For ELU + 1, φ'(x) = 1 for x > 0 and
// e^x = φ(x) for x ≤ 0 (continuous at 0, where both are 1).
template <class S>
Mat<S> feature_rows_backward(FeatureMap f, const Mat<S>& x, const Mat<S>& d_features) {
  if (f == FeatureMap::identity) return d_features;
  return x.binaryExpr(d_features, [](const S& e, const S& d) { return e > S(0) ? d : S(exp_of(e) * d); });
}

// The problem with the feature map applied: q ← φ(q), k ← φ(k), identity features (the same values
// serial computes, entry by entry).
template <class S>
Problem<S> with_features_applied(const Problem<S>& p) {
  Problem<S> r = p;
  r.q = feature_rows(p.opt.feature, p.q);
  r.k = feature_rows(p.opt.feature, p.k);
  r.opt.feature = FeatureMap::identity;
  return r;
}

// ∂L/∂ of q, k, v, S_0, z_0: feature_space_backward on the features, then the feature map's chain rule.
template <class S>
Gradients<S> backward(const Problem<S>& p, const Cotangents<S>& c, Eigen::Index checkpoint = 64) {
  if (p.opt.feature == FeatureMap::identity) return feature_space_backward(p, c, checkpoint);
  Gradients<S> g = feature_space_backward(with_features_applied(p), c, checkpoint);
  g.dq = feature_rows_backward(p.opt.feature, p.q, g.dq);
  g.dk = feature_rows_backward(p.opt.feature, p.k, g.dk);
  return g;
}

// la_batched's inputs: dq, dk, dv [B, T, H, ·] and the initial memory's dS_0 [B, H, d_k, d_v] of
// L = Σ ⟨do, o⟩ + ⟨dht, final_state⟩ over sequences and heads (the normaliser's cotangent zero).
template <class S>
struct BatchedGradients {
  Tensor<S> dq, dk, dv, d_initial_state;
};

template <class S>
BatchedGradients<S> la_backward_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Options<S>& opt,
                                        const BatchedCotangents<S>& cot,
                                        const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                                        Eigen::Index checkpoint = 64) {
  const BatchedDims d = batched_dims(q, k, v, initial_state ? &*initial_state : nullptr);
  const auto [B, T, H, K, V] = d;
  cot.require_shapes(d);
  BatchedGradients<S> r{Tensor<S>({B, T, H, K}), Tensor<S>({B, T, H, K}), Tensor<S>({B, T, H, V}), Tensor<S>({B, H, K, V})};
  for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const Problem<S> p = head_problem(q, k, v, opt, initial_state, std::optional<Tensor<S>>(), b, h);
    const Gradients<S> g = backward(p, Cotangents<S>{cot.head_d_o(b, h), cot.head_d_final_state(b, h), {}}, checkpoint);
    set_head_rows(r.dq, b, h, g.dq);
    set_head_rows(r.dk, b, h, g.dk);
    set_head_rows(r.dv, b, h, g.dv);
    set_head_state(r.d_initial_state, b, h, g.d_initial_state);
  });
  return r;
}

}  // namespace larc::ref::linear_attention
