// The delta rule's backward in chunked (UT/WY) form: the adjoint of delta_rule::chunked, chunk by chunk
// in reverse, as chunked backward kernels compute it (docs/gradients.md, "The chunked backward"). Over
// rationals it equals backward (the adjoint of serial) exactly; its point is the `io` grade's gradient
// baseline: every matrix product goes through MatmulOperands, so with an operand format every operand
// of every product is rounded (the carried states S_c and ∂L/∂S_c included, when read), while the
// solves, the decays, elementwise work and the carried S_c, ∂L/∂S_c stay in S.
//
// Per chunk, in delta_rule::chunked's notation (local i, γ_i = Π_{r≤i} α_r, Γ_ij = Π_{r=j+1..i} α_r,
// X = K Kᵀ (ChunkTerms' kkt), M_u = StrictLower(B X ⊙ Γ), M_w = StrictLower(B X), T_u = (I + M_u)⁻¹,
// T_w = (I + M_w)⁻¹):
//   U = T_u B V,  W = T_w B K,  V_new = U − Diag(γ) W S_c,  P = (Q Kᵀ) ⊙ Γ ⊙ L,
//   O = scale [Diag(γ) Q S_c + P V_new],  S_{c+1} = γ_{n−1} S_c + (Diag(e) K)ᵀ V_new  (e_i = Γ_{n−1,i}).
// Given dO and D = ∂L/∂S_{c+1} (carried from the chunk after, dht after the last), with dO' = scale dO:
//   dV_new = (Diag(e) K) D + Pᵀ dO',   dK ← e ⊙ (V_new Dᵀ) + (dO' V_newᵀ ⊙ Γ ⊙ L)ᵀ Q,
//   dQ = Diag(γ) dO' S_cᵀ + (dO' V_newᵀ ⊙ Γ ⊙ L) K,
//   dW = −Diag(γ) dV_new S_cᵀ,  d(BV) = T_uᵀ dV_new,  d(BK) = T_wᵀ dW,
//   dM = −Tᵀ (dT) Tᵀ on the strict lower triangle, dT_u = dV_new (BV)ᵀ, dT_w = dW (BK)ᵀ,
//   dX = B (dM_u ⊙ Γ + dM_w) (strict lower),  dK ← (dX + dXᵀ) K + B d(BK),  dV = B d(BV),
//   dβ_i = d(BV)_i·V_i + d(BK)_i·K_i + Σ_j (dM_u ⊙ X ⊙ Γ + dM_w ⊙ X)_ij,
//   ∂L/∂S_c = γ_{n−1} D + Qᵀ Diag(γ) dO' − Wᵀ Diag(γ) dV_new.
// The decays' gradient is the log-decay's, in the chunk-local identity form chunk kernels use
// (chunk_local_decay_gradient.h): dg_t = Σ_{s=t}^{end}(o_s·do_s − v_s·dv_s) + ⟨S_{c+1}, D⟩, where the
// seed ⟨S_{c+1}, D⟩ is the direct dg of the next chunk's first token (the loss from the later tokens is
// homogeneous of degree one in S_{c+1} and their values).
#pragma once

#include <stdexcept>
#include <vector>

#include "larc/reference/delta_rule_backward.h"

namespace larc::ref::delta_rule {

// The chunked backward's gradients: backward's (dalpha left empty) and the log-decays' dg (T).
template <class S>
struct ChunkedGradients {
  Gradients<S> grads;
  Vec<S> dg;
};

namespace detail {

// −Tᵀ dT Tᵀ on the strict lower triangle (the gradient of M where T = (I + StrictLower(M))⁻¹).
template <class S>
Mat<S> inverse_gradient(const Mat<S>& t, const Mat<S>& dt, const MatmulOperands<S>& ops) {
  Mat<S> dm = -ops.product(ops.product(t.transpose(), dt), t.transpose());
  return dm.template triangularView<Eigen::StrictlyLower>();
}

}  // namespace detail

template <class S>
ChunkedGradients<S> chunked_backward(const Problem<S>& p, const Cotangents<S>& c, Eigen::Index chunk,
                                     const MatmulOperands<S>& ops = {}) {
  validate(p);
  validate_output_cotangents("delta_rule", p.T(), p.dk(), p.dv(), c.d_o, c.d_final_state);
  if (chunk < 1) throw std::invalid_argument("delta_rule::chunked_backward: chunk size must be >= 1");
  const Eigen::Index T = p.T(), K = p.dk(), V = p.dv();
  // The forward, chunk by chunk: the states entering each chunk and the outputs, as delta_rule::chunked
  // computes them (each chunk run as a problem of its own from the state entering it).
  std::vector<Mat<S>> starts{p.start_state()};
  Mat<S> o(T, V);
  for (Eigen::Index c0 = 0; c0 < T; c0 += chunk) {
    const Eigen::Index n = std::min(chunk, T - c0);
    const Problem<S> part{p.q.middleRows(c0, n), p.k.middleRows(c0, n),     p.v.middleRows(c0, n),
                          p.alpha.segment(c0, n), p.beta.segment(c0, n), p.scale, starts.back()};
    SeqResult<S> f = chunked(part, chunk, ops);
    o.middleRows(c0, n) = f.o;
    starts.push_back(std::move(f.final_state));
  }
  ChunkedGradients<S> r{{Mat<S>::Zero(T, K), Mat<S>::Zero(T, K), Mat<S>::Zero(T, V), Vec<S>(), Vec<S>::Zero(T), {}}, {}};
  Gradients<S>& g = r.grads;
  Mat<S> d_state = c.d_final_state ? *c.d_final_state : Mat<S>::Zero(K, V);  // ∂L/∂S_{c+1}
  const S final_term = starts.back().cwiseProduct(d_state).sum();           // ⟨S_T, dht⟩
  Vec<S> seeds = Vec<S>::Zero(T);  // ⟨S_{c+1}, ∂L/∂S_{c+1}⟩ at each next chunk's first token
  const bool has_do = c.d_o.size() != 0;
  for (Eigen::Index c0 = ((T - 1) / chunk) * chunk, ci = (T - 1) / chunk; T > 0 && c0 >= 0; c0 -= chunk, --ci) {
    const Eigen::Index n = std::min(chunk, T - c0);
    const Mat<S>& state = starts[static_cast<std::size_t>(ci)];
    if (c0 + n < T) seeds(c0 + n) = starts[static_cast<std::size_t>(ci + 1)].cwiseProduct(d_state).sum();
    const detail::ChunkTerms<S> t = detail::chunk_terms(p, c0, n, state, ops);
    const Mat<S> I = Mat<S>::Identity(n, n);
    const Mat<S> t_u = detail::unit_lower_solve<S>(t.bkkt.cwiseProduct(t.gamma_ij), I);
    const Mat<S> t_w = detail::unit_lower_solve<S>(t.bkkt, I);
    const Mat<S> bv = t.beta.asDiagonal() * t.V, bk = t.beta.asDiagonal() * t.K;
    const Vec<S> e = t.gamma_ij.row(n - 1).transpose();
    const Mat<S> eK = e.asDiagonal() * t.K;
    const Mat<S> d_o = has_do ? Mat<S>(p.scale * c.d_o.middleRows(c0, n)) : Mat<S>::Zero(n, V);
    const Mat<S> gamma_d_o = t.gamma.asDiagonal() * d_o;
    const Mat<S> d_p = ops.product(d_o, t.v_new.transpose()).cwiseProduct(t.gamma_ij);  // ∂L/∂(Q Kᵀ), lower
    const Mat<S> d_v_new = ops.product(eK, d_state) + ops.product(t.P.transpose(), d_o);
    const Mat<S> d_w = -ops.product(t.gamma.asDiagonal() * d_v_new, state.transpose());
    const Mat<S> d_bv = ops.product(t_u.transpose(), d_v_new);
    const Mat<S> d_bk = ops.product(t_w.transpose(), d_w);
    const Mat<S> dm_u = detail::inverse_gradient<S>(t_u, ops.product(d_v_new, bv.transpose()), ops);
    const Mat<S> dm_w = detail::inverse_gradient<S>(t_w, ops.product(d_w, bk.transpose()), ops);
    const Mat<S> d_x = t.beta.asDiagonal() * Mat<S>(dm_u.cwiseProduct(t.gamma_ij) + dm_w);
    Mat<S> dk = e.asDiagonal() * ops.product(t.v_new, d_state.transpose()) + ops.product(d_p.transpose(), t.Q) +
                ops.product(d_x + d_x.transpose(), t.K) + t.beta.asDiagonal() * d_bk;
    g.dq.middleRows(c0, n) = ops.product(gamma_d_o, state.transpose()) + ops.product(d_p, t.K);
    g.dk.middleRows(c0, n) = dk;
    g.dv.middleRows(c0, n) = t.beta.asDiagonal() * d_bv;
    const Mat<S> x_terms = dm_u.cwiseProduct(t.kkt).cwiseProduct(t.gamma_ij) + dm_w.cwiseProduct(t.kkt);
    for (Eigen::Index i = 0; i < n; ++i)
      g.dbeta(c0 + i) = d_bv.row(i).dot(t.V.row(i)) + d_bk.row(i).dot(t.K.row(i)) + x_terms.row(i).sum();
    d_state = (t.gamma(n - 1) * d_state + ops.product(t.Q.transpose(), gamma_d_o) -
               ops.product(t.W.transpose(), t.gamma.asDiagonal() * d_v_new))
                  .eval();
  }
  g.d_initial_state = std::move(d_state);
  r.dg = chunk_local_log_decay_gradient<S>(o, c.d_o, p.v, g.dv, seeds, final_term, chunk);
  return r;
}

}  // namespace larc::ref::delta_rule
