// The backward verbs of second-order HLA and AHLA (SPEC §5): the reverse-mode adjoints of second_serial
// (every SecondOrder variant) and ahla_serial, plain or normalised, with decay γ (docs/gradients.md,
// "HLA"). For the loss
//
//     L = Σ_t ⟨do_t, o_t⟩ + Σ_t dden_t den_t       (den only for the normalised variants)
//
// backward returns ∂L/∂ of every input of Problem: q, k, v, the decay γ (a scalar) and, when the problem
// has them, the initial summaries (hla_common.h); ε is a fixed parameter. Notation and the augmented values w_t = v_t or [v_t; 1] as in hla_common.h: every
// summary that carries values carries its normaliser as the last column, and so do their adjoints.
// The adjoints use + − × and, for the normalised read, ÷ by den_t + ε exactly where the forward
// divides, so they are exact over rationals. second_materialized_backward and ahla_materialized_backward
// are the adjoints of the materialised forms, computed independently through the T×T matrices.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "larc/reference/checkpointed_reverse.h"
#include "larc/reference/hla_ahla.h"
#include "larc/reference/hla_second.h"

namespace larc::ref::hla {

// The cotangents of Result: do (T×d_v, or empty for zero) and, for the normalised variants, dden (T,
// or absent for zero).
template <class S>
struct Cotangents {
  Mat<S> d_o;
  std::optional<Vec<S>> d_den;
};

// ∂L/∂ of each input of Problem, in its shape; the initial summaries' only when the problem has them.
template <class S>
struct Gradients {
  Mat<S> dq, dk, dv;  // T×d, T×d, T×d_v
  S dgamma = S(0);
  std::optional<SecondOrderMemory<S>> d_second_order_initial = {};  // ∂L/∂(S^K_0, [C_0 | m_0], [G_0 | h_0])
  std::optional<AhlaMemory<S>> d_ahla_initial = {};                 // ∂L/∂([P_0 | m^K_0], [E_0 | n_0])
};

namespace detail {

template <class S>
void validate_cotangents(const Problem<S>& p, const Cotangents<S>& c, const std::string& who) {
  if (c.d_o.size() != 0 && (c.d_o.rows() != p.T() || c.d_o.cols() != p.dv()))
    throw std::invalid_argument(who + ": d_o must be T×d_v (or empty for zero)");
  if (c.d_den && !p.opt.normalized)
    throw std::invalid_argument(who + ": d_den is the cotangent of the normalised denominator; the problem is not normalised");
  if (c.d_den && c.d_den->size() != p.T()) throw std::invalid_argument(who + ": d_den must have T entries");
}

template <class S>
Gradients<S> zero_gradients(const Problem<S>& p) {
  return {Mat<S>::Zero(p.T(), p.dk()), Mat<S>::Zero(p.T(), p.dk()), Mat<S>::Zero(p.T(), p.dv()), S(0)};
}

// The adjoint of finish (hla_common.h) at token t: ∂L/∂raw_t (width value_width) from do_t and dden_t.
//   plain:       draw = do_t
//   normalised:  o_t = r / (den + ε) with raw = [r; den]:  draw = [do_t / (den + ε);  dden_t − (o_t·do_t) / (den + ε)]
template <class S>
Vec<S> raw_adjoint(const Options<S>& opt, const Vec<S>& raw, const Cotangents<S>& c, Eigen::Index t) {
  const Eigen::Index width = raw.size();
  Vec<S> d_raw = Vec<S>::Zero(width);
  const bool has_do = c.d_o.size() != 0;
  if (!opt.normalized) {
    if (has_do) d_raw = c.d_o.row(t).transpose();
    return d_raw;
  }
  const Eigen::Index dv = width - 1;
  const S den = raw(dv) + opt.eps;
  if (has_do) {
    const auto d_o = c.d_o.row(t).transpose();
    d_raw.head(dv) = d_o / den;
    d_raw(dv) = -S(raw.head(dv).dot(d_o)) / (den * den);  // −(o_t·do_t) / (den + ε), o_t = r / (den + ε)
  }
  if (c.d_den) d_raw(dv) += (*c.d_den)(t);
  return d_raw;
}

}  // namespace detail

// The adjoint of second_serial(p, variant) (docs/gradients.md, "HLA"). Per token, from the summaries
// before (S^K', C', G') and after (S^K, C, G), with raw_t = qᵀ(S^K C − G) (G absent for unmasked),
// draw = raw_adjoint, u = S^Kᵀ q, and (γ_G, γ_X) = (γ², γ) for masked, (γ, 1) for masked_as_printed:
//   read     dq_t += S^K (C draw) − G draw,   D_SK += q (C draw)ᵀ,   D_C += u drawᵀ,   D_G −= q drawᵀ
//   C        C = γ C' + q wᵀ:     dq_t += D_C w,  dw_t = D_Cᵀ q,  dγ += ⟨C', D_C⟩,  D_C' = γ D_C
//   S^K      S^K = γ S^K' + k kᵀ: dk_t += (D_SK + D_SKᵀ) k,  dγ += ⟨S^K', D_SK⟩,  D_SK' = γ D_SK
//   G        G = γ_G G' + γ_X k kᵀ C':  with E = γ_X D_G,  dk_t += E (C'ᵀ k) + C' (Eᵀ k),
//            dγ += γ_G'(γ) ⟨G', D_G⟩ + γ_X'(γ) ⟨k kᵀ C', D_G⟩,  D_G' = γ_G D_G,  D_C' += k kᵀ E
// dv_t is dw_t without its normaliser row. The sweep starts from the problem's initial summaries, and
// (D_SK, D_C, D_G) after the step of token 0 are the adjoints of the summaries before it: ∂L/∂S^K_0,
// ∂L/∂[C_0 | m_0], ∂L/∂[G_0 | h_0]. Checkpointed every `checkpoint` tokens over SecondOrderState
// (checkpointed_reverse.h); no summary is recovered by undoing a step (that divides by γ).
template <class S>
Gradients<S> second_backward(const Problem<S>& p, SecondOrder variant, const Cotangents<S>& c, Eigen::Index checkpoint = 64) {
  validate(p, "hla::second_backward");
  detail::validate_cotangents(p, c, "hla::second_backward");
  const Eigen::Index T = p.T(), d = p.dk(), dv = p.dv(), width = value_width(p.opt, dv);
  Gradients<S> g = detail::zero_gradients(p);
  const S& gamma = p.opt.gamma;
  const bool masked = variant != SecondOrder::unmasked, printed = variant == SecondOrder::masked_as_printed;
  const S gamma_g = printed ? gamma : S(gamma * gamma), gamma_x = printed ? S(1) : gamma;
  const S dgamma_g = printed ? S(1) : S(2 * gamma), dgamma_x = printed ? S(0) : S(1);
  Mat<S> d_sk = Mat<S>::Zero(d, d), d_c = Mat<S>::Zero(d, width), d_g = Mat<S>::Zero(d, width);
  const Mat<S> w = values_of(p);
  reverse_over_states(
      SecondOrderState<S>(p.opt, variant, second_order_start(p, "hla::second_backward")), T, checkpoint,
      [&p](Eigen::Index t, SecondOrderState<S>& st) {
        st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose());
      },
      [&](Eigen::Index t, const SecondOrderState<S>& before, const SecondOrderState<S>& after) {
        const Vec<S> q = p.q.row(t).transpose(), k = p.k.row(t).transpose(), w_t = w.row(t).transpose();
        const Mat<S>&sk = after.SK(), &cm = after.C_and_m(), &gm = after.G_and_h();
        const Vec<S> u = sk.transpose() * q;
        Vec<S> raw = cm.transpose() * u;
        if (masked) raw -= gm.transpose() * q;
        const Vec<S> d_raw = detail::raw_adjoint(p.opt, raw, c, t);
        const Vec<S> c_draw = cm * d_raw;
        Vec<S> dq = sk * c_draw;
        d_sk.noalias() += q * c_draw.transpose();
        d_c.noalias() += u * d_raw.transpose();
        if (masked) {
          dq -= gm * d_raw;
          d_g.noalias() -= q * d_raw.transpose();
        }
        // C = γ C' + q wᵀ
        dq += d_c * w_t;
        g.dv.row(t) = (d_c.transpose() * q).head(dv).transpose();
        g.dgamma += before.C_and_m().cwiseProduct(d_c).sum();
        d_c *= gamma;
        // S^K = γ S^K' + k kᵀ
        Vec<S> dk = (d_sk + d_sk.transpose()) * k;
        g.dgamma += before.SK().cwiseProduct(d_sk).sum();
        d_sk *= gamma;
        // G = γ_G G' + γ_X k kᵀ C'
        if (masked) {
          const Mat<S>& c_prev = before.C_and_m();
          const Vec<S> kc = c_prev.transpose() * k;  // C'ᵀ k
          const Mat<S> e = gamma_x * d_g;
          const Vec<S> ek = e.transpose() * k;
          dk += e * kc + c_prev * ek;
          g.dgamma += dgamma_g * before.G_and_h().cwiseProduct(d_g).sum() + dgamma_x * S(kc.dot(d_g.transpose() * k));
          d_g *= gamma_g;
          d_c.noalias() += k * ek.transpose();  // k kᵀ E
        }
        g.dq.row(t) = dq.transpose();
        g.dk.row(t) = dk.transpose();
      });
  if (p.second_order_initial) g.d_second_order_initial = SecondOrderMemory<S>{d_sk, d_c, d_g};
  return g;
}

// The adjoint of ahla_serial (docs/gradients.md, "HLA"). Per token, from (P', E') before and (P, E)
// after, raw_t = qᵀ E, draw = raw_adjoint, y = Pᵀ q:
//   read   dq_t += E draw,   D_E += q drawᵀ
//   E      E = γ E' + k yᵀ:  dk_t += D_E y,  dy = D_Eᵀ k,  dq_t += P dy,  D_P += q dyᵀ,  dγ += ⟨E', D_E⟩,  D_E' = γ D_E
//   P      P = γ P' + k wᵀ:  dk_t += D_P w,  dw_t = D_Pᵀ k,  dγ += ⟨P', D_P⟩,  D_P' = γ D_P
// (E's update reads P after this token's write, so D_P gets q dyᵀ before P's own step is undone.)
// From the problem's initial summaries; (D_P, D_E) after token 0 are ∂L/∂[P_0 | m^K_0], ∂L/∂[E_0 | n_0].
// Checkpointed every `checkpoint` tokens over AhlaState.
template <class S>
Gradients<S> ahla_backward(const Problem<S>& p, const Cotangents<S>& c, Eigen::Index checkpoint = 64) {
  validate(p, "hla::ahla_backward");
  detail::validate_cotangents(p, c, "hla::ahla_backward");
  const Eigen::Index T = p.T(), d = p.dk(), dv = p.dv(), width = value_width(p.opt, dv);
  Gradients<S> g = detail::zero_gradients(p);
  const S& gamma = p.opt.gamma;
  Mat<S> d_p = Mat<S>::Zero(d, width), d_e = Mat<S>::Zero(d, width);
  const Mat<S> w = values_of(p);
  reverse_over_states(
      AhlaState<S>(p.opt, ahla_start(p, "hla::ahla_backward")), T, checkpoint,
      [&p](Eigen::Index t, AhlaState<S>& st) {
        st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose());
      },
      [&](Eigen::Index t, const AhlaState<S>& before, const AhlaState<S>& after) {
        const Vec<S> q = p.q.row(t).transpose(), k = p.k.row(t).transpose(), w_t = w.row(t).transpose();
        const Mat<S>&pm = after.P_and_mK(), &em = after.E_and_n();
        const Vec<S> d_raw = detail::raw_adjoint(p.opt, Vec<S>(em.transpose() * q), c, t);
        Vec<S> dq = em * d_raw;
        d_e.noalias() += q * d_raw.transpose();
        // E = γ E' + k yᵀ, y = Pᵀ q
        const Vec<S> y = pm.transpose() * q, dy = d_e.transpose() * k;
        Vec<S> dk = d_e * y;
        dq += pm * dy;
        d_p.noalias() += q * dy.transpose();
        g.dgamma += before.E_and_n().cwiseProduct(d_e).sum();
        d_e *= gamma;
        // P = γ P' + k wᵀ
        dk += d_p * w_t;
        g.dv.row(t) = (d_p.transpose() * k).head(dv).transpose();
        g.dgamma += before.P_and_mK().cwiseProduct(d_p).sum();
        d_p *= gamma;
        g.dq.row(t) = dq.transpose();
        g.dk.row(t) = dk.transpose();
      });
  if (p.ahla_initial) g.d_ahla_initial = AhlaMemory<S>{d_p, d_e};
  return g;
}

// ---- the adjoints of the materialised forms (O(T²) memory: moderate T), a cross-check that shares no
// recurrence with the serial adjoints -------------------------------------------------------------------

namespace detail {

// ∂L/∂raw for every row of raw (T × value_width), through raw_adjoint.
template <class S>
Mat<S> raw_rows_adjoint(const Problem<S>& p, const Mat<S>& raw, const Cotangents<S>& c) {
  Mat<S> d_raw(raw.rows(), raw.cols());
  for (Eigen::Index t = 0; t < raw.rows(); ++t) d_raw.row(t) = raw_adjoint(p.opt, Vec<S>(raw.row(t).transpose()), c, t).transpose();
  return d_raw;
}

// dγ from ∂L/∂Γ: Γ_tj = γ^{t−j} (j ≤ t), so dγ = Σ_{j<t} dΓ_tj (t − j) γ^{t−j−1}.
template <class S>
S decay_matrix_adjoint(const Mat<S>& d_decay, const S& gamma) {
  S dgamma(0);
  for (Eigen::Index t = 0; t < d_decay.rows(); ++t)
    for (Eigen::Index j = 0; j < t; ++j) dgamma += d_decay(t, j) * from_double<S>(static_cast<double>(t - j)) * power(gamma, t - j - 1);
  return dgamma;
}

// The q, k gradients from ∂L/∂B, B = Q Kᵀ.
template <class S>
void add_score_adjoint(const Problem<S>& p, const Mat<S>& d_scores, Gradients<S>& g) {
  g.dq += d_scores * p.k;
  g.dk += d_scores.transpose() * p.q;
}

// dγ from ∂L/∂ of row weights a_t = γ^{t+e}: Σ_t da_t (t + e) γ^{t+e−1}.
template <class S>
S row_decay_adjoint(const Vec<S>& d_weights, const S& gamma, Eigen::Index e) {
  S dgamma(0);
  for (Eigen::Index t = 0; t < d_weights.size(); ++t)
    if (t + e > 0) dgamma += d_weights(t) * from_double<S>(static_cast<double>(t + e)) * power(gamma, t + e - 1);
  return dgamma;
}

// The adjoint of second_carried_rows over the whole sequence (the initial summaries' rows of
// second_materialized): with a_t = γ^{t+1}, X = S^K_0 C_0 − G_0, Λ_tj = a_t Γ_tj = γ^{2t+1−j} (j ≤ t),
// N = Q S^K_0 Qᵀ and rows = diag(a²) Q X + (N ⊙ Λ) W:
//   dX = Qᵀ diag(a²) dR:  dS^K_0 = dX C_0ᵀ + Qᵀ dN Q,  dC_0 = S^K_0ᵀ dX,  dG_0 = −dX,   dN = (dR Wᵀ) ⊙ Λ,
//   dQ += diag(a²) dR Xᵀ + dN Q S^K_0ᵀ + dNᵀ Q S^K_0,  dW += (N ⊙ Λ)ᵀ dR,
//   dγ += Σ_t (2t+2) γ^{2t+1} ⟨(Q X)_t, dR_t⟩ + Σ_{j≤t} (dR Wᵀ ⊙ N)_tj (2t+1−j) γ^{2t−j}.
template <class S>
SecondOrderMemory<S> second_carried_rows_adjoint(const Problem<S>& p, const SecondOrderMemory<S>& m, const Mat<S>& w,
                                                 const Mat<S>& d_raw, Gradients<S>& g) {
  const S& gamma = p.opt.gamma;
  const Eigen::Index T = p.T();
  const Vec<S> since = decay_since_start(T, gamma), since2 = since.cwiseProduct(since);
  const Mat<S> x = m.sk * m.c - m.g, qx = p.q * x, q_sk = p.q * m.sk;
  const Mat<S> lambda = since.asDiagonal() * decay_matrix(T, gamma), n = q_sk * p.q.transpose();
  const Mat<S> d_x = p.q.transpose() * since2.asDiagonal() * d_raw;
  const Mat<S> d_weighted = d_raw * w.transpose(), d_n = d_weighted.cwiseProduct(lambda);
  g.dq += since2.asDiagonal() * d_raw * x.transpose() + d_n * p.q * m.sk.transpose() + d_n.transpose() * q_sk;
  g.dv += (Mat<S>(n.cwiseProduct(lambda)).transpose() * d_raw).leftCols(p.dv());
  Vec<S> d_since2(T);
  for (Eigen::Index t = 0; t < T; ++t) d_since2(t) = qx.row(t).dot(d_raw.row(t));
  g.dgamma += row_decay_adjoint(d_since2, gamma * gamma, 1) * 2 * gamma;  // a_t² = (γ²)^{t+1}
  const Mat<S> d_lambda = d_weighted.cwiseProduct(n);
  for (Eigen::Index t = 0; t < T; ++t)
    for (Eigen::Index j = 0; j <= t; ++j)
      g.dgamma += d_lambda(t, j) * from_double<S>(static_cast<double>(2 * t + 1 - j)) * power(gamma, 2 * t - j);
  return {Mat<S>(d_x * m.c.transpose() + p.q.transpose() * d_n * p.q), Mat<S>(m.sk.transpose() * d_x), Mat<S>(-d_x)};
}

// The adjoint of ahla_carried_rows over the whole sequence (the initial summaries' rows of
// ahla_materialized): with a_t = γ^{t+1}, U = L ⊙ (Q Kᵀ), Y = Q P_0, Z = Q E_0 + U Y and rows = diag(a) Z:
//   dZ = diag(a) dR:  dE_0 = Qᵀ dZ,  dY = Uᵀ dZ,  dP_0 = Qᵀ dY,  dU = L ⊙ (dZ Yᵀ) (→ dQ += dU K, dK += dUᵀ Q),
//   dQ += dZ E_0ᵀ + dY P_0ᵀ,  dγ += Σ_t (t+1) γ^t ⟨Z_t, dR_t⟩.
template <class S>
AhlaMemory<S> ahla_carried_rows_adjoint(const Problem<S>& p, const AhlaMemory<S>& m, const Mat<S>& d_raw, Gradients<S>& g) {
  const Vec<S> since = decay_since_start(p.T(), p.opt.gamma);
  const Mat<S> u = lower(Mat<S>(p.q * p.k.transpose())), y = p.q * m.p, z = p.q * m.e + u * y;
  const Mat<S> d_z = since.asDiagonal() * d_raw, d_y = u.transpose() * d_z;
  g.dq += d_z * m.e.transpose() + d_y * m.p.transpose();
  add_score_adjoint(p, lower(Mat<S>(d_z * y.transpose())), g);
  Vec<S> d_since(p.T());
  for (Eigen::Index t = 0; t < p.T(); ++t) d_since(t) = z.row(t).dot(d_raw.row(t));
  g.dgamma += row_decay_adjoint(d_since, p.opt.gamma, 1);
  return {Mat<S>(p.q.transpose() * d_y), Mat<S>(p.q.transpose() * d_z)};
}

}  // namespace detail

// The adjoint of second_materialized (unmasked or masked; the printed decay has no materialised form):
// with B = Q Kᵀ, A_γ = Γ ⊙ B, B_m = L ⊙ B (masked) or B, N = A_γ B_mᵀ, M = N ⊙ Γ, raw = M W and dR = ∂L/∂raw:
//   dW = Mᵀ dR,  dM = dR Wᵀ,  dN = dM ⊙ Γ,  dA_γ = dN B_m,  dB_m = dNᵀ A_γ,
//   dB = Γ ⊙ dA_γ + (L ⊙) dB_m,  dQ = dB K,  dK = dBᵀ Q,  dΓ = dM ⊙ N + dA_γ ⊙ B → dγ;
// with initial summaries (masked only), raw gains second_carried_rows and the gradients its adjoint.
template <class S>
Gradients<S> second_materialized_backward(const Problem<S>& p, SecondOrder variant, const Cotangents<S>& c) {
  validate(p, "hla::second_materialized_backward");
  detail::validate_cotangents(p, c, "hla::second_materialized_backward");
  if (variant == SecondOrder::masked_as_printed)
    throw std::invalid_argument("hla::second_materialized_backward: the printed decay has no masked-product form (SPEC §5)");
  const bool masked = variant == SecondOrder::masked;
  const bool initial = p.second_order_initial || p.ahla_initial;
  if (initial && !masked)
    throw std::invalid_argument("hla::second_materialized_backward: second_order_initial is taken by the masked variant only");
  const Mat<S> w = values_of(p), scores = p.q * p.k.transpose(), decay = decay_matrix(p.T(), p.opt.gamma);
  const Mat<S> a_gamma = decay.cwiseProduct(scores);
  const Mat<S> second = masked ? lower(scores) : scores;
  const Mat<S> n = a_gamma * second.transpose(), m = n.cwiseProduct(decay);
  const std::optional<SecondOrderMemory<S>> start =
      initial ? std::optional(second_order_start(p, "hla::second_materialized_backward")) : std::nullopt;
  Mat<S> raw = m * w;
  if (start) raw += second_carried_rows(p.q, w, start->sk, start->c, start->g, p.opt.gamma);
  const Mat<S> d_raw = detail::raw_rows_adjoint(p, raw, c);
  Gradients<S> g = detail::zero_gradients(p);
  g.dv = (m.transpose() * d_raw).leftCols(p.dv());
  const Mat<S> d_m = d_raw * w.transpose(), d_n = d_m.cwiseProduct(decay);
  const Mat<S> d_a_gamma = d_n * second, d_second = d_n.transpose() * a_gamma;
  detail::add_score_adjoint(p, Mat<S>(decay.cwiseProduct(d_a_gamma) + (masked ? lower(d_second) : d_second)), g);
  g.dgamma = detail::decay_matrix_adjoint(Mat<S>(d_m.cwiseProduct(n) + d_a_gamma.cwiseProduct(scores)), p.opt.gamma);
  if (start) g.d_second_order_initial = detail::second_carried_rows_adjoint(p, *start, w, d_raw, g);
  return g;
}

// The adjoint of ahla_materialized: with B = Q Kᵀ, A_γ = Γ ⊙ B, P = A_γ A_γ, raw = (L ⊙ P) W:
//   dW = (L ⊙ P)ᵀ dR,  dP = L ⊙ (dR Wᵀ),  dA_γ = dP A_γᵀ + A_γᵀ dP,  dB = Γ ⊙ dA_γ,  dΓ = dA_γ ⊙ B → dγ;
// with initial summaries, raw gains ahla_carried_rows and the gradients its adjoint.
template <class S>
Gradients<S> ahla_materialized_backward(const Problem<S>& p, const Cotangents<S>& c) {
  validate(p, "hla::ahla_materialized_backward");
  detail::validate_cotangents(p, c, "hla::ahla_materialized_backward");
  const Mat<S> w = values_of(p), scores = p.q * p.k.transpose(), decay = decay_matrix(p.T(), p.opt.gamma);
  const Mat<S> a_gamma = decay.cwiseProduct(scores);
  const Mat<S> m = lower(Mat<S>(a_gamma * a_gamma));
  const std::optional<AhlaMemory<S>> start =
      p.second_order_initial || p.ahla_initial ? std::optional(ahla_start(p, "hla::ahla_materialized_backward")) : std::nullopt;
  Mat<S> raw = m * w;
  if (start) raw += ahla_carried_rows(p.q, p.k, start->p, start->e, p.opt.gamma);
  const Mat<S> d_raw = detail::raw_rows_adjoint(p, raw, c);
  Gradients<S> g = detail::zero_gradients(p);
  g.dv = (m.transpose() * d_raw).leftCols(p.dv());
  const Mat<S> d_p = lower(Mat<S>(d_raw * w.transpose()));
  const Mat<S> d_a_gamma = d_p * a_gamma.transpose() + a_gamma.transpose() * d_p;
  detail::add_score_adjoint(p, Mat<S>(decay.cwiseProduct(d_a_gamma)), g);
  g.dgamma = detail::decay_matrix_adjoint(Mat<S>(d_a_gamma.cwiseProduct(scores)), p.opt.gamma);
  if (start) g.d_ahla_initial = detail::ahla_carried_rows_adjoint(p, *start, d_raw, g);
  return g;
}

}  // namespace larc::ref::hla
