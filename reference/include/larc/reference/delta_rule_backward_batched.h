// The delta rules' batched backward with FLA's conventions ([B,T,H,D], g as log-decay, per-token β):
// each (sequence, head) through the adjoint of serial or the chunked backward (BackwardForm), then the
// front end of the mechanism's parameterisation (GDN's log-decays, DeltaNet, KLA's η).
#pragma once

#include <optional>

#include "larc/reference/delta_rule_backward.h"
#include "larc/reference/delta_rule_chunked_backward.h"
#include "larc/reference/rounding_draw.h"

namespace larc::ref::delta_rule {

// ∂L/∂ of each batched input, L = Σ ⟨do, o⟩ + ⟨dht, final_state⟩ summed over sequences and heads.
template <class S>
struct BatchedGradients {
  Tensor<S> dq, dk, dv;        // [B, T, H, d_k], [B, T, H, d_k], [B, T, H, d_v]
  Tensor<S> dg;                // [B, T, H] of the log-decays (GDN, KLA; empty for DeltaNet)
  Tensor<S> dbeta;             // [B, T, H] of β (GDN, DeltaNet) or of η (KLA)
  Tensor<S> d_initial_state;   // [B, H, d_k, d_v]
};

// How a head's gradients are formed: the adjoint of serial (checkpointed every `checkpoint` tokens,
// dg = α ⊙ dα), or, given `chunk`, chunked_backward at that chunk size with `ops` (dg in the chunk-local
// identity form); with the gates the mechanism derives from its inputs (α = e^g, KLA's β) under
// `rounding_draw` (rounding_draw.h; 0: as computed).
template <class S>
struct BackwardForm {
  Eigen::Index checkpoint = 64;
  std::optional<Eigen::Index> chunk;
  MatmulOperands<S> ops;
  std::uint64_t rounding_draw = 0;
};

// One head's gradients in `form`, with dg (α ⊙ dα after the serial adjoint).
template <class S>
ChunkedGradients<S> gradients_in_form(const Problem<S>& p, const Cotangents<S>& c, const BackwardForm<S>& form) {
  if (form.chunk) return chunked_backward(p, c, *form.chunk, form.ops);
  Gradients<S> g = backward(p, c, form.checkpoint);
  Vec<S> dg = log_decay_gradient(p.alpha, g.dalpha);
  return {std::move(g), std::move(dg)};
}

namespace detail {

// The rounding-draw salts of the derived gates, whose draws are named by the head's log-decays
// (rounding_draw.h), so a head's draw does not depend on the batch it is computed in.
inline constexpr std::uint64_t kDecaySalt = 0, kStepSalt = 1;

// Runs gradients_in_form per (sequence, head); finish(b, h, problem, gradients, out) writes the gate gradients
// of the mechanism's parameterisation (and may correct dk, as KLA's β does).
template <class S, class GatesOf, class Finish>
BatchedGradients<S> run_backward_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v,
                                         std::optional<S> scale, const std::optional<Tensor<S>>& initial_state,
                                         const BatchedCotangents<S>& cot, const BackwardForm<S>& form, GatesOf&& gates_of,
                                         Finish&& finish) {
  const BatchedDims d = batched_dims(q, k, v, initial_state ? &*initial_state : nullptr);
  cot.require_shapes(d);
  const auto [B, T, H, K, V] = d;
  BatchedGradients<S> r{Tensor<S>({B, T, H, K}), Tensor<S>({B, T, H, K}), Tensor<S>({B, T, H, V}), Tensor<S>({B, T, H}),
                        Tensor<S>({B, T, H}), Tensor<S>({B, H, K, V})};
  for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const Problem<S> p = head_problem(q, k, v, gates_of(b, h), scale, initial_state, b, h);
    const Cotangents<S> c{cot.head_d_o(b, h), cot.head_d_final_state(b, h)};
    ChunkedGradients<S> head = gradients_in_form(p, c, form);
    finish(b, h, p, head, r);
    set_head_rows(r.dq, b, h, head.grads.dq);
    set_head_rows(r.dk, b, h, head.grads.dk);
    set_head_rows(r.dv, b, h, head.grads.dv);
    set_head_state(r.d_initial_state, b, h, head.grads.d_initial_state);
  });
  return r;
}
}  // namespace detail

// GDN (gdn_batched's inputs): dg (α ⊙ dα, or the chunked backward's), dβ.
template <class S>
BatchedGradients<S> gdn_backward_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Tensor<S>& g,
                                         const Tensor<S>& beta, const BatchedCotangents<S>& cot,
                                         std::optional<std::type_identity_t<S>> scale = {},
                                         const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                                         const BackwardForm<std::type_identity_t<S>>& form = {}) {
  require_shape(g, "g", gate_shape_of(q));
  require_shape(beta, "beta", gate_shape_of(q));
  return detail::run_backward_batched(
      q, k, v, scale, initial_state, cot, form,
      [&](std::int64_t b, std::int64_t h) {
        HeadGates<S> gates = gdn_head_gates(g, beta, b, h);
        gates.alpha =
            in_rounding_draw(std::move(gates.alpha), form.rounding_draw, head_gate(g, b, h), detail::kDecaySalt);
        return gates;
      },
      [](std::int64_t b, std::int64_t h, const Problem<S>&, ChunkedGradients<S>& head, BatchedGradients<S>& out) {
        set_head_gate(out.dg, b, h, head.dg);
        set_head_gate(out.dbeta, b, h, head.grads.dbeta);
      });
}

// DeltaNet (deltanet_batched's inputs): dβ; dg is empty.
template <class S>
BatchedGradients<S> deltanet_backward_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v,
                                              const Tensor<S>& beta, const BatchedCotangents<S>& cot,
                                              std::optional<std::type_identity_t<S>> scale = {},
                                              const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                                              const BackwardForm<std::type_identity_t<S>>& form = {}) {
  require_shape(beta, "beta", gate_shape_of(q));
  BatchedGradients<S> r = detail::run_backward_batched(
      q, k, v, scale, initial_state, cot, form,
      [&](std::int64_t b, std::int64_t h) { return HeadGates<S>{Vec<S>::Ones(q.dim(1)), head_gate(beta, b, h)}; },
      [](std::int64_t b, std::int64_t h, const Problem<S>&, ChunkedGradients<S>& head, BatchedGradients<S>& out) {
        set_head_gate(out.dbeta, b, h, head.grads.dbeta);
      });
  r.dg = Tensor<S>();
  return r;
}

// KLA (kla_batched's inputs): dg as GDN's, dη, and dk including the path through β = η/(‖k‖² + ε).
template <class S>
BatchedGradients<S> kla_backward_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Tensor<S>& g,
                                         const Tensor<S>& eta, const std::type_identity_t<S>& eps,
                                         const BatchedCotangents<S>& cot, std::optional<std::type_identity_t<S>> scale = {},
                                         const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                                         const BackwardForm<std::type_identity_t<S>>& form = {}) {
  require_shape(g, "g", gate_shape_of(q));
  require_shape(eta, "eta", gate_shape_of(q));
  return detail::run_backward_batched(
      q, k, v, scale, initial_state, cot, form,
      [&](std::int64_t b, std::int64_t h) {
        const std::uint64_t draw = form.rounding_draw;
        const Vec<S> log_decays = head_gate(g, b, h);
        return HeadGates<S>{in_rounding_draw(decays_from_log(log_decays), draw, log_decays, detail::kDecaySalt),
                            in_rounding_draw(kla_beta(head_rows(k, b, h), head_gate(eta, b, h), eps), draw, log_decays,
                                             detail::kStepSalt)};
      },
      [&](std::int64_t b, std::int64_t h, const Problem<S>& p, ChunkedGradients<S>& head, BatchedGradients<S>& out) {
        set_head_gate(out.dg, b, h, head.dg);
        KlaStepGradients<S> step = kla_beta_backward(p.k, head_gate(eta, b, h), eps, head.grads.dbeta, head.grads.dk);
        set_head_gate(out.dbeta, b, h, step.deta);
        head.grads.dk = std::move(step.dk);
      });
}

}  // namespace larc::ref::delta_rule
