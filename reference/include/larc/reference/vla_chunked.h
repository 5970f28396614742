// VLA's chunked form (SPEC §1): what vla::serial computes, chunk by chunk, chunk size C ≥ 1, any T
// (the last chunk partial). Rows are tokens, t and r local to the chunk (0-indexed), n ≤ C its length;
// A_s, X_c = S_c^T and ζ are the memory before the chunk.
//
// Penalty recursion (SPEC §1's Sherman–Morrison step; VLA-C4), blocked. Unrolling A_t = A_{t−1} − z_t z_t^T/δ_t
// over the chunk, and writing c_t = nudge_eps × (number of nudges after chunk tokens ≤ t), gives
//     A_t = A_s + c_t I − Σ_{r≤t} z_r z_r^T / δ_r,
// so  z_t = A_{t−1} u_t = y_t − Σ_{r<t} z_r (z_r·u_t)/δ_r,   y_t = (A_s + c_{t−1} I) u_t,   δ_t = max(1 + u_t·z_t, stab_eps).
// With Y = U A_s^T (+ c_{t−1} u_t per row; one matmul) and the Gram G = Y U^T (G_jt = y_j·u_t), Z = T_z Y for a
// unit lower triangular T_z whose row t is e_t − Σ_{r<t} (P_rt/δ_r) T_z[r], P_rt = z_r·u_t = (T_z G)_rt: a
// recurrence on n×n quantities only (O(n³), the one sequential part), with δ_t floored where serial floors
// it (penalty_denominator, from P_tt = z_t·u_t). Then, for all t of the chunk at once,
//     A_t k̂_t = A_s k̂_t + c_t k̂_t − Σ_{r≤t} z_r (z_r·k̂_t)/δ_r   i.e.   K̂ A_s^T + Diag(c) K̂ − ((K̂ Z^T) ⊙ L) D⁻¹ Z
// (L the lower triangle including the diagonal: A_t already holds z_t), α̂_t = norm(A_t k̂_t) (alpha_direction),
// and the next chunk starts from A_s + c_{n−1} I − Z^T D⁻¹ Z.
// The nudge: it adds a multiple of I, which the form above carries as c_t, so chunks are never cut at nudge
// points; its phase is the token number m0.tokens + (index in the sequence) + 1, as in serial.
//
// Affine recursion (SPEC §1: S_t = S_{t−1}(I − k̂_t α̂_t^T) + v_t α̂_t^T = S_{t−1} F_t + G_t), on the stored
// X = S^T: X_t = X_{t−1} + α̂_t r_t^T with the residual r_t = v_t − S_{t−1} k̂_t = v_t − X_{t−1}^T k̂_t. Summing,
// X_t = X_c + Σ_{s≤t} α̂_s r_s^T, hence r_t = v_t − X_c^T k̂_t − Σ_{s<t} (k̂_t·α̂_s) r_s, i.e.
//     (I + StrictLower(K̂ Â^T)) R = V − K̂ X_c.
// With T' = (I + StrictLower(K̂ Â^T))⁻¹ (one unit lower triangular solve), W = T' K̂ and U = T' V (both
// independent of the state): R = U − W X_c, X_end = X_c + Â^T R, and the read numerators S_t φ(q_t) are
// Φ_Q X_c + ((Φ_Q Â^T) ⊙ L) R: the state at the chunk start plus intra-chunk terms.
// This is the WY form with two vector sets: Π_t F_t = I − W^T Â (induction on P_t = P_{t−1} − (P_{t−1} k̂_t) α̂_t^T:
// w_t = P_{t−1} k̂_t = k̂_t − Σ_{s<t} w_s (α̂_s·k̂_t), i.e. W = T' K̂), so X_end = (I − Â^T W) X_c + Â^T U =
// (S_c Π_t F_t + Σ_s G_s F_{s+1}⋯F_n)^T. With α̂_t = β_t k̂_t it is delta_rule::chunked's UT transform.
//
// Cost per chunk of n tokens: O(n d_k²) (U A_s^T, K̂ A_s^T, Z^T D⁻¹ Z), O(n² d_k) for the Grams, O(n³) for the
// recurrence of T_z and the solve, O(n² d_v + n d_k d_v) for the affine stage; ζ and the read as serial.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#include "larc/reference/matmul_operands.h"
#include "larc/reference/vla.h"

namespace larc::ref::vla {

// One chunk of the penalty recursion: α̂_t for every token of the chunk (rows) and A after it.
template <class S>
struct PenaltyChunk {
  Mat<S> alpha_hat;  // n×d_k
  Mat<S> a_end;      // d_k×d_k
};

// The blocked Sherman–Morrison recursion above, from A_s = a_start, for the chunk's penalty directions
// u (rows) and key directions khat (rows); first_token is the 1-based number of the chunk's first token.
// Products go through `ops` (see chunked); the recurrence of T_z, a triangular solve, stays in S.
template <class S>
PenaltyChunk<S> penalty_chunk(const Options<S>& opt, const Mat<S>& a_start, const Mat<S>& u, const Mat<S>& khat,
                              std::int64_t first_token, const MatmulOperands<S>& ops = {}) {
  const Eigen::Index n = u.rows();
  Vec<S> c(n);  // c_t: the nudges after chunk tokens ≤ t, times nudge_eps
  for (Eigen::Index t = 0; t < n; ++t)
    c(t) = (t == 0 ? S(0) : c(t - 1)) + (nudged_after(opt, first_token + t) ? opt.nudge_eps : S(0));
  Mat<S> y = ops.product(u, a_start.transpose());  // row t: (A_s u_t)^T
  for (Eigen::Index t = 1; t < n; ++t) y.row(t) += c(t - 1) * u.row(t);
  const Mat<S> gram = ops.product(y, u.transpose());  // G_jt = y_j·u_t
  Mat<S> tz = Mat<S>::Identity(n, n);     // Z = T_z Y
  Mat<S> zu(n, n);                        // P_rt = z_r·u_t (rows r < t are used)
  Vec<S> delta(n);
  for (Eigen::Index t = 0; t < n; ++t) {
    for (Eigen::Index r = 0; r < t; ++r) tz.row(t) -= (zu(r, t) / delta(r)) * tz.row(r);
    zu.row(t) = tz.row(t) * gram;
    delta(t) = penalty_denominator(opt, zu(t, t));
  }
  const Mat<S> z = ops.product(tz, y);
  const Mat<S> z_scaled = delta.cwiseInverse().asDiagonal() * z;  // D⁻¹ Z
  const Mat<S> kz = ops.product(khat, z.transpose()).template triangularView<Eigen::Lower>();  // k̂_t·z_r, r ≤ t
  const Mat<S> a_khat = ops.product(khat, a_start.transpose()) + c.asDiagonal() * khat - ops.product(kz, z_scaled);  // rows (A_t k̂_t)^T
  PenaltyChunk<S> out{Mat<S>(n, u.cols()), a_start - ops.product(z.transpose(), z_scaled)};
  for (Eigen::Index t = 0; t < n; ++t)
    out.alpha_hat.row(t) = alpha_direction(opt, Vec<S>(a_khat.row(t).transpose())).transpose();
  if (n > 0) out.a_end.diagonal().array() += c(n - 1);
  return out;
}

// Chunked form (see the top of this file): the penalty recursion and the affine recursion chunk by chunk,
// each chunk's outputs from the memory at its start plus intra-chunk terms.
// Every matrix product goes through `ops` (matmul_operands.h): with an operand format it is the `io`
// grade's baseline, whose rounded operands are U and A_s (of Y = U A_s^T), Y and U (of the Gram Y U^T),
// T_z (formed in S, then rounded) and Y, K̂ and Z (of K̂ Z^T), K̂ and A_s (of K̂ A_s^T), (K̂ Z^T) ⊙ L and
// D⁻¹ Z, Z^T and D⁻¹ Z (the next A); K̂ and Â (of K̂ Â^T), T' (formed in S by the unit lower triangular
// solve, then rounded) and K̂, V (W = T' K̂, U = T' V), W and X_c (of W X_c), Φ_Q and Â, Φ_Q and X_c,
// (Φ_Q Â^T) ⊙ L and R, Â^T and R. The feature map, the normalisations, δ and the T_z recurrence, ζ, the
// read's division and the carried X, A stay in S (docs/gate.md "Precision grades").
template <class S>
Result<S> chunked(const Problem<S>& p, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  validate(p);
  if (chunk < 1) throw std::invalid_argument("vla::chunked: chunk size must be >= 1");
  const Memory<S> m0 = start_memory(p);
  Mat<S> a = m0.a, x = m0.s;
  Vec<S> zeta = m0.zeta;
  const Mat<S> phi_k = linear_attention::feature_rows(p.opt.feature, p.k);
  const Mat<S> phi_q = linear_attention::feature_rows(p.opt.feature, p.q);
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index c0 = 0; c0 < p.T(); c0 += chunk) {
    const Eigen::Index n = std::min(chunk, p.T() - c0);
    Mat<S> khat(n, p.dk());
    for (Eigen::Index t = 0; t < n; ++t)
      khat.row(t) = key_direction(p.opt, Vec<S>(phi_k.row(c0 + t).transpose())).transpose();
    PenaltyChunk<S> pen = penalty_chunk(p.opt, a, Mat<S>(p.u.middleRows(c0, n)), khat, m0.tokens + c0 + 1, ops);
    const Mat<S>& ahat = pen.alpha_hat;
    const Mat<S> fq = phi_q.middleRows(c0, n);
    const Mat<S> ka = ops.product(khat, ahat.transpose());  // k̂_t·α̂_s; its strict lower part defines T'
    const auto unit_lower = ka.template triangularView<Eigen::UnitLower>();  // I + StrictLower(K̂ Â^T)
    // T'·M: one solve on M, or, when operands are rounded, T' formed first so that it can be rounded.
    const Mat<S> t_prime = ops.rounds() ? Mat<S>(unit_lower.solve(Mat<S>::Identity(n, n))) : Mat<S>();
    auto apply_t_prime = [&](const Mat<S>& m) -> Mat<S> {
      return ops.rounds() ? ops.product(t_prime, m) : Mat<S>(unit_lower.solve(m));
    };
    const Mat<S> w = apply_t_prime(khat);                             // W = T' K̂
    const Mat<S> wv = apply_t_prime(Mat<S>(p.v.middleRows(c0, n)));  // U = T' V
    const Mat<S> r = wv - ops.product(w, x);  // residuals r_t = v_t − S_{t−1} k̂_t
    const Mat<S> qa = ops.product(fq, ahat.transpose()).template triangularView<Eigen::Lower>();
    const Mat<S> num = ops.product(fq, x) + ops.product(qa, r);  // rows (S_t φ(q_t))^T
    for (Eigen::Index t = 0; t < n; ++t) {
      zeta += phi_k.row(c0 + t).transpose();
      o.row(c0 + t) = read_scaled(p.opt, Vec<S>(num.row(t).transpose()), zeta, Vec<S>(fq.row(t).transpose())).transpose();
    }
    x += ops.product(ahat.transpose(), r);
    a = std::move(pen.a_end);
  }
  return {std::move(o), Memory<S>{std::move(x), std::move(a), std::move(zeta), m0.tokens + p.T()}};
}

// VLA's forms (family.h): serial and streamed (vla.h), chunked (above; chunk and ops are used by it
// only). VLA has no materialized form; its scan is a verb of vla.h, checked by the claims.
template <class S>
Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  switch (form) {
    case Form::serial: return serial(p);
    case Form::streamed: return streamed(p);
    case Form::chunked: return chunked(p, chunk, ops);
    case Form::materialized: break;
  }
  throw std::invalid_argument(std::string("vla::run: VLA has no ") + form_name(form) + " form");
}

// The VLA family for the batched driver and the harness (family.h).
struct Family {
  static constexpr std::string_view name = "vla";
  static constexpr std::array forms{Form::serial, Form::chunked, Form::streamed};
  template <class S>
  using Problem = vla::Problem<S>;
  template <class S>
  using Result = vla::Result<S>;
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return vla::run(p, form, chunk, ops);
  }
};
static_assert(MechanismFamily<Family>);

// vla_batched (vla.h) in any of VLA's forms; chunk (C ≥ 1) and `operands` (which rounds the chunked
// form's product operands: the io grade's baseline) are read by the chunked form only.
template <class S>
BatchedResult<S> vla_batched_in(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, Form form, Eigen::Index chunk,
                                const std::optional<Tensor<std::type_identity_t<S>>>& u = {},
                                const Options<std::type_identity_t<S>>& opt = {},
                                const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                                OperandFormat operands = OperandFormat::none) {
  const MatmulOperands<S> ops(operands);
  return detail::run_batched(q, k, v, u, opt, initial_state,
                             [&](const Problem<S>& p) { return Family::run(p, form, chunk, ops); });
}

// vla_batched (vla.h) with the chunked form, chunk size C ≥ 1; `operands` rounds its product operands
// (the io grade's baseline, see chunked).
template <class S>
BatchedResult<S> vla_chunked_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, Eigen::Index chunk,
                                     const std::optional<Tensor<std::type_identity_t<S>>>& u = {},
                                     const Options<std::type_identity_t<S>>& opt = {},
                                     const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                                     OperandFormat operands = OperandFormat::none) {
  return vla_batched_in<S>(q, k, v, Form::chunked, chunk, u, opt, initial_state, operands);
}

}  // namespace larc::ref::vla
