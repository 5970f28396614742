// AHLA, asymmetric higher-order linear attention (SPEC §5): target o = ((A A) ⊙ L) V.
//
// Streaming (as printed): P_t = γP + k vᵀ, m^K_t = γm^K + k, E_t = γE + k (qᵀ P_t), n_t = γn + k (qᵀ m^K_t);
// o_t = qᵀE (normalised: over qᵀn + ε). Unrolled, E_t = Σ_{j≤i≤t} γ^{t−j} k_i q_iᵀ k_j v_jᵀ, so
//     o = ((A_γ A_γ) ⊙ L) V,   A_γ = Γ ⊙ (Q Kᵀ)
// (weights γ^{t−i}·γ^{i−j}: the decayed A used twice) — the printed decay is consistent with it.
//
// Scan state (R, [P | m^K], [E | n], ρ), R = Σ k qᵀ. The printed ⊕_γ decays R (ρ_B R_A + R_B) and
// uses the decayed R_B in the cross term R_B(ρ_B P_A); but a cross pair (j in A, i in B) carries
// γ^{t−j}, independent of i, so the cross term needs the *undecayed* Σ_{i∈B} k_i q_iᵀ. Derived
// operator: (R_A + R_B, ρ_B P_A + P_B, ρ_B E_A + E_B + R_B(ρ_B P_A), ρ_Aρ_B) with R undecayed; the
// printed one agrees whenever B is a single token (so a left fold cannot tell them apart).
//
// Initial state (hla_common.h): with [P_0 | m^K_0] and [E_0 | n_0] before the first token, token t
// (τ = t + 1 steps since the start) has P_t = γ^τ P_0 + [P_t without one], and E_t = γE_{t−1} + k_t q_tᵀ P_t
// unrolls to
//     E_t = γ^τ E_0 + Σ_{i≤t} γ^{t−i} k_i q_iᵀ γ^{i+1} P_0 + [E_t without one]
//         = γ^τ (E_0 + R_{≤t} P_0) + [E_t without one],   R_{≤t} = Σ_{i≤t} k_i q_iᵀ (undecayed),
// the carried rows of the chunk form (ahla_carried_rows) with the whole prefix as the previous chunk:
// ahla_chunked carries (P_0, E_0) as its first chunk-start summary (R plays no part in what follows
// it), and ahla_materialized adds ahla_carried_rows over the whole sequence.
#pragma once

#include <stdexcept>
#include <vector>

#include "larc/reference/hla_common.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/scan.h"

namespace larc::ref::hla {

// Streaming decode; p_ = [P | m^K], e_ = [E | n].
template <class S>
class AhlaState {
 public:
  AhlaState(Options<S> opt, Eigen::Index d, Eigen::Index dv)
      : opt_(std::move(opt)), p_(Mat<S>::Zero(d, value_width(opt_, dv))), e_(Mat<S>::Zero(d, value_width(opt_, dv))) {}
  // From the summaries `start` (d×w each: hla_common.h) instead of empty ones.
  AhlaState(Options<S> opt, AhlaMemory<S> start) : opt_(std::move(opt)), p_(std::move(start.p)), e_(std::move(start.e)) {}

  Output<S> step(const Vec<S>& q, const Vec<S>& k, const Vec<S>& v) {
    const S& gamma = opt_.gamma;
    p_ = gamma * p_ + k * value_of(opt_, v).transpose();
    e_ = gamma * e_ + k * (q.transpose() * p_);  // uses P_t, this token included
    return finish(opt_, Vec<S>((q.transpose() * e_).transpose()), t_++);
  }

  const Mat<S>& P_and_mK() const { return p_; }
  const Mat<S>& E_and_n() const { return e_; }
  AhlaMemory<S> memory() const { return {p_, e_}; }  // what a continuation starts from

 private:
  Options<S> opt_;
  Mat<S> p_, e_;
  Eigen::Index t_ = 0;
};

// The summaries before the first token: the problem's initial ones, or empty. Throws naming `who` when
// the problem carries second order's.
template <class S>
AhlaMemory<S> ahla_start(const Problem<S>& p, const char* who) {
  if (p.second_order_initial)
    throw std::invalid_argument(std::string(who) + ": second_order_initial is second order's initial state; this is AHLA");
  if (p.ahla_initial) return *p.ahla_initial;
  const Eigen::Index w = value_width(p.opt, p.dv());
  return {Mat<S>::Zero(p.dk(), w), Mat<S>::Zero(p.dk(), w)};
}

template <class S>
Result<S> ahla_serial(const Problem<S>& p) {
  validate(p, "hla::ahla_serial");
  return stream(p, AhlaState<S>(p.opt, ahla_start(p, "hla::ahla_serial")));
}

// ((A_γ A_γ) ⊙ L) W for one block of tokens (products through `ops`).
template <class S>
Mat<S> ahla_product(const Mat<S>& q, const Mat<S>& k, const Mat<S>& w, const S& gamma, const MatmulOperands<S>& ops = {}) {
  const Mat<S> a_gamma = decay_matrix(q.rows(), gamma).cwiseProduct(ops.product(q, k.transpose()));
  return ops.product(ops.product(a_gamma, a_gamma).template triangularView<Eigen::Lower>(), w);
}

// The rows that summaries ([P_p | m^K_p], [E_p | n_p]) carried into a block add to its tokens' raw rows
// (τ = r + 1 steps since the block's start; the header comment):
//   γ^τ q_tᵀ(E_p + R_{≤t} P_p),   R_{≤t} = Σ_{i in block, i≤t} k_i q_iᵀ (undecayed)
// — the token t itself belongs in R (the pair i = t, j before the block). Products through `ops`: the
// operands Q, E_p and Q, P_p; Q, Kᵀ; the masked Q Kᵀ and Q P_p.
template <class S>
Mat<S> ahla_carried_rows(const Mat<S>& q, const Mat<S>& k, const Mat<S>& p, const Mat<S>& e, const S& gamma,
                         const MatmulOperands<S>& ops = {}) {
  const Vec<S> since = decay_since_start(q.rows(), gamma);
  const Mat<S> upto = ops.product(q, k.transpose()).template triangularView<Eigen::Lower>();
  return since.asDiagonal() * (ops.product(q, e) + ops.product(upto, ops.product(q, p)));
}

// With an initial state: ((A_γ A_γ) ⊙ L) W plus ahla_carried_rows of the initial summaries.
template <class S>
Result<S> ahla_materialized(const Problem<S>& p) {
  validate(p, "hla::ahla_materialized");
  const Mat<S> w = values_of(p);
  Mat<S> raw = ahla_product(p.q, p.k, w, p.opt.gamma);
  if (p.second_order_initial || p.ahla_initial) {
    const AhlaMemory<S> m = ahla_start(p, "hla::ahla_materialized");
    raw += ahla_carried_rows(p.q, p.k, m.p, m.e, p.opt.gamma);
  }
  return finish_rows(p, raw);
}

// ---- scan (HLA-C6) ---------------------------------------------------------------------------------

template <class S>
struct AhlaSummary {
  Mat<S> r, p, e;  // R = Σ k qᵀ, [P | m^K], [E | n]
  S rho = S(1);
};

template <class S>
AhlaSummary<S> ahla_identity(Eigen::Index d, Eigen::Index dw) {
  return {Mat<S>::Zero(d, d), Mat<S>::Zero(d, dw), Mat<S>::Zero(d, dw), S(1)};
}

// A single token: R = k qᵀ, P = k wᵀ, E = k (qᵀ k) wᵀ (the pair i = j = t).
template <class S>
AhlaSummary<S> ahla_token(const Vec<S>& q, const Vec<S>& k, const Vec<S>& w, const S& gamma) {
  const Mat<S> kw = k * w.transpose();
  return {k * q.transpose(), kw, S(q.dot(k)) * kw, gamma};
}

// a ⊕ b, a the earlier segment (SPEC §5 and the header comment); the cross term's product goes
// through `ops`.
template <class S>
AhlaSummary<S> ahla_combine(const AhlaSummary<S>& a, const AhlaSummary<S>& b, ScanOperator op,
                            const MatmulOperands<S>& ops = {}) {
  if (op == ScanOperator::plain) return {a.r + b.r, a.p + b.p, a.e + b.e + ops.product(b.r, a.p), S(1)};
  const S& rho = b.rho;
  const Mat<S> aged_p = rho * a.p;
  const Mat<S> r = op == ScanOperator::decayed_as_printed ? Mat<S>(rho * a.r + b.r) : Mat<S>(a.r + b.r);
  return {r, aged_p + b.p, rho * a.e + b.e + ops.product(b.r, aged_p), a.rho * b.rho};
}

// Inclusive states by the exclusive Blelloch scan, read as o_t = qᵀE; `combine(a, b)` is the operator.
template <class S, class Combine>
Result<S> ahla_scan_with(const Problem<S>& p, const Combine& combine) {
  validate(p, "hla::ahla_scan");
  require_no_initial_summaries(p, "hla::ahla_scan");
  const Mat<S> w = values_of(p);
  std::vector<AhlaSummary<S>> x;
  for (Eigen::Index t = 0; t < p.T(); ++t)
    x.push_back(ahla_token<S>(p.q.row(t).transpose(), p.k.row(t).transpose(), w.row(t).transpose(), p.opt.gamma));
  const auto states = scan::blelloch_inclusive(x, combine, ahla_identity<S>(p.dk(), w.cols()));
  Mat<S> raw(p.T(), w.cols());
  for (Eigen::Index t = 0; t < p.T(); ++t) raw.row(t) = p.q.row(t) * states[t].e;
  return finish_rows(p, raw);
}

template <class S>
Result<S> ahla_scan(const Problem<S>& p, ScanOperator op) {
  if (op == ScanOperator::plain) require_no_decay(p, "hla::ahla_scan (plain operator)");
  return ahla_scan_with(p, [op](const AhlaSummary<S>& a, const AhlaSummary<S>& b) { return ahla_combine(a, b, op); });
}

// ---- chunk forms (Fig. 2(C), HLA-C10) ----------------------------------------------------------------

// Closed-form summary of a block (derived operator's state): R = Kᵀ Q (undecayed), P = Kᵀ D W,
// E = Kᵀ((Q Kᵀ ⊙ L) D) W with D = diag(γ^{n−1−j}); the products go through `ops` (Kᵀ D and Kᵀ A D are
// operands, each formed in S first).
template <class S>
AhlaSummary<S> ahla_block_summary(const Mat<S>& q, const Mat<S>& k, const Mat<S>& w, const S& gamma,
                                  const MatmulOperands<S>& ops = {}) {
  const Eigen::Index n = q.rows();
  Vec<S> age(n);
  for (Eigen::Index r = 0; r < n; ++r) age(r) = power(gamma, n - 1 - r);
  const Mat<S> a = ops.product(q, k.transpose()).template triangularView<Eigen::Lower>();
  return {ops.product(k.transpose(), q), ops.product(k.transpose() * age.asDiagonal(), w),
          ops.product(ops.product(k.transpose(), a) * age.asDiagonal(), w), power(gamma, n)};
}

// Fig. 2(C) as printed (no decay): o_t = q_tᵀ(E^{(c−1)} + R^{KQ,(c)}_{<t} P^{(c−1)}) + intra, with
// R_{<t} = Σ k_i q_iᵀ over the chunk's tokens before t and intra = ((A_cc A_cc) ⊙ L) V_c.
template <class S>
Result<S> ahla_chunked_as_printed(const Problem<S>& p, Eigen::Index chunk) {
  validate(p, "hla::ahla_chunked_as_printed");
  require_no_decay(p, "hla::ahla_chunked_as_printed");
  require_no_initial_summaries(p, "hla::ahla_chunked_as_printed");
  if (chunk < 1) throw std::invalid_argument("hla::ahla_chunked_as_printed: chunk size must be >= 1");
  const Mat<S> w = values_of(p);
  AhlaSummary<S> prev = ahla_identity<S>(p.dk(), w.cols());
  Mat<S> raw(p.T(), w.cols());
  for (Eigen::Index c0 = 0; c0 < p.T(); c0 += chunk) {
    const Eigen::Index n = std::min(chunk, p.T() - c0);
    const Mat<S> qc = p.q.middleRows(c0, n), kc = p.k.middleRows(c0, n), wc = w.middleRows(c0, n);
    // Row r of q_tᵀ R_{<t} P = Σ_{i<r} (q_r·k_i)(q_iᵀ P): strictly lower Q_c K_cᵀ.
    const Mat<S> before = Mat<S>(qc * kc.transpose()).template triangularView<Eigen::StrictlyLower>();
    raw.middleRows(c0, n) = qc * prev.e + before * (qc * prev.p) + ahla_product(qc, kc, wc, S(1));
    prev = ahla_combine(prev, ahla_block_summary(qc, kc, wc, S(1)), ScanOperator::plain);
  }
  return finish_rows(p, raw);
}

// Derived chunk form, any γ (τ = r + 1 steps since the chunk start):
//   o_t = γ^τ q_tᵀ(E_p + R_{≤t} P_p) + ((A_γ A_γ) ⊙ L) W_c,   R_{≤t} = Σ_{i in chunk, i≤t} k_i q_iᵀ (undecayed)
// (the first term: ahla_carried_rows), the chunk-start summary carried with the derived ⊕_γ, the first
// one the initial summaries (empty without).
// Every matrix product goes through `ops` (matmul_operands.h): with an operand format it is the `io`
// grade's baseline, whose rounded operands are Q, K and W = V or [V | 1] wherever they enter a product;
// the carried summaries [E_p | n_p], [P_p | m^K_p] (of Q E_p, Q P_p) and ⊕_γ's R_B, ρ P_A; the masked
// Q Kᵀ and Q P_p (of their product); A_γ (of A_γ A_γ) and (A_γ A_γ) ⊙ L (of its product with W); and the
// block summary's Kᵀ D, Kᵀ A D and Kᵀ A's operands. The decay weights, the sums of summaries, the
// carried summaries themselves and the normalised read's division stay in S (docs/gate.md "Precision
// grades").
template <class S>
Result<S> ahla_chunked(const Problem<S>& p, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  validate(p, "hla::ahla_chunked");
  if (chunk < 1) throw std::invalid_argument("hla::ahla_chunked: chunk size must be >= 1");
  const S& gamma = p.opt.gamma;
  const Mat<S> w = values_of(p);
  AhlaMemory<S> start = ahla_start(p, "hla::ahla_chunked");
  AhlaSummary<S> prev{Mat<S>::Zero(p.dk(), p.dk()), std::move(start.p), std::move(start.e), S(1)};
  Mat<S> raw(p.T(), w.cols());
  for (Eigen::Index c0 = 0; c0 < p.T(); c0 += chunk) {
    const Eigen::Index n = std::min(chunk, p.T() - c0);
    const Mat<S> qc = p.q.middleRows(c0, n), kc = p.k.middleRows(c0, n), wc = w.middleRows(c0, n);
    raw.middleRows(c0, n) = ahla_carried_rows(qc, kc, prev.p, prev.e, gamma, ops) + ahla_product(qc, kc, wc, gamma, ops);
    prev = ahla_combine(prev, ahla_block_summary(qc, kc, wc, gamma, ops), ScanOperator::decayed, ops);
  }
  return finish_rows(p, raw);
}

}  // namespace larc::ref::hla
