// VLA, Variational Linear Attention (SPEC §1). Per token t (1-indexed in the comments, 0-indexed rows):
//
//     k̂_t = norm(φ(k_t))
//     z_t = A_{t−1} u_t;  δ_t = max(1 + u_t^T z_t, stab_eps);  A_t = A_{t−1} − z_t z_t^T / δ_t   (Sherman–Morrison)
//     [optional nudge: A_t ← A_t + per_eps·I when t is a multiple of `period`]
//     α̂_t = norm(A_t k̂_t)                                   (the updated A_t)
//     S_t = S_{t−1} + (v_t − S_{t−1} k̂_t) α̂_t^T = S_{t−1} F_t + G_t,  F_t = I − k̂_t α̂_t^T, G_t = v_t α̂_t^T
//     ζ_t = ζ_{t−1} + φ(k_t)
//     o_t = S_t φ(q_t) / max(ζ_t^T φ(q_t), stab_eps)        (ratio read; plain read: scale · S_t φ(q_t))
//
// Orientation: the paper's S is d_v × d_k. Memory::s stores its transpose S^T (d_k × d_v), like every
// other family here and FLA's [B, H, d_k, d_v] states; the update on the stored matrix X = S^T is
// X_t = X_{t−1} + α̂_t (v_t − X_{t−1}^T k̂_t)^T = F_t^T X_{t−1} + G_t^T.
// A_0 = I/λ0. The penalty directions u_t are an input (authors_penalty_directions gives the authors'
// default u_t = norm(W_u k_t)/√d_k). `normalize = false` drops both normalisations (k̂ = φ(k),
// α = A_t φ(k)): the ablation of claim VLA-C2.
//
// Verbs: serial (the penalty recursion for every token, then the affine recursion, token by token),
// State::step / streamed (everything interleaved per token), scan (the penalty recursion, then the
// affine maps composed by the generic Blelloch scan of scan.h). The scan composes with one of three
// operators (ScanOperator); only the ones matching serial are correct, see compose_* below.
// chunked(p, C) (Woodbury for A, UT/WY for S, chunk by chunk) is in vla_chunked.h.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "larc/reference/family.h"
#include "larc/reference/linear_attention.h"
#include "larc/reference/scan.h"
#include "larc/reference/tensor.h"
#include "larc/reference/types.h"

namespace larc::ref::vla {

using linear_attention::FeatureMap;
using linear_attention::feature;

template <class S>
struct Options {
  S lambda0 = S(1);         // A_0 = I/λ0 (the authors' files use 0.1, 1 and 10)
  S stab_eps = S(1e-4);     // floor of δ_t and of the ratio's denominator
  int nudge_period = 0;     // A ← A + nudge_eps·I after every `nudge_period`-th token; 0: off (authors: 20)
  S nudge_eps = S(1e-3);    // (authors: 1e-3)
  FeatureMap feature = FeatureMap::elu_plus_one;
  bool ratio = true;        // ratio read (the paper's); false: plain read scale · S φ(q)
  S scale = S(1);           // plain read only
  bool normalize = true;    // false: k̂ = φ(k), α = A φ(k) unnormalised (VLA-C2's ablation)
};

// The recurrent memory. s = S^T (d_k × d_v), a = A (d_k × d_k), zeta = ζ (d_k); tokens counts the tokens
// written so far, so that the nudge keeps its phase across split runs.
template <class S>
struct Memory {
  Mat<S> s, a;
  Vec<S> zeta;
  std::int64_t tokens = 0;
};

template <class S>
struct Problem {
  Mat<S> q, k, v;  // T×d_k, T×d_k (raw keys), T×d_v
  Mat<S> u;        // T×d_k penalty directions
  Options<S> opt;
  std::optional<Memory<S>> initial;  // empty memory with A_0 = I/λ0 when absent

  Eigen::Index T() const { return q.rows(); }
  Eigen::Index dk() const { return q.cols(); }
  Eigen::Index dv() const { return v.cols(); }
};

template <class S>
struct Result {
  Mat<S> o;  // T×d_v
  Memory<S> final_memory;
};

template <class S>
Memory<S> empty_memory(const Options<S>& opt, Eigen::Index dk, Eigen::Index dv) {
  return {Mat<S>::Zero(dk, dv), Mat<S>(Mat<S>::Identity(dk, dk) / opt.lambda0), Vec<S>::Zero(dk), 0};
}

template <class S>
Memory<S> start_memory(const Problem<S>& p) {
  return p.initial ? *p.initial : empty_memory(p.opt, p.dk(), p.dv());
}

template <class S>
void validate(const Problem<S>& p) {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("vla: " + what);
  };
  need(p.dk() >= 1 && p.dv() >= 1, "q and v must have at least one column (d_k, d_v >= 1)");
  need(p.k.rows() == p.T() && p.k.cols() == p.dk(), "k must be T×d_k like q");
  need(p.v.rows() == p.T(), "v must have T rows like q");
  need(p.u.rows() == p.T() && p.u.cols() == p.dk(), "u (penalty directions) must be T×d_k like q");
  need(p.opt.lambda0 > S(0), "opt.lambda0 must be > 0");
  need(p.opt.stab_eps > S(0), "opt.stab_eps must be > 0");
  need(p.opt.nudge_period >= 0, "opt.nudge_period must be >= 0 (0: off)");
  if (p.initial) {
    need(p.initial->s.rows() == p.dk() && p.initial->s.cols() == p.dv(), "initial.s must be d_k×d_v (S^T)");
    need(p.initial->a.rows() == p.dk() && p.initial->a.cols() == p.dk(), "initial.a must be d_k×d_k");
    need(p.initial->zeta.size() == p.dk(), "initial.zeta must have d_k entries");
    need(p.initial->tokens >= 0, "initial.tokens must be >= 0");
  }
}

// The authors' default penalty directions: u_t = norm(W_u k_t) / √d_k, so ‖u_t‖ = 1/√d_k.
// W_u is d_k × d_k (a learned projection in the paper; any matrix here).
template <class S>
Mat<S> authors_penalty_directions(const Mat<S>& k_raw, const Mat<S>& w_u) {
  if (w_u.rows() != k_raw.cols() || w_u.cols() != k_raw.cols())
    throw std::invalid_argument("vla::authors_penalty_directions: w_u must be d_k×d_k with d_k = k's columns");
  const S inv_sqrt_d = S(1) / sqrt_of(from_double<S>(static_cast<double>(k_raw.cols())));
  Mat<S> u(k_raw.rows(), k_raw.cols());
  for (Eigen::Index t = 0; t < k_raw.rows(); ++t)
    u.row(t) = (inv_sqrt_d * normalized<S>(Vec<S>(w_u * k_raw.row(t).transpose()))).transpose();
  return u;
}

// δ_t = max(1 + u_t^T z_t, stab_eps) from u_t^T z_t (SPEC §1): the one place the floor is applied.
template <class S>
S penalty_denominator(const Options<S>& opt, const S& u_dot_z) {
  const S delta = S(1) + u_dot_z;
  return delta < opt.stab_eps ? opt.stab_eps : delta;
}

// Whether the nudge A ← A + nudge_eps·I follows token number `token` (1-based, counted across split runs).
template <class S>
bool nudged_after(const Options<S>& opt, std::int64_t token) {
  return opt.nudge_period > 0 && token % opt.nudge_period == 0;
}

// Sherman–Morrison downdate of A by u for token number `token` (1-based), then the optional nudge.
template <class S>
void penalise(const Options<S>& opt, Mat<S>& a, const Vec<S>& u, std::int64_t token) {
  const Vec<S> z = a * u;
  const S delta = penalty_denominator(opt, S(u.dot(z)));
  a -= z * (z.transpose() / delta);
  if (nudged_after(opt, token)) a.diagonal().array() += opt.nudge_eps;
}

// The write of one token: k̂ and α̂ (unnormalised when opt.normalize is false).
template <class S>
struct WriteDirections {
  Vec<S> khat, alpha_hat;
};

// k̂ = norm(φ(k)); φ(k) itself when opt.normalize is false.
template <class S>
Vec<S> key_direction(const Options<S>& opt, const Vec<S>& phi_k) {
  return opt.normalize ? Vec<S>(normalized<S>(phi_k)) : phi_k;
}

// α̂ = norm(A_t k̂) from A_t k̂; A_t k̂ itself when opt.normalize is false.
template <class S>
Vec<S> alpha_direction(const Options<S>& opt, const Vec<S>& a_khat) {
  return opt.normalize ? Vec<S>(normalized<S>(a_khat)) : a_khat;
}

template <class S>
WriteDirections<S> write_directions(const Options<S>& opt, const Mat<S>& a, const Vec<S>& phi_k) {
  Vec<S> khat = key_direction(opt, phi_k);
  Vec<S> alpha_hat = alpha_direction(opt, Vec<S>(a * khat));
  return {std::move(khat), std::move(alpha_hat)};
}

// The read from its numerator num = S φ(q): num / max(ζ^T φ(q), stab_eps) (ratio) or scale · num (plain).
template <class S>
Vec<S> read_scaled(const Options<S>& opt, const Vec<S>& num, const Vec<S>& zeta, const Vec<S>& phi_q) {
  if (!opt.ratio) return opt.scale * num;
  S den = zeta.dot(phi_q);
  if (den < opt.stab_eps) den = opt.stab_eps;
  return num / den;
}

// Read from the stored S^T: S φ(q) (ratio or plain).
template <class S>
Vec<S> read(const Options<S>& opt, const Mat<S>& s_transposed, const Vec<S>& zeta, const Vec<S>& phi_q) {
  return read_scaled(opt, Vec<S>(s_transposed.transpose() * phi_q), zeta, phi_q);
}

// Streaming decode: one token at a time, everything interleaved.
template <class S>
class State {
 public:
  State(Options<S> opt, Memory<S> initial) : opt_(std::move(opt)), m_(std::move(initial)) {}
  State(Options<S> opt, Eigen::Index dk, Eigen::Index dv) : opt_(std::move(opt)), m_(empty_memory(opt_, dk, dv)) {}

  Vec<S> step(const Vec<S>& q, const Vec<S>& k, const Vec<S>& v, const Vec<S>& u) {
    penalise(opt_, m_.a, u, ++m_.tokens);
    const Vec<S> phi_k = feature(opt_.feature, k);
    const WriteDirections<S> w = write_directions(opt_, m_.a, phi_k);
    const Vec<S> residual = v - m_.s.transpose() * w.khat;  // v_t − S_{t−1} k̂_t
    m_.s.noalias() += w.alpha_hat * residual.transpose();
    m_.zeta += phi_k;
    return read(opt_, m_.s, m_.zeta, feature(opt_.feature, q));
  }
  const Memory<S>& memory() const { return m_; }

 private:
  Options<S> opt_;
  Memory<S> m_;
};

template <class S>
Result<S> streamed(const Problem<S>& p) {
  validate(p);
  State<S> st(p.opt, start_memory(p));
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index t = 0; t < p.T(); ++t)
    o.row(t) = st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(),
                       p.u.row(t).transpose()).transpose();
  return {std::move(o), st.memory()};
}

// The penalty recursion over the whole sequence: every token's k̂_t, α̂_t (rows) and A_T.
template <class S>
struct Writes {
  Mat<S> khat, alpha_hat;  // T×d_k
  Mat<S> final_a;
};

template <class S>
Writes<S> writes(const Problem<S>& p) {
  validate(p);
  Mat<S> a = start_memory(p).a;
  const std::int64_t first = p.initial ? p.initial->tokens : 0;
  Writes<S> w{Mat<S>(p.T(), p.dk()), Mat<S>(p.T(), p.dk()), {}};
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    penalise(p.opt, a, Vec<S>(p.u.row(t).transpose()), first + t + 1);
    const WriteDirections<S> d = write_directions(p.opt, a, feature(p.opt.feature, Vec<S>(p.k.row(t).transpose())));
    w.khat.row(t) = d.khat.transpose();
    w.alpha_hat.row(t) = d.alpha_hat.transpose();
  }
  w.final_a = std::move(a);
  return w;
}

// ---- the affine recursion S_t = S_{t−1} + (v_t − S_{t−1} k̂_t) α̂_t^T, serial and scanned -------------

// Serial: rank-one updates of the stored X = S^T, token by token; visit(t, X_t) after each token.
template <class S, class Visit>
Mat<S> affine_serial(Mat<S> x, const Mat<S>& khat, const Mat<S>& alpha_hat, const Mat<S>& v, Visit&& visit) {
  for (Eigen::Index t = 0; t < khat.rows(); ++t) {
    const Vec<S> residual = v.row(t).transpose() - x.transpose() * khat.row(t).transpose();
    x.noalias() += alpha_hat.row(t).transpose() * residual.transpose();
    visit(t, x);
  }
  return x;
}

// One token's affine map, S ↦ S F + G in the paper's orientation: F = I − k̂ α̂^T (d_k×d_k), G = v α̂^T (d_v×d_k).
template <class S>
struct AffineMap {
  Mat<S> f, g;
};

template <class S>
AffineMap<S> token_map(const Vec<S>& khat, const Vec<S>& alpha_hat, const Vec<S>& v) {
  return {Mat<S>(Mat<S>::Identity(khat.size(), khat.size()) - khat * alpha_hat.transpose()), v * alpha_hat.transpose()};
}

// The same map acting on the stored X = S^T from the left: X ↦ F^T X + G^T.
template <class S>
AffineMap<S> transposed(const AffineMap<S>& m) {
  return {m.f.transpose(), m.g.transpose()};
}

// Derived composition for right-acting maps S ↦ S F + G: first l, then r is S ↦ S F_l F_r + G_l F_r + G_r.
template <class S>
AffineMap<S> compose_right_acting(const AffineMap<S>& l, const AffineMap<S>& r) {
  return {l.f * r.f, l.g * r.f + r.g};
}

// The authors' printed composition (F_l, G_l) ⊕ (F_r, G_r) = (F_r F_l, F_r G_l + G_r). It composes
// left-acting maps X ↦ F X + G correctly (first l, then r: F_r F_l X + F_r G_l + G_r), i.e. the maps of
// `transposed`. On the paper's right-acting maps it is not their composition (F_r F_l ≠ F_l F_r in
// general), and F_r G_l is not even defined unless d_v = d_k.
template <class S>
AffineMap<S> compose_as_printed(const AffineMap<S>& l, const AffineMap<S>& r) {
  if (r.f.cols() != l.g.rows())
    throw std::invalid_argument("vla: the printed composition (F_r F_l, F_r G_l + G_r) needs F_r G_l defined: G_l is " +
                                std::to_string(l.g.rows()) + "×" + std::to_string(l.g.cols()) + ", F_r " +
                                std::to_string(r.f.rows()) + "×" + std::to_string(r.f.cols()) +
                                " (on the paper's maps this requires d_v = d_k)");
  return {r.f * l.f, r.f * l.g + r.g};
}

enum class ScanOperator {
  right_acting,           // paper's maps (F, G) with compose_right_acting: matches serial
  as_printed,             // paper's maps (F, G) with the printed composition: the authors' scan as written
  as_printed_transposed,  // the maps on S^T (F^T, G^T) with the printed composition: matches serial
};

inline const char* operator_name(ScanOperator op) {
  switch (op) {
    case ScanOperator::right_acting: return "right-acting (F_l F_r, G_l F_r + G_r) on S ↦ S F + G";
    case ScanOperator::as_printed: return "as printed (F_r F_l, F_r G_l + G_r) on S ↦ S F + G";
    case ScanOperator::as_printed_transposed: return "as printed (F_r F_l, F_r G_l + G_r) on S^T ↦ F^T S^T + G^T";
  }
  return "?";
}

// Blelloch scan (scan.h) over the token maps: the inclusive prefix P_t = map_1 ⊕ … ⊕ map_t, then
// X_t = (S_0 F_{P_t} + G_{P_t})^T (paper's maps) or F_{P_t} X_0 + G_{P_t} (transposed maps);
// visit(t, X_t) for every t. Returns X_T.
template <class S, class Visit>
Mat<S> affine_scan(const Mat<S>& x0, const Mat<S>& khat, const Mat<S>& alpha_hat, const Mat<S>& v, ScanOperator op,
                   Visit&& visit) {
  const Eigen::Index T = khat.rows(), dk = khat.cols(), dv = v.cols();
  const bool on_transposed = op == ScanOperator::as_printed_transposed;
  std::vector<AffineMap<S>> maps;
  maps.reserve(static_cast<std::size_t>(T));
  for (Eigen::Index t = 0; t < T; ++t) {
    AffineMap<S> m = token_map<S>(khat.row(t).transpose(), alpha_hat.row(t).transpose(), v.row(t).transpose());
    maps.push_back(on_transposed ? transposed(m) : std::move(m));
  }
  const AffineMap<S> identity{Mat<S>::Identity(dk, dk), on_transposed ? Mat<S>(Mat<S>::Zero(dk, dv)) : Mat<S>(Mat<S>::Zero(dv, dk))};
  const auto prefix = op == ScanOperator::right_acting
                          ? scan::blelloch_inclusive(maps, compose_right_acting<S>, identity)
                          : scan::blelloch_inclusive(maps, compose_as_printed<S>, identity);
  Mat<S> x = x0;
  for (Eigen::Index t = 0; t < T; ++t) {
    const AffineMap<S>& pm = prefix[static_cast<std::size_t>(t)];
    x = on_transposed ? Mat<S>(pm.f * x0 + pm.g) : Mat<S>((x0.transpose() * pm.f + pm.g).transpose());
    visit(t, x);
  }
  return x;
}

namespace detail {
// Runs the affine stage `affine(x0, visit)` and reads every o_t from the state it visits.
template <class S, class Affine>
Result<S> read_all(const Problem<S>& p, const Writes<S>& w, Affine&& affine) {
  const Memory<S> m0 = start_memory(p);
  Mat<S> o(p.T(), p.dv());
  Vec<S> zeta = m0.zeta;
  const Mat<S> s = affine(m0.s, [&](Eigen::Index t, const Mat<S>& x) {
    zeta += feature(p.opt.feature, Vec<S>(p.k.row(t).transpose()));
    o.row(t) = read(p.opt, x, zeta, feature(p.opt.feature, Vec<S>(p.q.row(t).transpose()))).transpose();
  });
  return {std::move(o), Memory<S>{s, w.final_a, zeta, m0.tokens + p.T()}};
}
}  // namespace detail

// The recurrence as SPEC §1 prints it: the penalty recursion, then S_t = S_{t−1} + (v_t − S_{t−1} k̂_t) α̂_t^T.
template <class S>
Result<S> serial(const Problem<S>& p) {
  const Writes<S> w = writes(p);
  return detail::read_all(p, w, [&](const Mat<S>& x0, auto&& visit) {
    return affine_serial(x0, w.khat, w.alpha_hat, p.v, visit);
  });
}

// The parallel form: the penalty recursion, then the Blelloch scan over the affine maps.
template <class S>
Result<S> scan(const Problem<S>& p, ScanOperator op = ScanOperator::right_acting) {
  const Writes<S> w = writes(p);
  return detail::read_all(p, w, [&](const Mat<S>& x0, auto&& visit) {
    return affine_scan(x0, w.khat, w.alpha_hat, p.v, op, visit);
  });
}

enum class Verb { serial, streamed, scan };

inline const char* verb_name(Verb v) {
  switch (v) {
    case Verb::serial: return "serial";
    case Verb::streamed: return "streamed";
    case Verb::scan: return "scan";
  }
  return "?";
}

template <class S>
Result<S> run(const Problem<S>& p, Verb verb) {
  switch (verb) {
    case Verb::serial: return serial(p);
    case Verb::streamed: return streamed(p);
    case Verb::scan: return scan(p);
  }
  throw std::invalid_argument("vla::run: unknown verb");
}

// ---- batched wrapper in FLA's conventions ------------------------------------------------------------

template <class S>
struct BatchedResult {
  Tensor<S> o;                  // [B, T, H, d_v]
  Tensor<S> final_state;        // [B, H, d_k, d_v] (S^T)
  Tensor<S> final_penalty;      // [B, H, d_k, d_k] (A_T)
  Tensor<S> final_normalizer;   // [B, H, d_k] (ζ_T)

  BatchedResult(const BatchedDims& d)
      : o({d.B, d.T, d.H, d.V}), final_state({d.B, d.H, d.K, d.V}), final_penalty({d.B, d.H, d.K, d.K}),
        final_normalizer({d.B, d.H, d.K}) {}
  // Puts head (b, h)'s outputs and final memory in place.
  void set_head(std::int64_t b, std::int64_t h, const Result<S>& r) {
    set_head_rows(o, b, h, r.o);
    set_head_state(final_state, b, h, r.final_memory.s);
    set_head_state(final_penalty, b, h, r.final_memory.a);
    set_head_vector(final_normalizer, b, h, r.final_memory.zeta);
  }
};

// (b, h)'s problem of a batched call: its rows of q, k, v, its penalty directions (u's rows, or the
// authors' norm(k_t)/√d_k) and its initial memory (S^T_0 from initial_state, A_0 = I/λ0, ζ_0 = 0).
template <class S>
Problem<S> head_problem(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const std::optional<Tensor<S>>& u,
                        const Options<S>& opt, const std::optional<Tensor<S>>& initial_state, std::int64_t b, std::int64_t h) {
  Problem<S> p{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h), {}, opt, {}};
  p.u = u ? head_rows(*u, b, h) : authors_penalty_directions<S>(p.k, Mat<S>::Identity(p.dk(), p.dk()));
  if (initial_state) {
    p.initial = empty_memory(opt, p.dk(), p.dv());
    p.initial->s = head_state(*initial_state, b, h);
  }
  return p;
}

namespace detail {
// run_head(problem) → Result<S> on every head, the results gathered into [B, ...] tensors.
template <class S, class RunHead>
BatchedResult<S> run_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const std::optional<Tensor<S>>& u,
                             const Options<S>& opt, const std::optional<Tensor<S>>& initial_state, RunHead&& run_head) {
  const BatchedDims d = batched_dims(q, k, v, initial_state ? &*initial_state : nullptr);
  if (u) require_shape(*u, "u", {d.B, d.T, d.H, d.K});
  BatchedResult<S> r(d);
  for_each_head(d.B, d.H, [&](std::int64_t b, std::int64_t h) {
    r.set_head(b, h, run_head(head_problem(q, k, v, u, opt, initial_state, b, h)));
  });
  return r;
}
}  // namespace detail

// q, k [B, T, H, d_k], v [B, T, H, d_v]; u [B, T, H, d_k] penalty directions (default: the authors'
// norm(k_t)/√d_k, i.e. W_u = I); optional initial S^T [B, H, d_k, d_v] (A_0 = I/λ0, ζ_0 = 0). The chunked
// form's counterpart is vla_chunked_batched (vla_chunked.h).
template <class S>
BatchedResult<S> vla_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v,
                             const std::optional<Tensor<std::type_identity_t<S>>>& u = {},
                             const Options<std::type_identity_t<S>>& opt = {},
                             const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                             Verb verb = Verb::serial) {
  return detail::run_batched(q, k, v, u, opt, initial_state, [verb](const Problem<S>& p) { return run(p, verb); });
}

}  // namespace larc::ref::vla
