// The decays' gradient as chunked backward kernels compute it (docs/gradients.md, "The decay's gradient,
// chunk by chunk"): the suffix-sum identity (the delta rule's I3, GLA's G3) restricted to a chunk [c0, c1)
// and seeded at its end by the state term ⟨S_{c1−1}, ∂L/∂S_{c1−1} from tokens ≥ c1⟩ — which is the direct
// form's gradient at c1 (the identity at t = c1), and ⟨S_T, dht⟩ after the last token:
//
//     dg_t = Σ_{s=t}^{c1−1} (o_s·do_s − v_s·dv_s) + dg_{c1}                  (delta rule, scalar decay)
//     dgk_ti = Σ_{s=t}^{c1−1} (q_si dq_si − k_si dk_si) + dgk_{c1,i}          (GLA, per channel)
//
// Exact in exact arithmetic. In floating point the sum cancels where decays are strong (its terms large,
// the gradient small); the backward verbs compute the direct form, and the gate keeps this one as the
// baseline an honest chunk kernel is measured against (docs/gate.md "Gradient cases").
#pragma once

#include <algorithm>
#include <optional>

#include "larc/reference/family.h"
#include "larc/reference/tensor.h"

namespace larc::ref {

// out_t = Σ_{s=t}^{c1−1} terms_s + (c1 < T ? direct_{c1} : final_term) per column, over the chunks [c0, c1)
// of `chunk` tokens; terms and direct T×m, final_term m.
template <class S>
Mat<S> chunk_local_suffix_sums(const Mat<S>& terms, const Mat<S>& direct, const Vec<S>& final_term, Eigen::Index chunk) {
  const Eigen::Index T = terms.rows();
  Mat<S> out(T, terms.cols());
  for (Eigen::Index c0 = 0; c0 < T; c0 += chunk) {
    const Eigen::Index c1 = std::min(c0 + chunk, T);
    Vec<S> acc = c1 < T ? Vec<S>(direct.row(c1).transpose()) : final_term;
    for (Eigen::Index t = c1 - 1; t >= c0; --t) {
      acc += terms.row(t).transpose();
      out.row(t) = acc.transpose();
    }
  }
  return out;
}

// Σ_j (S ∘ D)_ij per row i of one head's final state and its cotangent (zero without one).
template <class S>
Vec<S> state_term_rows(const Tensor<S>& final_state, const std::optional<Tensor<S>>& d_final_state, std::int64_t b,
                       std::int64_t h) {
  const Mat<S> state = head_state(final_state, b, h);
  if (!d_final_state) return Vec<S>::Zero(state.rows());
  return state.cwiseProduct(head_state(*d_final_state, b, h)).rowwise().sum();
}

// The delta rule's (GDN, KLA) dg of one head (T): the terms o_t·do_t − v_t·dv_t (do empty: zero) summed
// chunk by chunk, seeded by the direct dg at each next chunk's first token and by ⟨S_T, dht⟩ =
// `final_term` after the last.
template <class S>
Vec<S> chunk_local_log_decay_gradient(const Mat<S>& o, const Mat<S>& d_o, const Mat<S>& v, const Mat<S>& dv,
                                      const Vec<S>& dg_direct, const S& final_term, Eigen::Index chunk) {
  Mat<S> terms = -v.cwiseProduct(dv).rowwise().sum();
  if (d_o.size() != 0) terms += o.cwiseProduct(d_o).rowwise().sum();
  return chunk_local_suffix_sums<S>(terms, dg_direct, Vec<S>::Constant(1, final_term), chunk).col(0);
}

// The same for every head: dg [B,T,H] from the forward's o [B,T,H,V] and final state, the cotangents,
// v and the backward's dv and direct dg.
template <class S>
Tensor<S> chunk_local_log_decay_gradient(const Tensor<S>& o, const Tensor<S>& final_state, const BatchedCotangents<S>& cot,
                                         const Tensor<S>& v, const Tensor<S>& dv, const Tensor<S>& dg, Eigen::Index chunk) {
  const std::int64_t B = dg.dim(0), T = dg.dim(1), H = dg.dim(2);
  Tensor<S> out({B, T, H});
  for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    set_head_gate(out, b, h,
                  chunk_local_log_decay_gradient<S>(head_rows(o, b, h), cot.head_d_o(b, h), head_rows(v, b, h),
                                                    head_rows(dv, b, h), head_gate(dg, b, h),
                                                    state_term_rows(final_state, cot.d_final_state, b, h).sum(), chunk));
  });
  return out;
}

// GLA's dgk [B,T,H,K] from q, k and the backward's dq, dk and direct dgk, and the forward's final state.
template <class S>
Tensor<S> chunk_local_channel_decay_gradient(const Tensor<S>& q, const Tensor<S>& dq, const Tensor<S>& k, const Tensor<S>& dk,
                                             const Tensor<S>& dgk, const Tensor<S>& final_state,
                                             const BatchedCotangents<S>& cot, Eigen::Index chunk) {
  const std::int64_t B = dgk.dim(0), H = dgk.dim(2);
  Tensor<S> out(dgk.shape);
  for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const Mat<S> terms = head_rows(q, b, h).cwiseProduct(head_rows(dq, b, h)) - head_rows(k, b, h).cwiseProduct(head_rows(dk, b, h));
    set_head_rows(out, b, h,
                  chunk_local_suffix_sums<S>(terms, head_rows(dgk, b, h), state_term_rows(final_state, cot.d_final_state, b, h), chunk));
  });
  return out;
}

}  // namespace larc::ref
