// Batched log-linear attention with the conventions of flash-linear-attention's
// `chunk_log_linear_attn(q, k, v, g, level_scales)` (fla/ops/log_linear_attn/chunk.py, naive.py), so
// that larc fixtures can be fed to FLA unchanged:
//
//   q, k          [B, T, G, K]  G = 1: one query/key head shared by all H heads (FLA's chunk kernel
//                               requires it: "Group dimension must be 1"); G = H is also accepted
//                               (FLA's naive form broadcasts either way)
//   v             [B, T, H, V]
//   g             [B, T, H]     log-decays (≤ 0); the decay is a_t = e^{g_t}, H(t, s) ∝ exp(Σ_{r=s+1..t} g_r)
//   level_scales  [B, T, H, L]  level_scales[b, t, h, ℓ] = λ_t^{(ℓ)}, L ≥ ⌈log2 T⌉ + 1
//   returns o     [B, T, H, V]
//
// Level indices: FLA's ℓ is SPEC §4's ℓ, no shift. naive.py's construct_level_mask(0) is the diagonal
// (s = t) and, for ℓ ≥ 1, selects s with t mod 2^ℓ ≥ 2^{ℓ−1} and t_ℓ − 2^{ℓ−1} ≤ s < t_ℓ,
// t_ℓ = t − (t mod 2^{ℓ−1}): exactly fenwick::buckets(t), i.e. ℓ = bit_width(t xor s). chunk.py (chunk
// size 64) reads intra-chunk levels 0..6 through the same masks and keeps inter-chunk state kv_j for
// bit j of the chunk index, read at level_scales[..., 7 + j] = chunk level (j + 1) + log2 64.
// Where FLA is lax, larc refuses: naive.py fails with an index error when L < ⌈log2 T⌉ + 1 and chunk.py
// reads inter-chunk levels ≥ L as 0 (and intra-chunk levels up to 6 without a bound check), so L below
// level_count(T) throws here, naming level_scales; levels beyond it are ignored, as in FLA.
// Scale: FLA applies none (o = (H ⊙ Q K^T) V), so the default scale is 1, not d_k^{-1/2}.
// FLA's chunk kernel also needs K a multiple of 64 and V a power of two; larc takes any K, V ≥ 1.
// A continued sequence (log_linear.h, "Continuing a sequence"): `start` gives the offset t0, shared by every
// sequence and head, and
//   initial_level_states [B, H, L, K, V]  L = level_scales' L (≥ level_count(t0 + T)); slot ℓ of (b, h)
//                               holds the carried state Z^{(ℓ)} for each level ℓ of fenwick::carried_levels(t0)
//                               (bit ℓ − 1 of t0 set); every other slot, slot 0 included, is not read
//                               (its gradient is zero).
// FLA's LogLinearAttentionState differs: it is chunk-based (the inter-chunk level states of whole 64-token
// chunks plus the inputs of the last partial chunk, which its next call re-attends); larc's carried states
// are per token position, one per bucket of t0 whatever the chunk, so a partial chunk's tokens are already
// folded into the states of their buckets. For t0 a multiple of 64 (no partial chunk) FLA's kv_j would be
// larc's level j + 7, as read above (not checked against FLA here). Not mirrored: cu_seqlens.
// Extension: passing beta [B, T, H] runs the GDN variant (FLA has no GDN log-linear kernel).
// `operands` rounds the chunked form's product operands (the io grade's baseline, log_linear.h chunked).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "larc/reference/delta_rule.h"
#include "larc/reference/fenwick.h"
#include "larc/reference/log_linear.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/tensor.h"

namespace larc::ref::log_linear {

// The start of every sequence of a batch: offset t0 and initial_level_states [B, H, L, K, V] (above).
template <class S>
struct BatchedStart {
  std::uint64_t offset = 0;
  Tensor<S> level_states;
};

namespace detail {
template <class S>
std::int64_t level_slot(const Tensor<S>& x, std::int64_t b, std::int64_t h, std::int64_t l) {
  return ((b * x.dim(1) + h) * x.dim(2) + l) * x.dim(3) * x.dim(4);
}
}  // namespace detail

// Throws std::invalid_argument naming initial_level_states when its shape is not [B, H, L, K, V] (L is
// level_scales', which covers every carried level of t0 once it is at least level_count(t0 + T)).
template <class S>
void validate_batched_start(const BatchedStart<S>& start, std::int64_t B, std::int64_t H, std::int64_t L, std::int64_t K,
                            std::int64_t V) {
  require_shape(start.level_states, "initial_level_states", {B, H, L, K, V});
}

// Head (b, h)'s Start: the slots of the carried levels of t0, in increasing order.
template <class S>
Start<S> head_start(const BatchedStart<S>& start, std::int64_t b, std::int64_t h) {
  const Tensor<S>& x = start.level_states;
  const std::int64_t K = x.dim(3), V = x.dim(4);
  Start<S> out{start.offset, {}};
  for (int l : fenwick::carried_levels(start.offset)) {
    const std::int64_t first = detail::level_slot(x, b, h, l);
    Mat<S> z(K, V);
    for (std::int64_t i = 0; i < K; ++i)
      for (std::int64_t j = 0; j < V; ++j) z(i, j) = x.data[static_cast<std::size_t>(first + i * V + j)];
    out.level_states.push_back(std::move(z));
  }
  return out;
}

// Writes head (b, h)'s carried states (or their gradients), one per level of fenwick::carried_levels(t0),
// into their slots of `x` [B, H, L, K, V].
template <class S>
void set_head_level_states(Tensor<S>& x, std::int64_t b, std::int64_t h, std::uint64_t t0, const std::vector<Mat<S>>& states) {
  const std::vector<int> levels = fenwick::carried_levels(t0);
  const std::int64_t V = x.dim(4);
  for (std::size_t n = 0; n < levels.size(); ++n) {
    const std::int64_t first = detail::level_slot(x, b, h, levels[n]);
    for (Eigen::Index i = 0; i < states[n].rows(); ++i)
      for (Eigen::Index j = 0; j < states[n].cols(); ++j) x.data[static_cast<std::size_t>(first + i * V + j)] = states[n](i, j);
  }
}

// Head h of batch entry b as a Problem: q and k of head 0 when they are shared (G = 1), else of head h;
// α = e^g; β when given (the GDN variant).
template <class S>
Problem<S> head_problem(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Tensor<S>& g,
                        const Tensor<S>& level_scales, const std::optional<Tensor<S>>& beta, const S& scale,
                        std::int64_t b, std::int64_t h, const std::optional<BatchedStart<S>>& start = {}) {
  const std::int64_t qk_head = q.dim(2) == 1 ? 0 : h;
  return {beta ? Variant::gdn : Variant::mamba2,
          head_rows(q, b, qk_head),
          head_rows(k, b, qk_head),
          head_rows(v, b, h),
          delta_rule::decays_from_log(head_gate(g, b, h)),
          beta ? head_gate(*beta, b, h) : Vec<S>(),
          head_rows(level_scales, b, h),
          scale,
          start ? std::optional(head_start(*start, b, h)) : std::nullopt};
}

template <class S>
Tensor<S> log_linear_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Tensor<S>& g,
                             const Tensor<S>& level_scales, const std::optional<Tensor<std::type_identity_t<S>>>& beta = {},
                             std::type_identity_t<S> scale = S(1), Form form = Form::chunked, Eigen::Index chunk = 64,
                             OperandFormat operands = OperandFormat::none,
                             const std::optional<BatchedStart<std::type_identity_t<S>>>& start = {}) {
  require_shape(q, "q", {-1, -1, -1, -1});
  const std::int64_t B = q.dim(0), T = q.dim(1), G = q.dim(2), K = q.dim(3);
  require_shape(k, "k", {B, T, G, K});
  require_shape(v, "v", {B, T, -1, -1});
  const std::int64_t H = v.dim(2), V = v.dim(3);
  if (K < 1) throw std::invalid_argument("q: head dimension K must be >= 1, got " + std::to_string(K));
  if (V < 1) throw std::invalid_argument("v: head dimension V must be >= 1, got " + std::to_string(V));
  if (G != 1 && G != H)
    throw std::invalid_argument("q: dimension 2 (query/key heads) must be 1, shared by all heads as FLA's "
                                "chunk_log_linear_attn requires, or H = " + std::to_string(H) + " (v's heads), got " +
                                std::to_string(G));
  require_shape(g, "g", {B, T, H});
  require_shape(level_scales, "level_scales", {B, T, H, -1});
  const std::uint64_t t0 = start ? start->offset : 0;
  if (T > 0 && level_scales.dim(3) < fenwick::level_count(t0 + static_cast<std::uint64_t>(T)))
    throw std::invalid_argument("level_scales: the last dimension L must be >= " +
                                std::string(start ? "ceil(log2(t0 + T)) + 1 = " : "ceil(log2 T) + 1 = ") +
                                std::to_string(fenwick::level_count(t0 + static_cast<std::uint64_t>(T))) + " for " +
                                (start ? "t0 = " + std::to_string(t0) + ", " : std::string()) + "T = " + std::to_string(T) +
                                ", got " + std::to_string(level_scales.dim(3)));
  if (beta) require_shape(*beta, "beta", {B, T, H});
  if (start) validate_batched_start(*start, B, H, level_scales.dim(3), K, V);

  Tensor<S> o({B, T, H, V});
  run_each_head<Family, S>(
      B, H, form, chunk, operands,
      [&](std::int64_t b, std::int64_t h) { return head_problem<S>(q, k, v, g, level_scales, beta, scale, b, h, start); },
      [&](std::int64_t b, std::int64_t h, const Mat<S>& head_o) { set_head_rows(o, b, h, head_o); });
  return o;
}

}  // namespace larc::ref::log_linear
