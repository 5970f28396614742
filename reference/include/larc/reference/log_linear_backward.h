// The backward verb of log-linear attention (SPEC §4), Mamba-2 and GDN variants: the gradient oracle
// (docs/gradients.md, "Log-linear attention"). For the loss
//
//     L = Σ_t ⟨do_t, o_t⟩
//
// of o_t = scale Σ_{s≤t} λ_t^{(ℓ(t,s))} q_t^T [Π_{r=s+1..t} M_r] w_s k_s v_s^T (log_linear.h), it returns
// ∂L/∂ of every input of Problem: q, k, v, the decays α, the steps β (GDN), the level scales λ and, for a
// problem with a start, its carried level states Z^{(ℓ)}. The problem returns no final state, so do is
// the only cotangent; scale and the start's offset t0 are fixed parameters.
//
// Two adjoints of the same function, computed independently:
//   backward              the adjoint of serial (the Fenwick recurrence: per-level states, cascade,
//                         transition, write, read), checkpointed; memory O((T/C + C) log T d_k d_v);
//   materialized_backward the adjoint of materialized, O = scale (H ⊙ A) V, through its T×T matrices
//                         (O(T²) memory: moderate T only).
// Both use + − × only, so over rationals they are exact and must agree entry by entry.
// baseline_lambda_backward and lambda_mlp_backward map dλ to the λ parameterisations of
// log_linear_lambda.h (softplus, softmax, GELU: not exact).
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "larc/reference/checkpointed_reverse.h"
#include "larc/reference/delta_rule_backward.h"
#include "larc/reference/fenwick.h"
#include "larc/reference/log_linear.h"
#include "larc/reference/log_linear_lambda.h"

namespace larc::ref::log_linear {

// ∂L/∂ of each input of Problem, in its shape.
template <class S>
struct Gradients {
  Mat<S> dq, dk, dv;    // T×d_k, T×d_k, T×d_v
  Vec<S> dalpha;        // T
  Vec<S> dbeta;         // T (zero for Mamba-2, whose β is ignored)
  Mat<S> dlambda;       // T×L like p.lambda; 0 at levels not live at t and in spare columns
  std::vector<Mat<S>> d_start_states;  // like p.start->level_states (empty without a start)
};

namespace detail {

template <class S>
Gradients<S> zero_gradients(const Problem<S>& p) {
  const Eigen::Index T = p.T();
  Gradients<S> g{Mat<S>::Zero(T, p.dk()), Mat<S>::Zero(T, p.dk()), Mat<S>::Zero(T, p.dv()),
                 Vec<S>::Zero(T),         Vec<S>::Zero(T),         Mat<S>::Zero(T, p.lambda.cols()), {}};
  if (p.start) g.d_start_states.assign(p.start->level_states.size(), Mat<S>::Zero(p.dk(), p.dv()));
  return g;
}

template <class S>
S step_of(const Problem<S>& p, Eigen::Index t) {
  return p.variant == Variant::gdn ? p.beta(t) : S(1);  // serial passes 1 for Mamba-2
}

// One token of serial without its read: state ← the levels after token t from the levels before it.
template <class S>
void absorb_token(const Problem<S>& p, Eigen::Index t, State<S>& state) {
  state.cascade();
  state.absorb(p.k.row(t).transpose(), p.v.row(t).transpose(), p.alpha(t), step_of(p, t));
}

// The levels merged by the cascade before a token, in the order it merges them: (ℓ, whether level ℓ+1
// was empty, so that ℓ was moved rather than added). Simulated on the counts, as LevelStack::cascade runs.
template <class S>
std::vector<std::pair<int, bool>> cascade_merges(const LevelStack<S>& levels, int level_limit) {
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(level_limit) + 2, 0);
  for (int l = 0; l <= level_limit; ++l) counts[static_cast<std::size_t>(l)] = levels.count(static_cast<std::size_t>(l));
  std::vector<std::pair<int, bool>> merges;
  for (std::size_t l = 0; l + 1 < counts.size() && counts[l] == (std::uint64_t{1} << l); ++l) {
    merges.emplace_back(static_cast<int>(l), counts[l + 1] == 0);
    counts[l + 1] += counts[l];
    counts[l] = 0;
  }
  return merges;
}

}  // namespace detail

// The adjoint of serial (docs/gradients.md, "Log-linear attention"). D^{(ℓ)} = ∂L/∂S^{(ℓ)}, one per level,
// carried backwards; per token t, undoing serial's step in reverse order:
//   read     dq_t = scale Σ_ℓ λ_t^{(ℓ)} S^{(ℓ)} do_t,  dλ_t^{(ℓ)} = scale q_t^T S^{(ℓ)} do_t,
//            D^{(ℓ)} += scale λ_t^{(ℓ)} q_t do_t^T                   (live levels after the write)
//   write    level 0 = w_t k_t v_t^T:  dv_t = w_t D^{(0)T} k_t,  dk_t += w_t D^{(0)} v_t,
//            dβ_t += k_t^T D^{(0)} v_t (GDN);  then D^{(0)} = 0 (level 0 was empty before the write)
//   transit  every other live level P (as the cascade left it), S^{(ℓ)} = M_t P:
//            Mamba-2: dα_t += ⟨P, D⟩,  D ← α_t D;
//            GDN (delta_rule's adjoint with a zero value): with p = P^T k_t, d = D^T k_t,
//            dα_t += ⟨P, D⟩ − β_t p·d,  dβ_t −= α_t p·d,  dk_t −= α_t β_t (D p + P d),
//            D ← α_t (I − β_t k_t k_t^T) D
//   cascade  each merge of level ℓ into ℓ+1, last first: D^{(ℓ)} = D^{(ℓ+1)}, and D^{(ℓ+1)} = 0 if
//            level ℓ+1 was empty (ℓ was moved, not added).
// Checkpointed every `checkpoint` tokens (checkpointed_reverse.h): the level stacks are recomputed
// with serial's own cascade and absorb, never by inverting a transition (α may be 0). With a start, the
// sweep begins from its carried levels, and after token 0 each D^{(ℓ)} of a carried level ℓ is ∂L/∂Z^{(ℓ)}
// (the cascade before token 0 merges nothing: level 0 is empty).
template <class S>
Gradients<S> backward(const Problem<S>& p, const Mat<S>& d_o, Eigen::Index checkpoint = 64) {
  validate(p);
  validate_output_cotangents("log_linear", p.T(), p.dk(), p.dv(), d_o, std::optional<Mat<S>>{});
  const Eigen::Index T = p.T(), K = p.dk(), V = p.dv();
  Gradients<S> g = detail::zero_gradients(p);
  if (T == 0) return g;
  // levels 0..level_limit−1 are used
  const int level_limit = fenwick::level_count(p.offset() + static_cast<std::uint64_t>(T));
  std::vector<Mat<S>> d_levels(static_cast<std::size_t>(level_limit) + 1, Mat<S>::Zero(K, V));
  const bool is_gdn = p.variant == Variant::gdn;
  reverse_over_states(
      initial_state(p), T, checkpoint,
      [&p](Eigen::Index t, State<S>& state) { detail::absorb_token(p, t, state); },
      [&](Eigen::Index t, const State<S>& before, const State<S>& after) {
        const auto q = p.q.row(t).transpose();
        const auto k = p.k.row(t).transpose();
        const auto v = p.v.row(t).transpose();
        const S alpha = p.alpha(t), beta = detail::step_of(p, t);
        if (d_o.size() != 0) {
          const auto d_o_t = d_o.row(t).transpose();
          after.levels().for_each_live([&](int l, const Mat<S>& level) {
            const Vec<S> read = level * d_o_t;  // S^{(ℓ)} do_t
            g.dlambda(t, l) = p.scale * S(q.dot(read));
            g.dq.row(t) += (p.scale * p.lambda(t, l) * read).transpose();
            d_levels[static_cast<std::size_t>(l)].noalias() += (p.scale * p.lambda(t, l) * q) * d_o_t.transpose();
          });
        }
        Mat<S>& d_written = d_levels[0];
        g.dv.row(t) = (beta * (d_written.transpose() * k)).transpose();
        g.dk.row(t) = (beta * (d_written * v)).transpose();
        if (is_gdn) g.dbeta(t) = k.dot(d_written * v);
        d_written.setZero();
        State<S> cascaded = before;
        cascaded.cascade();
        cascaded.levels().for_each_live([&](int l, const Mat<S>& prev) {
          Mat<S>& d = d_levels[static_cast<std::size_t>(l)];
          g.dalpha(t) += prev.cwiseProduct(d).sum();
          if (!is_gdn) {
            d *= alpha;
            return;
          }
          const Vec<S> pk = prev.transpose() * k, dk = d.transpose() * k;
          const S overlap = pk.dot(dk);
          g.dalpha(t) -= beta * overlap;
          g.dbeta(t) -= alpha * overlap;
          g.dk.row(t) -= (alpha * beta * (d * pk + prev * dk)).transpose();
          d -= (beta * k) * dk.transpose();
          d *= alpha;
        });
        const auto merges = detail::cascade_merges(before.levels(), level_limit);
        for (auto it = merges.rbegin(); it != merges.rend(); ++it) {
          const auto [l, moved] = *it;
          d_levels[static_cast<std::size_t>(l)] = d_levels[static_cast<std::size_t>(l) + 1];
          if (moved) d_levels[static_cast<std::size_t>(l) + 1].setZero();
        }
      });
  const std::vector<int> carried = fenwick::carried_levels(p.offset());
  for (std::size_t i = 0; i < g.d_start_states.size(); ++i) g.d_start_states[i] = d_levels[static_cast<std::size_t>(carried[i])];
  return g;
}

// The adjoint of materialized (docs/gradients.md, "Log-linear attention"): with W = H ⊙ A, O = scale W V,
//   dV = scale W^T dO,   dW = scale dO V^T (s ≤ t),   dλ_t^{(ℓ)} = Σ_{s: ℓ(t,s)=ℓ} dW_ts A_ts,
//   dA = H ⊙ dW, then the adjoint of A:
//   Mamba-2, A = (Q K^T) ⊙ Dp with Dp_ts = Π_{r=s+1..t} α_r:  G = dA ⊙ Dp,  dQ = G K,  dK = G^T Q,
//            dα_r = Σ_{t≥r} Dp_tr X_tr with X_tr = Σ_{s<r} (dA ⊙ Q K^T)_ts Dp_{r−1,s}
//            (∂Dp_ts/∂α_r = Dp_{r−1,s} Dp_tr, a product: no division by α_r);
//   GDN, A = delta_rule::materialized over the values I_T: delta_rule::backward with do = dA.
// With a start, the carried reads R_ℓ (row t = q_t^T [Π_{r=0..t} M_r] Z^{(ℓ)}, weighted by λ_t at the
// bucket's level ℓ_t for position t0 + t) add dλ_t^{(ℓ_t)} += scale do_t·R_ℓ[t] and dR_ℓ[t] = scale λ_t^{(ℓ_t)} do_t:
//   Mamba-2, R_ℓ[t] = P_t Z^{(ℓ)T} q_t with P_t = Π_{r=0..t} α_r:  dq_t += P_t Z^{(ℓ)} dR_ℓ[t],
//            dZ^{(ℓ)} = Σ_t P_t q_t dR_ℓ[t]^T,  dα_r += Σ_{t≥r} dP_t P_{r−1} Dp_tr  (dP_t = Σ_ℓ q_t^T Z^{(ℓ)} dR_ℓ[t]);
//   GDN, one delta_rule problem over the values [I_T | 0] from the initial state [0 | Z^{(ℓ1)} | …], whose
//            outputs are [A | R_ℓ1 | …]: delta_rule::backward with do = [dA | dR_ℓ1 | …] (its dS_0 holds dZ).
// O(T² (d_k + d_v)) time and O(T²) memory.
template <class S>
Gradients<S> materialized_backward(const Problem<S>& p, const Mat<S>& d_o) {
  validate(p);
  validate_output_cotangents("log_linear", p.T(), p.dk(), p.dv(), d_o, std::optional<Mat<S>>{});
  const Eigen::Index T = p.T();
  Gradients<S> g = detail::zero_gradients(p);
  if (T == 0 || d_o.size() == 0) return g;
  const std::uint64_t t0 = p.offset();
  const std::vector<int> carried = fenwick::carried_levels(t0);
  const std::vector<Mat<S>> reads = detail::carried_reads(p);
  const auto n_carried = static_cast<Eigen::Index>(reads.size());
  std::vector<Mat<S>> d_reads(reads.size(), Mat<S>(T, p.dv()));
  Mat<S> a, scores, decays;
  if (p.variant == Variant::mamba2) {
    scores = p.q * p.k.transpose();
    decays = detail::decay_products(p.alpha);
    a = scores.cwiseProduct(decays);
  } else {
    const delta_rule::Problem<S> identity_values{p.q, p.k, Mat<S>::Identity(T, T), p.alpha, p.beta, S(1), {}};
    a = delta_rule::materialized(identity_values).o;
  }
  const Mat<S> weighted = detail::weight_by_level(a, p.lambda, 0, t0);  // W = H ⊙ A
  g.dv = p.scale * (weighted.transpose() * d_o);
  const Mat<S> d_weighted = p.scale * (d_o * p.v.transpose());
  for (Eigen::Index t = 0; t < T; ++t)
    for (Eigen::Index s = 0; s <= t; ++s)
      g.dlambda(t, fenwick::level(t0 + static_cast<std::uint64_t>(t), t0 + static_cast<std::uint64_t>(s))) +=
          d_weighted(t, s) * a(t, s);
  for (std::size_t i = 0; i < reads.size(); ++i)
    for (Eigen::Index t = 0; t < T; ++t) {
      const int l = detail::carried_level_at(t0 + static_cast<std::uint64_t>(t), t0, carried[i]);
      g.dlambda(t, l) += p.scale * S(d_o.row(t).dot(reads[i].row(t)));
      d_reads[i].row(t) = (p.scale * p.lambda(t, l)) * d_o.row(t);
    }
  const Mat<S> d_a = detail::weight_by_level(d_weighted, p.lambda, 0, t0);  // H ⊙ dW, zero above the diagonal
  if (p.variant == Variant::gdn) {
    const Eigen::Index dv = p.dv();
    delta_rule::Problem<S> identity_values{p.q, p.k, Mat<S>::Zero(T, T + n_carried * dv), p.alpha, p.beta, S(1), {}};
    identity_values.v.leftCols(T) = Mat<S>::Identity(T, T);
    Mat<S> d_out(T, T + n_carried * dv);
    d_out.leftCols(T) = d_a;
    if (n_carried > 0) {
      identity_values.initial_state = Mat<S>::Zero(p.dk(), T + n_carried * dv);
      for (Eigen::Index i = 0; i < n_carried; ++i) {
        identity_values.initial_state->middleCols(T + i * dv, dv) = p.start->level_states[static_cast<std::size_t>(i)];
        d_out.middleCols(T + i * dv, dv) = d_reads[static_cast<std::size_t>(i)];
      }
    }
    const delta_rule::Gradients<S> dg = delta_rule::backward(identity_values, delta_rule::Cotangents<S>{d_out, {}});
    g.dq = dg.dq;
    g.dk = dg.dk;
    g.dalpha = dg.dalpha;
    g.dbeta = dg.dbeta;
    for (Eigen::Index i = 0; i < n_carried; ++i)
      g.d_start_states[static_cast<std::size_t>(i)] = dg.d_initial_state.middleCols(T + i * dv, dv);
    return g;
  }
  const Mat<S> gated = d_a.cwiseProduct(decays);
  g.dq = gated * p.k;
  g.dk = gated.transpose() * p.q;
  const Mat<S> d_decays = d_a.cwiseProduct(scores);
  for (Eigen::Index t = 0; t < T; ++t) {
    S x = S(0);  // X_tr, built up as X_{t,r+1} = α_r X_tr + dDp_tr from X_t1 = dDp_t0
    for (Eigen::Index r = 1; r <= t; ++r) {
      x = (r == 1 ? S(0) : S(p.alpha(r - 1) * x)) + d_decays(t, r - 1);
      g.dalpha(r) += decays(t, r) * x;
    }
  }
  if (n_carried == 0) return g;
  Vec<S> through(T), d_through = Vec<S>::Zero(T);  // P_t = Π_{r=0..t} α_r and ∂L/∂P_t
  for (Eigen::Index t = 0; t < T; ++t) through(t) = t == 0 ? p.alpha(0) : S(through(t - 1) * p.alpha(t));
  for (Eigen::Index i = 0; i < n_carried; ++i) {
    const Mat<S>& z = p.start->level_states[static_cast<std::size_t>(i)];
    const Mat<S>& dr = d_reads[static_cast<std::size_t>(i)];
    g.dq += through.asDiagonal() * (dr * z.transpose());
    g.d_start_states[static_cast<std::size_t>(i)] = p.q.transpose() * (through.asDiagonal() * dr);
    d_through += (p.q * z).cwiseProduct(dr).rowwise().sum();
  }
  for (Eigen::Index r = 0; r < T; ++r) {
    const S before = r == 0 ? S(1) : through(r - 1);  // P_{r−1}
    for (Eigen::Index t = r; t < T; ++t) g.dalpha(r) += d_through(t) * before * decays(t, r);
  }
  return g;
}

// The log-decay front end (α = e^g): dg_t = α_t dα_t, as for the delta rule.
using delta_rule::log_decay_gradient;

// The baseline λ parameterisation (log_linear_lambda.h), λ(t, ℓ) = softplus(L_ℓ dl(t, ℓ)): with
// σ_tℓ = sigmoid(L_ℓ dl(t, ℓ)) = softplus', d dl(t, ℓ) = σ_tℓ L_ℓ dλ(t, ℓ) and dL_ℓ = Σ_t σ_tℓ dl(t, ℓ) dλ(t, ℓ).
// Needs e^x: every rung but the exact one.
template <class S>
struct BaselineLambdaGradients {
  Mat<S> d_dl;              // T×L
  Vec<S> d_level_weights;   // L
};

template <class S>
BaselineLambdaGradients<S> baseline_lambda_backward(const Mat<S>& dl, const Vec<S>& level_weights, const Mat<S>& dlambda) {
  if (level_weights.size() != dl.cols() || dlambda.rows() != dl.rows() || dlambda.cols() != dl.cols())
    throw std::invalid_argument("log_linear::baseline_lambda_backward: dlambda must be T×L like dl, level_weights L");
  BaselineLambdaGradients<S> r{Mat<S>(dl.rows(), dl.cols()), Vec<S>::Zero(dl.cols())};
  for (Eigen::Index t = 0; t < dl.rows(); ++t)
    for (Eigen::Index l = 0; l < dl.cols(); ++l) {
      const S slope = sigmoid(S(level_weights(l) * dl(t, l)));
      r.d_dl(t, l) = slope * level_weights(l) * dlambda(t, l);
      r.d_level_weights(l) += slope * dl(t, l) * dlambda(t, l);
    }
  return r;
}

// The MLP parameterisations (LambdaMlp: λ_t = act(z_t), z_t = W2 GELU(a_t) + b2, a_t = W1 dl_t + b1): the
// gradients of dl and of W1, b1, W2, b2 from dλ. Per token, with g = dλ_t:
//   softplus: dz = σ(z) ⊙ g;   softmax: dz = λ_t ⊙ (g − (λ_t·g) 1)
//   dW2 += dz GELU(a)ᵀ,  db2 += dz,  da = GELU'(a) ⊙ (W2ᵀ dz),  dW1 += da dl_tᵀ,  db1 += da,  d dl_t = W1ᵀ da,
// GELU'(x) = Φ(x) + x φ(x) with Φ(x) = (1 + erf(x/√2))/2, φ(x) = e^{−x²/2}/√(2π). Needs erf, e^x and √:
// every rung but the exact one.
template <class S>
struct LambdaMlpGradients {
  Mat<S> d_dl;       // T×L
  Mat<S> dw1;        // h×L
  Vec<S> db1;        // h
  Mat<S> dw2;        // L×h
  Vec<S> db2;        // L
};

template <class S>
LambdaMlpGradients<S> lambda_mlp_backward(const LambdaMlp<S>& mlp, const Mat<S>& dl, const Mat<S>& dlambda) {
  const Eigen::Index L = mlp.levels(), h = mlp.hidden();
  if (dl.cols() != L || dlambda.rows() != dl.rows() || dlambda.cols() != L)
    throw std::invalid_argument("log_linear::lambda_mlp_backward: dl and dlambda must be T×L with L = " + std::to_string(L) +
                                " (the MLP's levels)");
  if constexpr (ScalarTraits<S>::exact) no_transcendental<S>("erf");
  using std::acos;
  const S half = from_double<S>(0.5), inv_sqrt2 = S(1) / sqrt_of(from_double<S>(2.0));
  const S inv_sqrt_2pi = S(1) / sqrt_of(S(from_double<S>(2.0) * S(acos(S(-1)))));
  LambdaMlpGradients<S> g{Mat<S>(dl.rows(), L), Mat<S>::Zero(h, L), Vec<S>::Zero(h), Mat<S>::Zero(L, h), Vec<S>::Zero(L)};
  for (Eigen::Index t = 0; t < dl.rows(); ++t) {
    const Vec<S> x = dl.row(t).transpose(), d_lambda = dlambda.row(t).transpose();
    const Vec<S> a = mlp.w1 * x + mlp.b1;
    const Vec<S> hidden = a.unaryExpr([](const S& y) { return gelu(y); });
    const Vec<S> z = mlp.w2 * hidden + mlp.b2;
    Vec<S> dz;
    if (mlp.activation == LambdaActivation::softplus) {
      dz = z.unaryExpr([](const S& y) { return sigmoid(y); }).cwiseProduct(d_lambda);
    } else {
      const Vec<S> lambda = mlp(x);
      dz = lambda.cwiseProduct((d_lambda.array() - S(lambda.dot(d_lambda))).matrix());
    }
    g.dw2.noalias() += dz * hidden.transpose();
    g.db2 += dz;
    const Vec<S> slope = a.unaryExpr([&](const S& y) {
      return S(half * (S(1) + erf_of(S(y * inv_sqrt2))) + y * exp_of(S(-half * y * y)) * inv_sqrt_2pi);
    });
    const Vec<S> da = slope.cwiseProduct(mlp.w2.transpose() * dz);
    g.dw1.noalias() += da * x.transpose();
    g.db1 += da;
    g.d_dl.row(t) = (mlp.w1.transpose() * da).transpose();
  }
  return g;
}

}  // namespace larc::ref::log_linear
