// Second-order HLA (SPEC §5): streaming recurrences, the materialised ground truth, the Blelloch
// scans with the paper's operators and the chunk forms of Fig. 1(C). Notation in hla_common.h.
//
// Streaming (as printed): S^K_t = γS^K + k kᵀ, C_t = γC + q vᵀ, m_t = γm + q and the cross
// summaries from the *previous* C, m:  G_t = γG + k (kᵀ C_{t−1}),  h_t = γh + k (kᵀ m_{t−1});
// o_t = qᵀ(S^K C − G) (normalised: over qᵀ(S^K m − h) + ε); unmasked: o_t = qᵀ S^K C.
//
// Ground truth with decay (our reading of "every summary decays by γ", SPEC §5): the unmasked
// streaming output is o_t = Σ_{i,j≤t} γ^{t−i} γ^{t−j} (q_t·k_i)(k_i·q_j) v_j, the product of the two
// decayed sums S^K_t and C_t; the masked target keeps the pairs with i ≤ j:
//     masked:    o = ((A_γ Aᵀ) ⊙ Γ) V,   A_γ = Γ ⊙ (Q Kᵀ)   (γ = 1: ((A Aᵀ) ⊙ L) V, HLA-C1)
//     unmasked:  o = ((A_γ Bᵀ) ⊙ Γ) V,   B = Q Kᵀ
// The printed decayed G does not produce it: G_t = γG + k kᵀC_{t−1} weights the excluded pairs
// (j < i) by γ^{t−1−j} while S^K C weights them by γ^{2t−i−j}, so for γ < 1 they do not cancel.
// Derived: G_t = γ²G + γ k (kᵀ C_{t−1}) (and h alike), which gives the masked target for every γ
// and coincides with the printed recurrence at γ = 1 (SecondOrder::masked vs masked_as_printed).
//
// Initial state (hla_common.h): with summaries S^K_0, [C_0 | m_0], [G_0 | h_0] before the first token,
// token t (τ = t + 1 steps since the start) has S^K_t = γ^τ S^K_0 + Σ_{i≤t} γ^{t−i} k_i k_iᵀ and
// C_t = γ^τ C_0 + Σ_{j≤t} γ^{t−j} q_j w_jᵀ, and the derived decay gives
//     G_t = γ^{2τ} G_0 + Σ_{i≤t} γ^{2t−i+1} k_i k_iᵀ C_0 + [G_t without an initial state],
// whose middle sum is the cross term S^K_t C_t has between the keys and C_0, so that
//     S^K_t C_t − G_t = γ^{2τ}(S^K_0 C_0 − G_0) + γ^τ S^K_0 Σ_{j≤t} γ^{t−j} q_j w_jᵀ + [the same without one]:
// the carried rows of a chunk form (second_carried_rows) with the whole prefix as the previous chunk.
// So the derived chunk form carries (S^K_0, C_0, G_0) as its first chunk-start summary, and the
// masked materialised form adds second_carried_rows over the whole sequence. The unmasked variant
// (no G, so its S^K_t C_t keeps the cross term with C_0) and the printed decay take one in the serial
// form only.
#pragma once

#include <stdexcept>
#include <vector>

#include "larc/reference/hla_common.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/scan.h"

namespace larc::ref::hla {

enum class SecondOrder {
  unmasked,           // o = qᵀ S^K C
  masked,             // derived decay: G ← γ²G + γ k kᵀ C_{t−1}; the masked target for every γ
  masked_as_printed,  // G ← γG + k kᵀ C_{t−1} as printed; equals `masked` at γ = 1
};

inline const char* second_order_name(SecondOrder v) {
  switch (v) {
    case SecondOrder::unmasked: return "unmasked";
    case SecondOrder::masked: return "masked";
    case SecondOrder::masked_as_printed: return "masked_as_printed";
  }
  return "?";
}

// Streaming decode. c_ = [C | m] and g_ = [G | h] (hla_common.h: the normaliser rides as a column).
template <class S>
class SecondOrderState {
 public:
  SecondOrderState(Options<S> opt, SecondOrder variant, Eigen::Index d, Eigen::Index dv)
      : opt_(std::move(opt)), variant_(variant), sk_(Mat<S>::Zero(d, d)),
        c_(Mat<S>::Zero(d, value_width(opt_, dv))), g_(Mat<S>::Zero(d, value_width(opt_, dv))) {}
  // From the summaries `start` (d×d, d×w, d×w: hla_common.h) instead of empty ones.
  SecondOrderState(Options<S> opt, SecondOrder variant, SecondOrderMemory<S> start)
      : opt_(std::move(opt)), variant_(variant), sk_(std::move(start.sk)), c_(std::move(start.c)), g_(std::move(start.g)) {}

  Output<S> step(const Vec<S>& q, const Vec<S>& k, const Vec<S>& v) {
    const S& gamma = opt_.gamma;
    const Vec<S> w = value_of(opt_, v);
    if (variant_ != SecondOrder::unmasked) {
      const Mat<S> k_kc = k * (k.transpose() * c_);  // k (kᵀ C_{t−1}): the previous C
      if (variant_ == SecondOrder::masked_as_printed) g_ = gamma * g_ + k_kc;
      else g_ = (gamma * gamma) * g_ + gamma * k_kc;
    }
    sk_ = gamma * sk_ + k * k.transpose();
    c_ = gamma * c_ + q * w.transpose();
    // qᵀ(S^K C − G) evaluated as (qᵀS^K) C − qᵀG: O(d² + d d_v) (HLA-C3).
    Vec<S> raw = ((q.transpose() * sk_) * c_).transpose();
    if (variant_ != SecondOrder::unmasked) raw -= (q.transpose() * g_).transpose();
    return finish(opt_, raw, t_++);
  }

  const Mat<S>& SK() const { return sk_; }
  const Mat<S>& C_and_m() const { return c_; }  // [C | m]
  const Mat<S>& G_and_h() const { return g_; }  // [G | h]
  SecondOrderMemory<S> memory() const { return {sk_, c_, g_}; }  // what a continuation starts from

 private:
  Options<S> opt_;
  SecondOrder variant_;
  Mat<S> sk_, c_, g_;
  Eigen::Index t_ = 0;
};

// The summaries before the first token: the problem's initial ones, or empty. Throws naming `who` when
// the problem carries AHLA's.
template <class S>
SecondOrderMemory<S> second_order_start(const Problem<S>& p, const char* who) {
  if (p.ahla_initial) throw std::invalid_argument(std::string(who) + ": ahla_initial is AHLA's initial state; this is second order");
  if (p.second_order_initial) return *p.second_order_initial;
  const Eigen::Index w = value_width(p.opt, p.dv());
  return {Mat<S>::Zero(p.dk(), p.dk()), Mat<S>::Zero(p.dk(), w), Mat<S>::Zero(p.dk(), w)};
}

template <class S>
Result<S> second_serial(const Problem<S>& p, SecondOrder variant) {
  validate(p, "hla::second_serial");
  return stream(p, SecondOrderState<S>(p.opt, variant, second_order_start(p, "hla::second_serial")));
}

// Raw rows of the masked target ((A_γ Aᵀ) ⊙ Γ) W (or unmasked ((A_γ Bᵀ) ⊙ Γ) W) for one block of
// tokens; used whole by `second_materialized` and per chunk by the chunk forms (products through `ops`).
template <class S>
Mat<S> second_order_product(const Mat<S>& q, const Mat<S>& k, const Mat<S>& w, const S& gamma, bool masked,
                            const MatmulOperands<S>& ops = {}) {
  const Mat<S> b = ops.product(q, k.transpose());
  const Mat<S> decay = decay_matrix(q.rows(), gamma);
  const Mat<S> a_gamma = decay.cwiseProduct(b);
  const Mat<S> second = masked ? Mat<S>(b.template triangularView<Eigen::Lower>()) : b;
  return ops.product(ops.product(a_gamma, second.transpose()).cwiseProduct(decay), w);
}

// The rows that summaries (S^K_p, [C_p | m_p], [G_p | h_p]) carried into a block add to its tokens'
// raw rows (τ = r + 1 steps since the block's start; the header comment):
//   γ^{2τ} q_tᵀ(S^K_p C_p − G_p)                            pairs i ≤ j both before the block
//   + γ^{τ} Σ_{j in block, j≤t} γ^{t−j} (q_tᵀ S^K_p q_j) w_j   i before the block, j in it
// Products through `ops`: the operands S^K_p, [C_p | m_p] (of S^K_p C_p), S^K_p C_p − G_p (of Q(…)),
// Q, S^K_p (of Q S^K_p), Q S^K_p and Qᵀ, and (Q S^K_p Qᵀ) ⊙ (γ^τ Γ) and W.
template <class S>
Mat<S> second_carried_rows(const Mat<S>& q, const Mat<S>& w, const Mat<S>& sk, const Mat<S>& c, const Mat<S>& g,
                           const S& gamma, const MatmulOperands<S>& ops = {}) {
  const Vec<S> since = decay_since_start(q.rows(), gamma);
  const Vec<S> since2 = since.cwiseProduct(since);
  const Mat<S> pairs_before = since2.asDiagonal() * ops.product(q, ops.product(sk, c) - g);
  const Mat<S> cross_weights = since.asDiagonal() * decay_matrix(q.rows(), gamma);
  const Mat<S> cross = ops.product(ops.product(ops.product(q, sk), q.transpose()).cwiseProduct(cross_weights), w);
  return pairs_before + cross;
}

// Masked with an initial state: ((A_γ Aᵀ) ⊙ Γ) W plus second_carried_rows of the initial summaries.
template <class S>
Result<S> second_materialized(const Problem<S>& p, SecondOrder variant) {
  validate(p, "hla::second_materialized");
  if (variant == SecondOrder::masked_as_printed)
    throw std::invalid_argument("hla::second_materialized: the printed decay has no masked-product form (SPEC §5)");
  const Mat<S> w = values_of(p);
  Mat<S> raw = second_order_product(p.q, p.k, w, p.opt.gamma, variant == SecondOrder::masked);
  if (p.second_order_initial || p.ahla_initial) {
    if (variant != SecondOrder::masked)
      throw std::invalid_argument("hla::second_materialized: second_order_initial is taken by the masked variant only");
    const SecondOrderMemory<S> m = second_order_start(p, "hla::second_materialized");
    raw += second_carried_rows(p.q, w, m.sk, m.c, m.g, p.opt.gamma);
  }
  return finish_rows(p, raw);
}

// ---- Blelloch scan over segment summaries (HLA-C4, HLA-C5) ---------------------------------------

// Summary of a segment as if streamed from an empty state: S^K, [C | m], [G | h], ρ = γ^{len}.
template <class S>
struct SecondOrderSummary {
  Mat<S> sk, c, g;
  S rho = S(1);
};

template <class S>
SecondOrderSummary<S> second_identity(Eigen::Index d, Eigen::Index dw) {
  return {Mat<S>::Zero(d, d), Mat<S>::Zero(d, dw), Mat<S>::Zero(d, dw), S(1)};
}

// A single token: G = h = 0 (SPEC §5).
template <class S>
SecondOrderSummary<S> second_token(const Vec<S>& q, const Vec<S>& k, const Vec<S>& w, const S& gamma) {
  return {k * k.transpose(), q * w.transpose(), Mat<S>::Zero(k.size(), w.size()), gamma};
}

// a ⊕ b, a the earlier segment (SPEC §5):
//   plain    (S_A+S_B, C_A+C_B, G_A+G_B+S_B C_A)
//   printed  (ρ_B S_A+S_B, ρ_B C_A+C_B, ρ_B G_A+G_B+S_B(ρ_B C_A), ρ_Aρ_B)
//   decayed  (ρ_B S_A+S_B, ρ_B C_A+C_B, ρ_B² G_A+G_B+S_B(ρ_B C_A), ρ_Aρ_B): G_A's pairs age by
//            γ per step in both S^K and C, i.e. by ρ_B², and the cross pairs (j in A, i in B) carry
//            γ^{t−i}γ^{t−j} = [S_B]·[ρ_B C_A] — derived, associative, matches SecondOrder::masked.
// The cross term's product goes through `ops`.
template <class S>
SecondOrderSummary<S> second_combine(const SecondOrderSummary<S>& a, const SecondOrderSummary<S>& b, ScanOperator op,
                                     const MatmulOperands<S>& ops = {}) {
  if (op == ScanOperator::plain) return {a.sk + b.sk, a.c + b.c, a.g + b.g + ops.product(b.sk, a.c), S(1)};
  const S& r = b.rho;
  const Mat<S> aged_c = r * a.c;
  const S g_age = op == ScanOperator::decayed ? S(r * r) : r;
  return {r * a.sk + b.sk, aged_c + b.c, g_age * a.g + b.g + ops.product(b.sk, aged_c), a.rho * b.rho};
}

template <class S>
std::vector<SecondOrderSummary<S>> second_token_summaries(const Problem<S>& p) {
  const Mat<S> w = values_of(p);
  std::vector<SecondOrderSummary<S>> x;
  x.reserve(p.T());
  for (Eigen::Index t = 0; t < p.T(); ++t)
    x.push_back(second_token<S>(p.q.row(t).transpose(), p.k.row(t).transpose(), w.row(t).transpose(), p.opt.gamma));
  return x;
}

// Inclusive states by the exclusive Blelloch scan followed by including the local token (SPEC §5),
// read as o_t = qᵀ(S^K C − G) (masked) or qᵀ S^K C (unmasked); `combine(a, b)` is the operator.
template <class S, class Combine>
Result<S> second_scan_with(const Problem<S>& p, SecondOrder read, const Combine& combine) {
  validate(p, "hla::second_scan");
  require_no_initial_summaries(p, "hla::second_scan");
  const auto states = scan::blelloch_inclusive(second_token_summaries(p), combine,
                                               second_identity<S>(p.dk(), value_width(p.opt, p.dv())));
  Mat<S> raw(p.T(), value_width(p.opt, p.dv()));
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    const auto& st = states[t];
    const Mat<S> f = read == SecondOrder::unmasked ? Mat<S>(st.sk * st.c) : Mat<S>(st.sk * st.c - st.g);
    raw.row(t) = p.q.row(t) * f;
  }
  return finish_rows(p, raw);
}

template <class S>
Result<S> second_scan(const Problem<S>& p, SecondOrder read, ScanOperator op) {
  if (op == ScanOperator::plain) require_no_decay(p, "hla::second_scan (plain operator)");
  return second_scan_with(p, read, [op](const SecondOrderSummary<S>& a, const SecondOrderSummary<S>& b) {
    return second_combine(a, b, op);
  });
}

// ---- chunk forms (Fig. 1(C), HLA-C10) ------------------------------------------------------------

// The summary of a block of tokens in closed form (as streamed from empty with the derived decay):
// S^K = Kᵀ D K, C = Qᵀ D W, G = Kᵀ((D K Qᵀ D) ⊙ StrictLower) W with D = diag(γ^{n−1−r}); the products
// go through `ops` (Kᵀ D, Qᵀ D and Kᵀ pairs are operands, each formed in S first).
template <class S>
SecondOrderSummary<S> second_block_summary(const Mat<S>& q, const Mat<S>& k, const Mat<S>& w, const S& gamma,
                                           const MatmulOperands<S>& ops = {}) {
  const Eigen::Index n = q.rows();
  Vec<S> age(n);
  for (Eigen::Index r = 0; r < n; ++r) age(r) = power(gamma, n - 1 - r);
  const auto d = age.asDiagonal();
  const Mat<S> pairs = Mat<S>(d * ops.product(k, q.transpose()) * d).template triangularView<Eigen::StrictlyLower>();
  return {ops.product(k.transpose() * d, k), ops.product(q.transpose() * d, w),
          ops.product(ops.product(k.transpose(), pairs), w), power(gamma, n)};
}

// Fig. 1(C) as printed (no decay): for t in chunk c,
//   o_t = q_tᵀ(S^{K,(c−1)} C^{(c−1)} − G^{(c−1)}) + [intra-chunk masked second-order term],
// the intra term read as the chunk's own ((A_cc A_ccᵀ) ⊙ L) V_c, A_cc = L ⊙ Q_c K_cᵀ. The chunk-start
// summaries are carried with ⊕. (This omits the pairs i < chunk ≤ j, see second_chunked.)
template <class S>
Result<S> second_chunked_as_printed(const Problem<S>& p, Eigen::Index chunk) {
  validate(p, "hla::second_chunked_as_printed");
  require_no_decay(p, "hla::second_chunked_as_printed");
  require_no_initial_summaries(p, "hla::second_chunked_as_printed");
  if (chunk < 1) throw std::invalid_argument("hla::second_chunked_as_printed: chunk size must be >= 1");
  const Mat<S> w = values_of(p);
  SecondOrderSummary<S> prev = second_identity<S>(p.dk(), w.cols());
  Mat<S> raw(p.T(), w.cols());
  for (Eigen::Index c0 = 0; c0 < p.T(); c0 += chunk) {
    const Eigen::Index n = std::min(chunk, p.T() - c0);
    const Mat<S> qc = p.q.middleRows(c0, n), kc = p.k.middleRows(c0, n), wc = w.middleRows(c0, n);
    raw.middleRows(c0, n) = qc * (prev.sk * prev.c - prev.g) + second_order_product(qc, kc, wc, S(1), true);
    prev = second_combine(prev, second_block_summary(qc, kc, wc, S(1)), ScanOperator::plain);
  }
  return finish_rows(p, raw);
}

// The chunk form derived from the masked target, any γ: with τ = r + 1 steps since the chunk start,
//   o_t = γ^{2τ} q_tᵀ(S^K_p C_p − G_p)                              pairs i ≤ j both before the chunk
//       + γ^{τ} Σ_{j in chunk, j≤t} γ^{t−j} (q_tᵀ S^K_p q_j) w_j     i before the chunk, j in it
//       + ((A_γ A_ccᵀ) ⊙ Γ) W_c                                     both in the chunk
// (the first two: second_carried_rows) and the chunk-start summary carried with the derived ⊕_γ, the
// first one the initial summaries (empty without).
// Every matrix product goes through `ops` (matmul_operands.h): with an operand format it is the `io`
// grade's baseline, whose rounded operands are Q, K and W = V or [V | 1] wherever they enter a product;
// the carried summaries S^K_p, [C_p | m_p] as operands (S^K_p C_p, Q S^K_p, and ⊕_γ's S^K_B (ρ C_A)) and
// S^K_p C_p − G_p (of Q (S^K_p C_p − G_p)); Q S^K_p (of (Q S^K_p) Qᵀ); A_γ and the masked A (of A_γ Aᵀ);
// the weighted pair matrices (A_γ Aᵀ) ⊙ Γ and (Q S^K_p Qᵀ) ⊙ (γ^τ Γ) (of their products with W); and the
// block summary's Kᵀ D, Qᵀ D, Kᵀ pairs and K Qᵀ's operands. The decay weights, the sums of summaries,
// the carried summaries themselves and the normalised read's division stay in S (docs/gate.md
// "Precision grades").
template <class S>
Result<S> second_chunked(const Problem<S>& p, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  validate(p, "hla::second_chunked");
  if (chunk < 1) throw std::invalid_argument("hla::second_chunked: chunk size must be >= 1");
  const S& gamma = p.opt.gamma;
  const Mat<S> w = values_of(p);
  SecondOrderMemory<S> start = second_order_start(p, "hla::second_chunked");
  SecondOrderSummary<S> prev{std::move(start.sk), std::move(start.c), std::move(start.g), S(1)};
  Mat<S> raw(p.T(), w.cols());
  for (Eigen::Index c0 = 0; c0 < p.T(); c0 += chunk) {
    const Eigen::Index n = std::min(chunk, p.T() - c0);
    const Mat<S> qc = p.q.middleRows(c0, n), kc = p.k.middleRows(c0, n), wc = w.middleRows(c0, n);
    raw.middleRows(c0, n) =
        second_carried_rows(qc, wc, prev.sk, prev.c, prev.g, gamma, ops) + second_order_product(qc, kc, wc, gamma, true, ops);
    prev = second_combine(prev, second_block_summary(qc, kc, wc, gamma, ops), ScanOperator::decayed, ops);
  }
  return finish_rows(p, raw);
}

}  // namespace larc::ref::hla
