// Third-order HLA (SPEC §5), no decay. A triple (i, l, j) contributes
//     (q_t·k_i)(k_i·q_l)(q_l·k_j) v_j    (the indices of A Aᵀ A: A_ti, A_li, A_lj)
// and the unmasked streaming output o_t = q_tᵀ S^K_t S^Q_t P_t sums every triple with i, l, j ≤ t.
//
// The paper's masked form subtracts, with the *previous* summaries,
//   G1_t = G1 + k kᵀ S^Q_{t−1} P_{t−1}  (triples with i > l and i > j),
//   G2_t = G2 + S^K_{t−1} q qᵀ P_{t−1}  (l > i and l > j),
//   G3_t = G3 + S^K_{t−1} S^Q_{t−1} k vᵀ (j > i and j > l),
// i.e. it keeps exactly the triples whose largest index occurs at least twice (printed_triple_sum).
// The target it names, "(A Aᵀ A) V with the causal mask", taken literally as ((A Aᵀ A) ⊙ L) V, is
// not causal: (A Aᵀ A)_tj sums A_li A_lj over every l ≥ max(i, j), including l > t. The causal
// reading — every factor masked, l ≤ t — is ((A Aᵀ) ⊙ L) A V: the triples with i ≤ l and j ≤ l ≤ t.
// Derived streaming for it: keep o_t = q_tᵀ(S^K S^Q P − G1' − G3) with G3 as printed and
//   G1'_t = G1' + k kᵀ S^Q_{t−1} P_t   (i > l, i ≥ j: this token's P included), no G2.
// Normalised variants: h1..h3 are G1..G3 with m^K for P and k for v (the [P | m^K] column).
#pragma once

#include <stdexcept>
#include <vector>

#include "larc/reference/hla_common.h"
#include "larc/reference/scan.h"

namespace larc::ref::hla {

enum class ThirdOrder {
  unmasked,           // o = qᵀ S^K S^Q P
  masked,             // derived: o = qᵀ(S^K S^Q P − G1' − G3) = ((A Aᵀ) ⊙ L) A V
  masked_as_printed,  // o = qᵀ(S^K S^Q P − G1 − G2 − G3) as printed
};

inline const char* third_order_name(ThirdOrder v) {
  switch (v) {
    case ThirdOrder::unmasked: return "unmasked";
    case ThirdOrder::masked: return "masked";
    case ThirdOrder::masked_as_printed: return "masked_as_printed";
  }
  return "?";
}

// Streaming decode; p_ = [P | m^K], g1_..g3_ = [G | h].
template <class S>
class ThirdOrderState {
 public:
  ThirdOrderState(Options<S> opt, ThirdOrder variant, Eigen::Index d, Eigen::Index dv)
      : opt_(std::move(opt)), variant_(variant), sk_(Mat<S>::Zero(d, d)), sq_(Mat<S>::Zero(d, d)),
        p_(Mat<S>::Zero(d, value_width(opt_, dv))), g1_(p_), g2_(p_), g3_(p_) {
    if (opt_.gamma != S(1)) throw std::invalid_argument("hla::ThirdOrderState: gamma must be 1 (no decay)");
  }

  Output<S> step(const Vec<S>& q, const Vec<S>& k, const Vec<S>& v) {
    const Vec<S> w = value_of(opt_, v);
    const Mat<S> k_sq_prev = k.transpose() * sq_;  // kᵀ S^Q_{t−1}
    if (variant_ == ThirdOrder::masked_as_printed) {
      g1_ += k * (k_sq_prev * p_);
      g2_ += (sk_ * q) * (q.transpose() * p_);
    }
    if (variant_ != ThirdOrder::unmasked) g3_ += (sk_ * k_sq_prev.transpose()) * w.transpose();  // S^K S^Q k, S^Q symmetric
    sk_ += k * k.transpose();
    sq_ += q * q.transpose();
    p_ += k * w.transpose();
    if (variant_ == ThirdOrder::masked) g1_ += k * (k_sq_prev * p_);  // P_t
    Vec<S> raw = (((q.transpose() * sk_) * sq_) * p_).transpose();
    if (variant_ != ThirdOrder::unmasked) raw -= (q.transpose() * (g1_ + g2_ + g3_)).transpose();
    return finish(opt_, raw, t_++);
  }

 private:
  Options<S> opt_;
  ThirdOrder variant_;
  Mat<S> sk_, sq_, p_, g1_, g2_, g3_;
  Eigen::Index t_ = 0;
};

template <class S>
Result<S> third_serial(const Problem<S>& p, ThirdOrder variant) {
  validate(p, "hla::third_serial");
  require_no_initial_summaries(p, "hla::third_serial");
  return stream(p, ThirdOrderState<S>(p.opt, variant, p.dk(), p.dv()));
}

// Materialised: unmasked ((((A Bᵀ) ⊙ L) B) ⊙ L) W; masked (derived) ((A Aᵀ) ⊙ L) A W.
template <class S>
Result<S> third_materialized(const Problem<S>& p, ThirdOrder variant) {
  validate(p, "hla::third_materialized");
  require_no_initial_summaries(p, "hla::third_materialized");
  require_no_decay(p, "hla::third_materialized");
  if (variant == ThirdOrder::masked_as_printed)
    throw std::invalid_argument("hla::third_materialized: the printed form is no masked product; see printed_triple_sum");
  const Mat<S> b = p.q * p.k.transpose();
  const Mat<S> a = lower(b);
  const Mat<S> w = values_of(p);
  if (variant == ThirdOrder::masked)
    return finish_rows(p, Mat<S>(lower<S>(a * a.transpose()) * a * w));
  return finish_rows(p, Mat<S>(lower<S>(lower<S>(a * b.transpose()) * b) * w));
}

// The paper's named target taken literally: ((A Aᵀ A) ⊙ L) W (not causal, see the header comment).
template <class S>
Result<S> third_literal_masked_target(const Problem<S>& p) {
  validate(p, "hla::third_literal_masked_target");
  require_no_initial_summaries(p, "hla::third_literal_masked_target");
  require_no_decay(p, "hla::third_literal_masked_target");
  const Mat<S> a = lower<S>(p.q * p.k.transpose());
  return finish_rows(p, Mat<S>(lower<S>(a * a.transpose() * a) * values_of(p)));
}

// What the printed masked recurrence sums, by brute force over triples: every (i, l, j) ≤ t whose
// largest index occurs at least twice. O(T⁴); for checking the characterisation on small T.
template <class S>
Result<S> printed_triple_sum(const Problem<S>& p) {
  validate(p, "hla::printed_triple_sum");
  require_no_initial_summaries(p, "hla::printed_triple_sum");
  require_no_decay(p, "hla::printed_triple_sum");
  const Mat<S> b = p.q * p.k.transpose(), w = values_of(p);
  Mat<S> raw = Mat<S>::Zero(p.T(), w.cols());
  for (Eigen::Index t = 0; t < p.T(); ++t)
    for (Eigen::Index i = 0; i <= t; ++i)
      for (Eigen::Index l = 0; l <= t; ++l)
        for (Eigen::Index j = 0; j <= t; ++j) {
          const Eigen::Index top = std::max({i, l, j});
          if ((i == top) + (l == top) + (j == top) < 2) continue;
          raw.row(t) += S(b(t, i) * b(l, i) * b(l, j)) * w.row(j);
        }
  return finish_rows(p, raw);
}

// ---- scans (HLA-C8) ----------------------------------------------------------------------------------

// The paper's segment state: S^K, S^Q, [P | m^K], F = S^K S^Q P − G1 − G2 − G3, R^{QP} = Σ q qᵀ k wᵀ,
// U^{KQ} = Σ k kᵀ q qᵀ and the linear map M[Z] = Σ k kᵀ Z k wᵀ, held as the (d·d_w)×(d·d) matrix
// acting on column-major vec(Z): M[(a + b d), (c + e d)] = Σ k_a k_c k_e w_b.
template <class S>
struct ThirdOrderPrintedSummary {
  Mat<S> sk, sq, p, f, r_qp, u_kq, m_map;
};

// The derived operator's state for the masked target: X = Σ_l S^K_{≤l} q_l q_lᵀ, Y = Σ_l q_l q_lᵀ P_{≤l},
// F' = Σ_l S^K_{≤l} q_l q_lᵀ P_{≤l} (prefixes within the segment).
template <class S>
struct ThirdOrderSummary {
  Mat<S> sk, sq, p, x, y, f;
};

template <class S>
Mat<S> apply_segment_map(const Mat<S>& m_map, const Mat<S>& z, Eigen::Index dw) {
  const Mat<S> z_copy = z;
  const Vec<S> vec_z = Eigen::Map<const Vec<S>>(z_copy.data(), z_copy.size());
  const Vec<S> out = m_map * vec_z;
  return Eigen::Map<const Mat<S>>(out.data(), z.rows(), dw);
}

template <class S>
ThirdOrderPrintedSummary<S> third_printed_token(const Vec<S>& q, const Vec<S>& k, const Vec<S>& w) {
  const Eigen::Index d = k.size(), dw = w.size();
  const Mat<S> kk = k * k.transpose(), qq = q * q.transpose(), kw = k * w.transpose();
  Mat<S> m_map(d * dw, d * d);
  for (Eigen::Index a = 0; a < d; ++a)
    for (Eigen::Index b = 0; b < dw; ++b)
      for (Eigen::Index c = 0; c < d; ++c)
        for (Eigen::Index e = 0; e < d; ++e) m_map(a + b * d, c + e * d) = kk(a, c) * kw(e, b);
  return {kk, qq, kw, kk * qq * kw, qq * kw, kk * qq, m_map};
}

// F_AB = F_A + F_B + S^K_A R^{QP}_B + M_B[S^Q_A] + U^{KQ}_B P_A (SPEC §5); the rest add.
template <class S>
ThirdOrderPrintedSummary<S> third_printed_combine(const ThirdOrderPrintedSummary<S>& a, const ThirdOrderPrintedSummary<S>& b) {
  const Mat<S> f = a.f + b.f + a.sk * b.r_qp + apply_segment_map(b.m_map, a.sq, a.p.cols()) + b.u_kq * a.p;
  return {a.sk + b.sk, a.sq + b.sq, a.p + b.p, f, a.r_qp + b.r_qp, a.u_kq + b.u_kq, a.m_map + b.m_map};
}

template <class S>
ThirdOrderSummary<S> third_token(const Vec<S>& q, const Vec<S>& k, const Vec<S>& w) {
  const Mat<S> kk = k * k.transpose(), qq = q * q.transpose(), kw = k * w.transpose();
  return {kk, qq, kw, kk * qq, qq * kw, kk * qq * kw};
}

// Derived: F'_AB = F'_A + F'_B + S^K_A S^Q_B P_A + S^K_A Y_B + X_B P_A,
// X_AB = X_A + X_B + S^K_A S^Q_B, Y_AB = Y_A + Y_B + S^Q_B P_A (l in B sees all of A's i and j).
template <class S>
ThirdOrderSummary<S> third_combine(const ThirdOrderSummary<S>& a, const ThirdOrderSummary<S>& b) {
  const Mat<S> sk_a_sq_b = a.sk * b.sq;
  return {a.sk + b.sk,
          a.sq + b.sq,
          a.p + b.p,
          a.x + b.x + sk_a_sq_b,
          a.y + b.y + b.sq * a.p,
          a.f + b.f + sk_a_sq_b * a.p + a.sk * b.y + b.x * a.p};
}

// Inclusive states by the exclusive Blelloch scan; the printed operator for the printed masked and the
// unmasked reads, the derived one for the masked target.
template <class S>
Result<S> third_scan(const Problem<S>& p, ThirdOrder variant) {
  validate(p, "hla::third_scan");
  require_no_initial_summaries(p, "hla::third_scan");
  require_no_decay(p, "hla::third_scan");
  const Mat<S> w = values_of(p);
  const Eigen::Index d = p.dk(), dw = w.cols();
  const Mat<S> zero_dd = Mat<S>::Zero(d, d), zero_dw = Mat<S>::Zero(d, dw);
  Mat<S> raw(p.T(), dw);
  if (variant == ThirdOrder::masked) {
    std::vector<ThirdOrderSummary<S>> x;
    for (Eigen::Index t = 0; t < p.T(); ++t)
      x.push_back(third_token<S>(p.q.row(t).transpose(), p.k.row(t).transpose(), w.row(t).transpose()));
    const auto states = scan::blelloch_inclusive(x, third_combine<S>,
                                                 ThirdOrderSummary<S>{zero_dd, zero_dd, zero_dw, zero_dd, zero_dw, zero_dw});
    for (Eigen::Index t = 0; t < p.T(); ++t) raw.row(t) = p.q.row(t) * states[t].f;
  } else {
    std::vector<ThirdOrderPrintedSummary<S>> x;
    for (Eigen::Index t = 0; t < p.T(); ++t)
      x.push_back(third_printed_token<S>(p.q.row(t).transpose(), p.k.row(t).transpose(), w.row(t).transpose()));
    const ThirdOrderPrintedSummary<S> identity{zero_dd, zero_dd, zero_dw, zero_dw, zero_dw, zero_dd,
                                               Mat<S>::Zero(d * dw, d * d)};
    const auto states = scan::blelloch_inclusive(x, third_printed_combine<S>, identity);
    for (Eigen::Index t = 0; t < p.T(); ++t) {
      const auto& st = states[t];
      raw.row(t) = p.q.row(t) * (variant == ThirdOrder::unmasked ? Mat<S>(st.sk * st.sq * st.p) : st.f);
    }
  }
  return finish_rows(p, raw);
}

}  // namespace larc::ref::hla
