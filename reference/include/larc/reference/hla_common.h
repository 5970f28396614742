// What the HLA family (SPEC §5) shares: the per-head problem, options, results, the decay matrix
// and the reads that turn a raw row into an output.
//
// Indexing: token t is row t (0-indexed). A = L ⊙ (Q K^T) (row t is W_t), B = Q K^T unmasked,
// Γ_tj = γ^{t−j} for j ≤ t and 0 above the diagonal (so Γ ⊙ L = Γ), L the lower mask with the diagonal.
//
// Normalised variants: every denominator in SPEC §5 is its numerator with the value v_j replaced
// by 1 (m = C with v → 1, h = G with v → 1, n = E with v → 1, m^K = P with v → 1, h1..h3 likewise).
// So the forms run on the augmented values W = [V | 1] (d_v + 1 columns) and every summary that
// carries values (C, G, P, E, G1..G3) carries its normaliser as the last column: [C | m], [G | h],
// [P | m^K], [E | n]. The recurrences are those printed, applied to both columns at once.
//
// Initial state: the summaries before the first token (absent: empty), w = d_v or d_v + 1 as above —
// second order S^K_0 (d×d), [C_0 | m_0] and [G_0 | h_0] (d×w); AHLA [P_0 | m^K_0] and [E_0 | n_0] (d×w).
// They need not summarise any sequence. The serial, materialised (second order: masked) and derived
// chunk forms of the two families and their backward verbs take them; every other form (the third
// order, the scans, the chunk forms as printed) refuses one (require_no_initial_summaries).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "larc/reference/types.h"

namespace larc::ref::hla {

template <class S>
struct Options {
  bool normalized = false;  // o_t = numerator / (denominator + ε)
  S eps = S(0);             // ε ≥ 0, normalised only
  S gamma = S(1);           // decay γ ∈ (0, 1]; 1 is no decay
};

// The second-order summaries S^K (d×d), c = [C | m] and g = [G | h] (d×w).
template <class S>
struct SecondOrderMemory {
  Mat<S> sk, c, g;
};

// AHLA's summaries p = [P | m^K] and e = [E | n] (d×w).
template <class S>
struct AhlaMemory {
  Mat<S> p, e;
};

template <class S>
struct Problem {
  Mat<S> q, k, v;  // T×d, T×d, T×d_v
  Options<S> opt;
  std::optional<SecondOrderMemory<S>> second_order_initial = {};  // second-order forms only; empty when absent
  std::optional<AhlaMemory<S>> ahla_initial = {};                 // AHLA forms only; empty when absent

  Eigen::Index T() const { return q.rows(); }
  Eigen::Index dk() const { return q.cols(); }
  Eigen::Index dv() const { return v.cols(); }
};

template <class S>
struct Result {
  Mat<S> o;    // T×d_v
  Vec<S> den;  // T denominators (normalised only; empty otherwise)
};

// One token's read.
template <class S>
struct Output {
  Vec<S> o;
  S den = S(0);  // normalised only
};

// The scan operators on segment summaries (SPEC §5); each family defines what they do.
enum class ScanOperator {
  plain,               // ⊕ (no decay)
  decayed_as_printed,  // ⊕_γ as printed in SPEC §5
  decayed,             // derived where the printed one fails (second order: ρ_B² G_A; AHLA: undecayed R)
};

inline const char* scan_operator_name(ScanOperator op) {
  switch (op) {
    case ScanOperator::plain: return "plain";
    case ScanOperator::decayed_as_printed: return "decayed_as_printed";
    case ScanOperator::decayed: return "decayed";
  }
  return "?";
}

template <class S>
void require_no_decay(const Problem<S>& p, const char* who) {
  if (p.opt.gamma != S(1)) throw std::invalid_argument(std::string(who) + ": gamma must be 1 (this form has no decay)");
}

template <class S>
Eigen::Index value_width(const Options<S>& opt, Eigen::Index dv) { return dv + (opt.normalized ? 1 : 0); }

// Throws std::invalid_argument naming the field that is wrong.
template <class S>
void validate(const Problem<S>& p, const char* who) {
  auto need = [who](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument(std::string(who) + ": " + what);
  };
  need(p.dk() >= 1, "q must have d >= 1 columns");
  need(p.v.cols() >= 1, "v must have d_v >= 1 columns");
  need(p.k.rows() == p.T() && p.k.cols() == p.dk(), "k must be T×d like q");
  need(p.v.rows() == p.T(), "v must have T rows like q");
  need(p.opt.gamma > S(0) && p.opt.gamma <= S(1), "gamma must lie in (0, 1]");
  need(p.opt.eps >= S(0), "eps must be >= 0");
  const Eigen::Index d = p.dk(), w = value_width(p.opt, p.dv());
  auto sized = [](const Mat<S>& m, Eigen::Index rows, Eigen::Index cols) { return m.rows() == rows && m.cols() == cols; };
  if (const auto& m = p.second_order_initial) {
    need(sized(m->sk, d, d), "second_order_initial.sk (S^K_0) must be d×d");
    need(sized(m->c, d, w), "second_order_initial.c ([C_0 | m_0]) must be d×w (w = d_v, or d_v + 1 normalised)");
    need(sized(m->g, d, w), "second_order_initial.g ([G_0 | h_0]) must be d×w (w = d_v, or d_v + 1 normalised)");
  }
  if (const auto& m = p.ahla_initial) {
    need(sized(m->p, d, w), "ahla_initial.p ([P_0 | m^K_0]) must be d×w (w = d_v, or d_v + 1 normalised)");
    need(sized(m->e, d, w), "ahla_initial.e ([E_0 | n_0]) must be d×w (w = d_v, or d_v + 1 normalised)");
  }
}

// For the forms that start from empty summaries only.
template <class S>
void require_no_initial_summaries(const Problem<S>& p, const char* who) {
  if (p.second_order_initial || p.ahla_initial)
    throw std::invalid_argument(std::string(who) + ": this form takes no initial summaries (second_order_initial, ahla_initial)");
}

// W = V, or [V | 1] for the normalised variants.
template <class S>
Mat<S> values_of(const Problem<S>& p) {
  if (!p.opt.normalized) return p.v;
  Mat<S> w(p.T(), p.dv() + 1);
  w << p.v, Mat<S>::Ones(p.T(), 1);
  return w;
}

// w_t = v_t, or [v_t; 1].
template <class S>
Vec<S> value_of(const Options<S>& opt, const Vec<S>& v) {
  if (!opt.normalized) return v;
  Vec<S> w(v.size() + 1);
  w << v, S(1);
  return w;
}

// γ^n for n ≥ 0 by repeated multiplication (exact for rational γ).
template <class S>
S power(const S& gamma, Eigen::Index n) {
  S r(1);
  for (Eigen::Index i = 0; i < n; ++i) r *= gamma;
  return r;
}

// γ^τ, τ = r + 1, for the rows r < n of a block: the decay of a summary carried into the block.
template <class S>
Vec<S> decay_since_start(Eigen::Index n, const S& gamma) {
  Vec<S> since(n);
  for (Eigen::Index r = 0; r < n; ++r) since(r) = power(gamma, r + 1);
  return since;
}

// L ⊙ m: the lower triangle with the diagonal.
template <class S>
Mat<S> lower(const Mat<S>& m) { return m.template triangularView<Eigen::Lower>(); }

// Γ (T×T): γ^{t−j} for j ≤ t, 0 above the diagonal.
template <class S>
Mat<S> decay_matrix(Eigen::Index T, const S& gamma) {
  Mat<S> g = Mat<S>::Zero(T, T);
  for (Eigen::Index t = 0; t < T; ++t) {
    S w(1);
    for (Eigen::Index j = t; j >= 0; --j, w *= gamma) g(t, j) = w;
  }
  return g;
}

// One raw row (width value_width) to an output: split off and divide by the denominator.
template <class S>
Output<S> finish(const Options<S>& opt, const Vec<S>& raw, Eigen::Index t) {
  if (!opt.normalized) return {raw, S(0)};
  const Eigen::Index dv = raw.size() - 1;
  const S den = raw(dv);
  if (den + opt.eps == S(0))
    throw std::domain_error("hla: normalised denominator + eps is zero at token " + std::to_string(t));
  return {Vec<S>(raw.head(dv) / (den + opt.eps)), den};
}

// Raw rows (T × value_width) to a result.
template <class S>
Result<S> finish_rows(const Problem<S>& p, const Mat<S>& raw) {
  Result<S> r{Mat<S>(raw.rows(), p.dv()), Vec<S>(p.opt.normalized ? raw.rows() : 0)};
  for (Eigen::Index t = 0; t < raw.rows(); ++t) {
    const Output<S> out = finish(p.opt, Vec<S>(raw.row(t).transpose()), t);
    r.o.row(t) = out.o.transpose();
    if (p.opt.normalized) r.den(t) = out.den;
  }
  return r;
}

// Runs a streaming State over the sequence: step(q_t, k_t, v_t) for every token.
template <class S, class State>
Result<S> stream(const Problem<S>& p, State st) {
  Result<S> r{Mat<S>(p.T(), p.dv()), Vec<S>(p.opt.normalized ? p.T() : 0)};
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    const Output<S> out = st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose());
    r.o.row(t) = out.o.transpose();
    if (p.opt.normalized) r.den(t) = out.den;
  }
  return r;
}

}  // namespace larc::ref::hla
