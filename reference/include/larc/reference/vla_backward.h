// The backward verb of VLA (SPEC §1): the reverse-mode adjoint of vla::serial (= vla::streamed, the same
// operations per token), the gradient oracle (docs/gradients.md, "VLA"). For the loss
//
//     L = Σ_t ⟨do_t, o_t⟩ + ⟨dS_T, S_T⟩ + ⟨dA_T, A_T⟩ + dζ_T·ζ_T     (S stored transposed, d_k × d_v)
//
// backward returns ∂L/∂ of every input of Problem: q, k, v, the penalty directions u, λ0 (through
// A_0 = I/λ0 when the problem has no initial memory) and the initial memory (S_0, A_0, ζ_0). stab_eps,
// the nudge, scale and the feature map are fixed parameters; the max(·, stab_eps) floors are
// differentiated on the branch the forward takes (constant where the floor applies).
//
// What is exact: the Sherman–Morrison penalty (÷ by δ_t), the rank-one write and the ratio read (÷ by
// the denominator) use + − × ÷ only, so with identity features and `normalize = false` the whole
// adjoint runs in rationals. The normalisations k̂ = norm(φ(k)), α̂ = norm(A k̂) need √ and ELU + 1 needs
// e^x: every rung but the exact one.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "larc/reference/checkpointed_reverse.h"
#include "larc/reference/delta_rule_fla_front_ends.h"
#include "larc/reference/linear_attention_backward.h"
#include "larc/reference/vla.h"

namespace larc::ref::vla {

// The cotangents of Result: do (T×d_v, or empty for zero) and the final memory's, each optional (zero):
// dS_T (d_k×d_v, of the stored S^T), dA_T (d_k×d_k), dζ_T (d_k).
template <class S>
struct Cotangents {
  Mat<S> d_o;
  std::optional<Mat<S>> d_final_state;
  std::optional<Mat<S>> d_final_penalty;
  std::optional<Vec<S>> d_final_normalizer;
};

// ∂L/∂ of each input of Problem, in its shape. d_initial is returned whether or not the problem has an
// initial memory (its `tokens` is unused); dlambda0 is 0 when it has one (then λ0 is not read).
template <class S>
struct Gradients {
  Mat<S> dq, dk, dv, du;  // T×d_k, T×d_k, T×d_v, T×d_k
  S dlambda0 = S(0);
  Memory<S> d_initial;
};

namespace detail {

template <class S>
void validate_cotangents(const Problem<S>& p, const Cotangents<S>& c) {
  validate_output_cotangents("vla", p.T(), p.dk(), p.dv(), c.d_o, c.d_final_state);
  auto need = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("vla::backward: ") + what);
  };
  need(!c.d_final_penalty || (c.d_final_penalty->rows() == p.dk() && c.d_final_penalty->cols() == p.dk()),
       "d_final_penalty must be d_k×d_k");
  need(!c.d_final_normalizer || c.d_final_normalizer->size() == p.dk(), "d_final_normalizer must have d_k entries");
}

// The adjoint of x̂ = norm(x) (or of x̂ = x when `normalize` is false): dx from dx̂.
template <class S>
Vec<S> direction_adjoint(bool normalize, const Vec<S>& x, const Vec<S>& d_direction) {
  if (!normalize) return d_direction;
  return delta_rule::l2_normalized_rows_backward<S>(Mat<S>(x.transpose()), Mat<S>(d_direction.transpose()), S(0)).row(0).transpose();
}

}  // namespace detail

// The adjoint of serial (docs/gradients.md, "VLA"). Carried backwards: D_X = ∂L/∂S_t^T, D_A = ∂L/∂A_t,
// D_ζ = ∂L/∂ζ_t. Per token, from the memory before (S', A', ζ') and after (S, A, ζ), undoing the step in
// reverse order (φq = φ(q_t), φk = φ(k_t), stored X = S^T):
//   read    plain: D_X += φq (scale do_t)ᵀ, dφq = scale X do_t;
//           ratio, den = ζ·φq (unfloored): D_X += φq (do_t/den)ᵀ, dφq = X do_t/den − (o_t·do_t/den) ζ,
//           D_ζ −= (o_t·do_t/den) φq;  floored (den < stab_eps): the same without the den terms
//   ζ       dφk = D_ζ                                             (ζ = ζ' + φk; D_ζ' = D_ζ)
//   write   X = X' + α̂ rᵀ, r = v_t − X'ᵀ k̂:  dα̂ = D_X r,  dv_t = dr = D_Xᵀ α̂,  dk̂ = −X' dr,  D_X' = D_X − k̂ drᵀ
//   dirs    α̂ = norm(y), y = A k̂:  dy = norm's adjoint of dα̂,  D_A += dy k̂ᵀ,  dk̂ += Aᵀ dy;
//           k̂ = norm(φk): dφk += norm's adjoint of dk̂          (norm the identity when normalize is false)
//   penalty A = A' − z zᵀ/δ (+ nudge), z = A' u_t, δ = max(1 + u_t·z, stab_eps):
//           dz = −(D_A + D_Aᵀ) z / δ,  dδ = zᵀ D_A z / δ² (0 where floored),
//           du_t = A'ᵀ dz + dδ (A' + A'ᵀ) u_t,  D_A' = D_A + dz u_tᵀ + dδ u_t u_tᵀ
// then dq, dk by the feature map's chain rule (linear_attention::feature_rows_backward), and
// dλ0 = −tr(D_A0)/λ0² when A_0 = I/λ0. Checkpointed every `checkpoint` tokens over vla::State
// (checkpointed_reverse.h); no memory is recovered by undoing a step (Sherman–Morrison's inverse update
// divides by δ and the write's by 1 − α̂·k̂, which may be 0).
template <class S>
Gradients<S> backward(const Problem<S>& p, const Cotangents<S>& c, Eigen::Index checkpoint = 64) {
  validate(p);
  detail::validate_cotangents(p, c);
  const Eigen::Index T = p.T(), K = p.dk(), V = p.dv();
  const Options<S>& opt = p.opt;
  Gradients<S> g{Mat<S>::Zero(T, K), Mat<S>::Zero(T, K), Mat<S>::Zero(T, V), Mat<S>::Zero(T, K), S(0), {}};
  Mat<S> d_phi_q = Mat<S>::Zero(T, K), d_phi_k = Mat<S>::Zero(T, K);
  Mat<S> d_x = c.d_final_state ? *c.d_final_state : Mat<S>::Zero(K, V);
  Mat<S> d_a = c.d_final_penalty ? *c.d_final_penalty : Mat<S>::Zero(K, K);
  Vec<S> d_zeta = c.d_final_normalizer ? *c.d_final_normalizer : Vec<S>::Zero(K);
  const bool has_do = c.d_o.size() != 0;
  const Memory<S> start = start_memory(p);
  reverse_over_states(
      State<S>(opt, start), T, checkpoint,
      [&p](Eigen::Index t, State<S>& st) {
        st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(), p.u.row(t).transpose());
      },
      [&](Eigen::Index t, const State<S>& before_state, const State<S>& after_state) {
        const Memory<S>&before = before_state.memory(), &after = after_state.memory();
        const Vec<S> u = p.u.row(t).transpose(), v = p.v.row(t).transpose();
        const Vec<S> phi_q = feature(opt.feature, Vec<S>(p.q.row(t).transpose()));
        const Vec<S> phi_k = feature(opt.feature, Vec<S>(p.k.row(t).transpose()));
        // read
        if (has_do) {
          const Vec<S> d_o = c.d_o.row(t).transpose();
          if (!opt.ratio) {
            d_x.noalias() += phi_q * (opt.scale * d_o).transpose();
            d_phi_q.row(t) = (opt.scale * (after.s * d_o)).transpose();
          } else {
            const S raw_den = after.zeta.dot(phi_q);
            const bool floored = raw_den < opt.stab_eps;
            const S den = floored ? opt.stab_eps : raw_den;
            const Vec<S> r = d_o / den;
            d_x.noalias() += phi_q * r.transpose();
            Vec<S> dphi = after.s * r;
            if (!floored) {
              const S d_den = -S((after.s.transpose() * phi_q).dot(r)) / den;  // −(o_t·do_t)/den
              dphi += d_den * after.zeta;
              d_zeta += d_den * phi_q;
            }
            d_phi_q.row(t) = dphi.transpose();
          }
        }
        // ζ = ζ' + φk
        Vec<S> dphi_k = d_zeta;
        // write: X = X' + α̂ rᵀ, r = v − X'ᵀ k̂
        const WriteDirections<S> w = write_directions(opt, after.a, phi_k);
        const Vec<S> residual = v - before.s.transpose() * w.khat;
        const Vec<S> d_alpha_hat = d_x * residual;
        const Vec<S> d_residual = d_x.transpose() * w.alpha_hat;
        g.dv.row(t) = d_residual.transpose();
        Vec<S> d_khat = -(before.s * d_residual);
        d_x.noalias() -= w.khat * d_residual.transpose();
        // directions: α̂ = norm(A k̂), k̂ = norm(φk)
        const Vec<S> y = after.a * w.khat;
        const Vec<S> dy = detail::direction_adjoint(opt.normalize, y, d_alpha_hat);
        d_a.noalias() += dy * w.khat.transpose();
        d_khat.noalias() += after.a.transpose() * dy;
        dphi_k += detail::direction_adjoint(opt.normalize, phi_k, d_khat);
        d_phi_k.row(t) = dphi_k.transpose();
        // penalty: A = A' − z zᵀ/δ (+ nudge), z = A' u, δ = max(1 + u·z, stab_eps)
        const Vec<S> z = before.a * u;
        const S raw_delta = S(1) + u.dot(z);
        const bool delta_floored = raw_delta < opt.stab_eps;
        const S delta = delta_floored ? opt.stab_eps : raw_delta;
        const Vec<S> dz = -((d_a + d_a.transpose()) * z) / delta;
        const S d_delta = delta_floored ? S(0) : S(S(z.dot(d_a * z)) / (delta * delta));
        g.du.row(t) = (before.a.transpose() * dz + d_delta * ((before.a + before.a.transpose()) * u)).transpose();
        d_a.noalias() += dz * u.transpose();
        d_a.noalias() += (d_delta * u) * u.transpose();
      });
  g.dq = linear_attention::feature_rows_backward(opt.feature, p.q, d_phi_q);
  g.dk = linear_attention::feature_rows_backward(opt.feature, p.k, d_phi_k);
  if (!p.initial) g.dlambda0 = -d_a.trace() / (opt.lambda0 * opt.lambda0);
  g.d_initial = Memory<S>{std::move(d_x), std::move(d_a), std::move(d_zeta), 0};
  return g;
}

// The authors' penalty directions u_t = norm(W_u k_t) / √d_k (authors_penalty_directions): with
// x_t = W_u k_t and N the adjoint of norm, dx_t = N(x_t, du_t) / √d_k, the key's extra gradient
// dk_t = W_uᵀ dx_t (to add to backward's dk) and dW_u = Σ_t dx_t k_tᵀ. Needs √.
template <class S>
struct PenaltyDirectionGradients {
  Mat<S> dk;   // T×d_k
  Mat<S> dw_u;  // d_k×d_k
};

template <class S>
PenaltyDirectionGradients<S> authors_penalty_directions_backward(const Mat<S>& k_raw, const Mat<S>& w_u, const Mat<S>& du) {
  if (w_u.rows() != k_raw.cols() || w_u.cols() != k_raw.cols() || du.rows() != k_raw.rows() || du.cols() != k_raw.cols())
    throw std::invalid_argument("vla::authors_penalty_directions_backward: w_u must be d_k×d_k and du T×d_k like k");
  const Mat<S> x = k_raw * w_u.transpose();  // row t = (W_u k_t)ᵀ
  const S inv_sqrt_d = S(1) / sqrt_of(from_double<S>(static_cast<double>(k_raw.cols())));
  const Mat<S> dx = inv_sqrt_d * delta_rule::l2_normalized_rows_backward<S>(x, du, S(0));
  return {dx * w_u, dx.transpose() * k_raw};
}

}  // namespace larc::ref::vla
