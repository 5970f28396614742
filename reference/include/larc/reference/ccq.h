// CCQ, curvature-conditioned query (SPEC §2): a read-side change on a backbone (GLA: gla.h, GDN:
// delta_rule.h); the write rule and the state are the backbone's, untouched.
//
//     C_t = Σ_{j≤t} w_tj k_j k_j^T,  m_t = Σ_{j≤t} w_tj k_j,  n_t = Σ_{j≤t} w_tj,  Σ_t = C_t/n_t − m_t m_t^T/n_t²
//     λ_t = σ(w^T q_t + b);   q̃_t = (I − λ_t Σ_t) q_t;   o_t = backbone read with q̃_t instead of q_t
//
// Uniform covariance (default): w_tj = 1, so n_t = t and Σ_t = C_t/t − m_t m_t^T/t² (SPEC §2).
// Decayed covariance: w_tj = Π_{r=j+1..t} γ_r with γ the backbone's scalar decay (GDN's α; GLA's gate
// when it is the same on every channel, otherwise Options::decay must give it), i.e. the statistics
// decay like the state: C_t = γ_t C_{t−1} + k_t k_t^T, m_t = γ_t m_{t−1} + k_t, n_t = γ_t n_{t−1} + 1.
//
// Verbs: serial (q̃ by the recurrence, then the backbone's serial form), chunked (q̃ chunkwise from the
// chunk-start statistics plus the in-chunk prefix, then the backbone's chunked form), State::step /
// streamed (statistics and backbone state advanced together, one token at a time).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "larc/reference/delta_rule.h"
#include "larc/reference/family.h"
#include "larc/reference/gla.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/types.h"

namespace larc::ref::ccq {

enum class Covariance { uniform, decayed };

template <class S>
struct Options {
  Vec<S> w;                      // d_k: λ_t = σ(w^T q_t + b)
  S b = S(0);
  std::optional<Vec<S>> lambda;  // T values of λ_t given directly (exact runs: σ needs exp); overrides w, b
  Covariance covariance = Covariance::uniform;
  std::optional<Vec<S>> decay;   // T scalar decays γ_t for the decayed covariance; default the backbone's
};

// The running key statistics: one d_k×d_k matrix, one d_k vector and the total weight n.
template <class S>
struct KeyStats {
  Mat<S> c;
  Vec<S> m;
  S n = S(0);
};

template <class S>
KeyStats<S> empty_stats(Eigen::Index dk) {
  return {Mat<S>::Zero(dk, dk), Vec<S>::Zero(dk), S(0)};
}

template <class S>
void absorb(KeyStats<S>& st, const Vec<S>& k, const S& gamma) {
  st.c = gamma * st.c;
  st.c.noalias() += k * k.transpose();
  st.m = gamma * st.m + k;
  st.n = gamma * st.n + S(1);
}

// Σ q = C q / n − m (m^T q) / n², from C q already formed.
template <class S>
Vec<S> sigma_times_given_cq(const Vec<S>& cq, const Vec<S>& m, const S& n, const Vec<S>& q) {
  return cq / n - m * (S(m.dot(q)) / (n * n));
}
template <class S>
Vec<S> sigma_times(const KeyStats<S>& st, const Vec<S>& q) {
  return sigma_times_given_cq<S>(Vec<S>(st.c * q), st.m, st.n, q);
}

template <class S, class Backbone>
struct Problem {
  Backbone backbone;  // delta_rule::Problem<S> (GDN) or gla::Problem<S>
  Options<S> opt;
  std::optional<KeyStats<S>> initial_stats;

  KeyStats<S> start_stats() const { return initial_stats ? *initial_stats : empty_stats<S>(backbone.dk()); }
};
template <class S>
using GdnProblem = Problem<S, delta_rule::Problem<S>>;
template <class S>
using GlaProblem = Problem<S, gla::Problem<S>>;

template <class S>
struct Result {
  Mat<S> o;
  Mat<S> final_state;  // the backbone's
  KeyStats<S> final_stats;
};

// The backbone's scalar decay per token, for the decayed covariance.
template <class S>
Vec<S> backbone_scalar_decay(const delta_rule::Problem<S>& p) {
  return p.alpha;
}
template <class S>
Vec<S> backbone_scalar_decay(const gla::Problem<S>& p) {
  for (Eigen::Index t = 0; t < p.T(); ++t)
    for (Eigen::Index i = 1; i < p.dk(); ++i)
      if (p.a(t, i) != p.a(t, 0))
        throw std::invalid_argument("ccq: opt.decay must be given for a decayed covariance on GLA with a per-channel gate "
                                    "(a_t differs across channels at t = " + std::to_string(t) + ")");
  return p.a.col(0);
}

template <class S, class B>
void validate(const Problem<S, B>& p) {
  validate(p.backbone);
  const auto T = p.backbone.T(), dk = p.backbone.dk();
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("ccq: " + what);
  };
  if (p.opt.lambda) need(p.opt.lambda->size() == T, "opt.lambda must have T entries");
  else need(p.opt.w.size() == dk, "opt.w must have d_k entries (or give opt.lambda)");
  if (p.opt.decay) need(p.opt.decay->size() == T, "opt.decay must have T entries");
  if (p.initial_stats)
    need(p.initial_stats->c.rows() == dk && p.initial_stats->c.cols() == dk && p.initial_stats->m.size() == dk,
         "initial_stats must hold a d_k×d_k matrix and a d_k vector");
}

// λ_t for every token.
template <class S, class B>
Vec<S> lambdas(const Problem<S, B>& p) {
  if (p.opt.lambda) return *p.opt.lambda;
  Vec<S> l(p.backbone.T());
  for (Eigen::Index t = 0; t < p.backbone.T(); ++t) l(t) = sigmoid(S(p.opt.w.dot(p.backbone.q.row(t).transpose()) + p.opt.b));
  return l;
}

// γ_t for every token: 1 (uniform) or the decays.
template <class S, class B>
Vec<S> covariance_decays(const Problem<S, B>& p) {
  if (p.opt.covariance == Covariance::uniform) return Vec<S>::Ones(p.backbone.T());
  return p.opt.decay ? *p.opt.decay : backbone_scalar_decay(p.backbone);
}

template <class S>
struct Conditioned {
  Mat<S> q;  // T×d_k, row t = q̃_t
  KeyStats<S> final_stats;
};

// q̃_t = q_t − λ_t Σ_t q_t with the statistics advanced token by token.
template <class S>
Conditioned<S> conditioned_queries_recurrent(const Mat<S>& q, const Mat<S>& k, const Vec<S>& lambda, const Vec<S>& gamma,
                                             KeyStats<S> st) {
  Mat<S> out(q.rows(), q.cols());
  for (Eigen::Index t = 0; t < q.rows(); ++t) {
    absorb(st, Vec<S>(k.row(t).transpose()), gamma(t));
    const Vec<S> qt = q.row(t).transpose();
    out.row(t) = (qt - lambda(t) * sigma_times(st, qt)).transpose();
  }
  return {std::move(out), std::move(st)};
}

// The same chunkwise: within a chunk (local i, j ≤ i), Γ_ij = Π_{r=j+1..i} γ_r and g_i = Π_{r≤i} γ_r,
//   C_i q_i = g_i C_c q_i + Σ_{j≤i} Γ_ij (q_i^T k_j) k_j,  m_i = g_i m_c + Σ_{j≤i} Γ_ij k_j,  n_i = g_i n_c + Σ_{j≤i} Γ_ij,
// i.e. CQ = Diag(g) Q C_c + ((Q K^T) ⊙ Γ ⊙ L) K, M = g m_c^T + (Γ ⊙ L) K; then the chunk's end statistics.
// Every matrix product goes through `ops` (matmul_operands.h): with an operand format it is the `io`
// grade's conditioner, whose rounded operands are Q and C_c (of Q C_c), Q and K (of Q K^T), (Q K^T) ⊙ Γ
// and K, Γ and K (of M; the weights n are the same product with 1 in place of K, so they read the same
// rounded Γ), and K^T Diag(Γ_last,·) and K (the next C). The per-token Σ_t q_t (its dot products and
// divisions), the rank-one g m_c^T and the carried statistics stay in S (docs/gate.md "Precision grades").
template <class S>
Conditioned<S> conditioned_queries_chunked(const Mat<S>& q, const Mat<S>& k, const Vec<S>& lambda, const Vec<S>& gamma,
                                           KeyStats<S> st, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  if (chunk < 1) throw std::invalid_argument("ccq::chunked: chunk size must be >= 1");
  const Eigen::Index T = q.rows(), dk = q.cols();
  Mat<S> out(T, dk);
  for (Eigen::Index c0 = 0; c0 < T; c0 += chunk) {
    const Eigen::Index n = std::min(chunk, T - c0);
    Mat<S> decay_ij = Mat<S>::Zero(n, n);
    Vec<S> g(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      decay_ij(i, i) = S(1);
      for (Eigen::Index j = i - 1; j >= 0; --j) decay_ij(i, j) = decay_ij(i, j + 1) * gamma(c0 + j + 1);
      g(i) = (i == 0 ? S(1) : g(i - 1)) * gamma(c0 + i);
    }
    const Mat<S> Q = q.middleRows(c0, n), K = k.middleRows(c0, n);
    const Mat<S> cq = g.asDiagonal() * ops.product(Q, st.c.transpose()) +
                      ops.product(ops.product(Q, K.transpose()).cwiseProduct(decay_ij), K);
    const Mat<S> M = g * st.m.transpose() + ops.product(decay_ij, K);
    const Vec<S> weight = g * st.n + ops.operand(decay_ij) * Vec<S>::Ones(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const Vec<S> qi = Q.row(i).transpose();
      const Vec<S> sq = sigma_times_given_cq<S>(cq.row(i).transpose(), M.row(i).transpose(), weight(i), qi);
      out.row(c0 + i) = (qi - lambda(c0 + i) * sq).transpose();
    }
    const Vec<S> to_end = decay_ij.row(n - 1).transpose();
    st.c = (g(n - 1) * st.c + ops.product(K.transpose() * to_end.asDiagonal(), K)).eval();
    st.m = M.row(n - 1).transpose();
    st.n = weight(n - 1);
  }
  return {std::move(out), std::move(st)};
}

namespace detail {
template <class S, class B, class Conditioner>
Result<S> read_with(const Problem<S, B>& p, Form form, Eigen::Index chunk, Conditioner&& conditioner,
                    const MatmulOperands<S>& ops = {}) {
  validate(p);
  Conditioned<S> cq = conditioner(p.backbone.q, p.backbone.k, lambdas(p), covariance_decays(p), p.start_stats());
  B bb = p.backbone;
  bb.q = std::move(cq.q);
  SeqResult<S> r = run(bb, form, chunk, ops);  // the backbone's own form (found by argument-dependent lookup)
  return {std::move(r.o), std::move(r.final_state), std::move(cq.final_stats)};
}
}  // namespace detail

template <class S, class B>
Result<S> serial(const Problem<S, B>& p) {
  return detail::read_with(p, Form::serial, 1, [](auto&&... a) { return conditioned_queries_recurrent<S>(a...); });
}

// The conditioner and the backbone's chunked form with the same `ops` (the io grade's baseline when
// it rounds: conditioned_queries_chunked's operands, then the backbone's, q̃ among them).
template <class S, class B>
Result<S> chunked(const Problem<S, B>& p, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  return detail::read_with(
      p, Form::chunked, chunk, [chunk, &ops](auto&&... a) { return conditioned_queries_chunked<S>(a..., chunk, ops); }, ops);
}

// Streaming: the statistics advance with the key, then the backbone's step reads with q̃.
template <class S, class BackboneState>
class State {
 public:
  State(BackboneState backbone, KeyStats<S> stats) : backbone_(std::move(backbone)), stats_(std::move(stats)) {}

  // λ and γ of this token, then the backbone's own step arguments after q and k (GDN: v, α, β, scale;
  // GLA: v, a, scale).
  template <class... BackboneArgs>
  Vec<S> step(const Vec<S>& q, const Vec<S>& k, const S& lambda, const S& gamma, const BackboneArgs&... args) {
    absorb(stats_, k, gamma);
    const Vec<S> q_tilde = q - lambda * sigma_times(stats_, q);
    return backbone_.step(q_tilde, k, args...);
  }
  const BackboneState& backbone() const { return backbone_; }
  const KeyStats<S>& stats() const { return stats_; }

 private:
  BackboneState backbone_;
  KeyStats<S> stats_;
};

template <class S>
Result<S> streamed(const GdnProblem<S>& p) {
  validate(p);
  const auto& bb = p.backbone;
  const Vec<S> lambda = lambdas(p), gamma = covariance_decays(p);
  State<S, delta_rule::State<S>> st(delta_rule::State<S>(bb.start_state()), p.start_stats());
  Mat<S> o(bb.T(), bb.dv());
  for (Eigen::Index t = 0; t < bb.T(); ++t)
    o.row(t) = st.step(bb.q.row(t).transpose(), bb.k.row(t).transpose(), lambda(t), gamma(t),
                       Vec<S>(bb.v.row(t).transpose()), bb.alpha(t), bb.beta(t), bb.scale).transpose();
  return {std::move(o), st.backbone().matrix(), st.stats()};
}

template <class S>
Result<S> streamed(const GlaProblem<S>& p) {
  validate(p);
  const auto& bb = p.backbone;
  const Vec<S> lambda = lambdas(p), gamma = covariance_decays(p);
  State<S, gla::State<S>> st(gla::State<S>(bb.start_state()), p.start_stats());
  Mat<S> o(bb.T(), bb.dv());
  for (Eigen::Index t = 0; t < bb.T(); ++t)
    o.row(t) = st.step(bb.q.row(t).transpose(), bb.k.row(t).transpose(), lambda(t), gamma(t),
                       Vec<S>(bb.v.row(t).transpose()), Vec<S>(bb.a.row(t).transpose()), bb.scale).transpose();
  return {std::move(o), st.backbone().matrix(), st.stats()};
}

// CCQ's forms: serial (recurrent conditioner, the backbone's serial form), chunked (chunkwise
// conditioner and the backbone's chunked form, both through ops) and streamed (State::step); chunk and
// ops are used by the chunked form only. CCQ has no materialized form.
template <class S, class B>
Result<S> run(const Problem<S, B>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  switch (form) {
    case Form::serial: return serial(p);
    case Form::chunked: return chunked(p, chunk, ops);
    case Form::streamed: return streamed(p);
    case Form::materialized: break;
  }
  throw std::invalid_argument(std::string("ccq::run: CCQ has no ") + form_name(form) + " form");
}

// CCQ on a backbone family (delta_rule::Family for GDN, gla::Family) for the batched driver and the
// harness (family.h).
template <MechanismFamily Backbone>
struct Family {
  static constexpr std::string_view name = "ccq";
  static constexpr std::array forms{Form::serial, Form::chunked, Form::streamed};
  template <class S>
  using Problem = ccq::Problem<S, typename Backbone::template Problem<S>>;
  template <class S>
  using Result = ccq::Result<S>;
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return ccq::run(p, form, chunk, ops);
  }
};
static_assert(MechanismFamily<Family<delta_rule::Family>> && MechanismFamily<Family<gla::Family>>);

}  // namespace larc::ref::ccq
