// The chunked (UT/WY) backward of GDN and KLA (docs/gpu-kernels/delta-rule.md "Chunked backward"): the
// adjoint of delta_rule_chunked.cuh's forward, chunk by chunk, in the kernel's own parametrisation.
//
// Per chunk (local i < n ≤ 64), with the forward's R = T Diag(β), T = (I + A)⁻¹,
// A = StrictLower(Diag(β) X ⊙ Γ), X = K Kᵀ, Z = V − Diag(γ) K S_c, V_new = R Z, K̃ = Diag(e) K
// (e_i = Γ_{n−1,i}), P = (Q Kᵀ) ⊙ Γ ⊙ L, O = scale [Diag(γ) Q S_c + P V_new] and
// S_{c+1} = γ_{n−1} S_c + K̃ᵀ V_new; given dO' = scale dO and D = ∂L/∂S_{c+1} (dht after the last chunk):
//   dV_new = K̃ D + Pᵀ dO'                                  ∂L/∂S_c = γ_{n−1} D + (Diag(γ) Q)ᵀ dO' − W_kᵀ dV_new
//   dP = (dO' V_newᵀ) ⊙ Γ ⊙ L                               (W_k = R Diag(γ) K, the forward's W)
//   dR = dV_new Zᵀ = Y − G Kᵀ Diag(γ),  Y = dV_new Vᵀ, G = dV_new S_cᵀ
//   dT = dR Diag(β),  dA = −Tᵀ dT Tᵀ (strict lower),  dX = Diag(β) (dA ⊙ Γ)
//   dβ_j = Σ_i dR_ij T_ij + Σ_k dA_jk X_jk Γ_jk,  dV = Rᵀ dV_new
//   dQ = Diag(γ) dO' S_cᵀ + dP K
//   dK = Diag(e) V_new Dᵀ + dPᵀ Q + (dX + dXᵀ) K − Diag(γ β) Tᵀ G
// Over the reals this is the reference's chunked_backward (reference/delta_rule_chunked_backward.h, which
// forms W with a second solve): the same function differentiated through R instead of (T_u, T_w). KLA's
// β = η / (‖k‖² + ε) adds dη = dβ / (‖k‖² + ε) and dk −= 2β dβ / (‖k‖² + ε) · k. The decay's gradient is
// the chunk-local identity (reference/chunk_local_decay_gradient.h): dg_t = Σ_{s=t}^{n−1}(o_s·do_s −
// v_s·dv_s) + ⟨S_{c+1}, D⟩, or from the chunk's first token's direct ⟨S_c, ∂L/∂S_c⟩ forward, whichever
// end is nearer (decay_gradients), with o formed again from S_c, P and V_new.
//
// Six kernels after the forward's chunk_prepare and state pass (which leave every record, S_c and the
// final state in the workspace): backward_prepare (per chunk, in parallel) lays out K̃, Pᵀ, (Diag(γ) Q)ᵀ
// and W_kᵀ, solved for again by forward substitution, as operands; reverse_state_pass (per sequence, head
// and 16 value columns, chunks from the last: the only sequential part) carries D, writes D_{c+1} and
// dV_new of every chunk and dh0; value_reductions (per chunk and 64 keys) sums the products over the value
// columns (dO' S_cᵀ, V_new Dᵀ, G, dO' V_newᵀ, Y); chunk_gradients (per chunk) solves T again and forms
// dq, dk and dβ (dη); value_gradients (per chunk and 64 value columns) forms dv and the decay identity's
// terms; and decay_gradients (per chunk) sums them into dg. No atomics: every run gives the same bits.
//
// Grouped value heads (FLA's GVA, as the forward's): every kernel runs per value head h, reading q and k
// of query/key head h / group; dv, dg, dβ (dη) and dh0 are per value head. dq and dk sum the group's
// value heads: with group > 1 chunk_gradients writes each value head's fp32 dq, dk (KLA's path through
// β included, which is per value head) to the workspace and sum_value_head_groups adds them in value head
// order; with group = 1 chunk_gradients writes dq and dk itself.
//
// Arithmetic: products on tensor cores (bf16/fp16) or by FMA in fp64 (fp32), as the forward's. TERMS
// bf16 terms per intermediate operand: kStateTerms (24 bits) for the fp32 grade, the input's terms for
// the io grade (intermediates rounded to the input dtype, or finer). S_c and V_new are read in fp32 (the
// forward's state pass writes copies for the backward) and enter products at TERMS like the rest.
#pragma once

#include <cstdint>
#include <type_traits>

#include "delta_rule_chunked.cuh"

namespace larc::gpu::detail::delta_rule_chunked_backward {

using namespace chunk_operands;
namespace fwd = delta_rule_chunked;
using fwd::kChunk;
using fwd::Record;
using fwd::rows_of;
using fwd::Step;
using fwd::TokenRows;
using register_state_pass::kOutputTerms;
using register_state_pass::kStateTerms;

constexpr int kThreads = kBlockThreads;
constexpr int kWarps = kThreads / 32;
constexpr int kPassTileV = fwd::kTileV;  // value columns per reverse_state_pass block (fwd::pass_block's)
constexpr int kSumTileV = 32;            // value columns per step of value_reductions
constexpr int kKeyTile = 64;             // keys per value_reductions block and per step of chunk_gradients
constexpr int kOutTileV = 64;            // value columns per value_gradients block (chunk_output's tile)
constexpr int kPitch = kChunk + 4;       // fp32 [64][kPitch] matrices: 16-byte aligned rows (the solve's loads)
// Terms of the ∂L/∂S chain's operands (backward_prepare, reverse_state_pass) in both grades: dh0 is an
// fp32 state whose chain compounds over the chunks, so it stays at the fp32 grade (finer than io).
constexpr int kChainTerms = kStateTerms;

template <class T>
struct Params {
  fwd::Params<T> f;  // the forward's inputs, records and states; f.final_state points into the workspace
  Strided<const T> d_o;
  Strided<const float> d_final;  // optional dht [B, H, K, V]
  Strided<T> dq, dk, dv, dg, dstep;
  Strided<float> d_initial;  // optional dh0
  int key_tiles = 0;         // KP / kKeyTile
  // Workspace, per (value head, slot): operands (Operands), D_{c+1} fp32 [KP][V], dV_new fp32 [64][V], the
  // value sums (Sums), Rᵀ fp32 [64][64], with group > 1 dq and dk fp32 [2][64][K], the decay terms fp64
  // [out tiles][64]; per sequence and value head d_start.
  float* operands = nullptr;
  float* d_states = nullptr;
  float* d_start = nullptr;  // ∂L/∂S entering each sequence's first chunk (dh0), fp32 [B|N][H][KP][V]
  float* d_vnew = nullptr;
  float* sums = nullptr;
  float* solve_t = nullptr;
  float* dqk_parts = nullptr;  // group > 1 only (null: chunk_gradients writes dq, dk)
  double* dg_terms = nullptr;
};

// backward_prepare's operands of one chunk, kChainTerms planes: K̃ [64 rows][KP], Pᵀ [64][64], W_kᵀ and
// (Diag(γ) Q)ᵀ [KP rows][64], and P [64][64] (value_gradients' o).
template <class T, int KP>
struct Operands {
  static constexpr int TERMS = kChainTerms;
  static constexpr int kKt = operand_words<T, TERMS>(kChunk, KP);
  static constexpr int kPt = operand_words<T, TERMS>(kChunk, kChunk);
  static constexpr int kWt = operand_words<T, TERMS>(KP, kChunk);
  static constexpr int kWords = kKt + 2 * kPt + 2 * kWt;
  float* base;
  __device__ Operand<T, TERMS, KP> key_rows() const { return operand_at<T, TERMS, KP>(base, kChunk); }
  __device__ Operand<T, TERMS, kChunk> p_t() const { return operand_at<T, TERMS, kChunk>(base + kKt, kChunk); }
  __device__ Operand<T, TERMS, kChunk> w_t() const { return operand_at<T, TERMS, kChunk>(base + kKt + kPt, KP); }
  __device__ Operand<T, TERMS, kChunk> q_t() const { return operand_at<T, TERMS, kChunk>(base + kKt + kPt + kWt, KP); }
  __device__ Operand<T, TERMS, kChunk> p() const { return operand_at<T, TERMS, kChunk>(base + kKt + kPt + 2 * kWt, kChunk); }
};

// value_reductions' sums of one chunk, fp32: scale·dO S_cᵀ, V_new Dᵀ and G [64][KP]; scale·dO V_newᵀ and
// Y [64][64].
template <int KP>
struct Sums {
  static constexpr int kWords = 3 * kChunk * KP + 2 * kChunk * kChunk;
  float* base;
  __device__ float* dq_state() const { return base; }
  __device__ float* dk_update() const { return base + kChunk * KP; }
  __device__ float* g() const { return base + 2 * kChunk * KP; }
  __device__ float* dp() const { return base + 3 * kChunk * KP; }
  __device__ float* y() const { return base + 3 * kChunk * KP + kChunk * kChunk; }
};

template <class T>
__device__ __forceinline__ std::int64_t record_index(const Params<T>& p, int h, std::int64_t slot) {
  return h * p.f.slots + slot;
}
template <class T, int KP>
__device__ __forceinline__ Operands<T, KP> operands_of(const Params<T>& p, int h, std::int64_t slot) {
  return {p.operands + record_index(p, h, slot) * Operands<T, KP>::kWords};
}
template <class T, int KP>
__device__ __forceinline__ Sums<KP> sums_of(const Params<T>& p, int h, std::int64_t slot) {
  return {p.sums + record_index(p, h, slot) * Sums<KP>::kWords};
}
template <class T, int KP>
__device__ __forceinline__ float* d_state_of(const Params<T>& p, int h, std::int64_t slot) {
  return p.d_states + record_index(p, h, slot) * KP * p.f.V;
}
template <class T>
__device__ __forceinline__ float* d_vnew_of(const Params<T>& p, int h, std::int64_t slot) {
  return p.d_vnew + record_index(p, h, slot) * kChunk * p.f.V;
}
// Value head h's dq of (slot, token i, key) (group > 1); its dk follows at + kChunk · K.
template <class T>
__device__ __forceinline__ float* dqk_part_of(const Params<T>& p, int h, std::int64_t slot, int i, int key) {
  return p.dqk_parts + record_index(p, h, slot) * 2 * kChunk * p.f.K + i * p.f.K + key;
}
// S_c of (head, slot) at (key, col) and V_new at (token i, col), fp32 as the forward's state pass held
// them: the register pass's fp32 copies (bf16/fp16), the records' exact one-plane operands (fp32).
template <class T, int KP>
__device__ __forceinline__ float state_at(const Params<T>& p, int h, std::int64_t slot, int key, int col) {
  if constexpr (kMma<T>)
    return p.f.states_f32[(record_index(p, h, slot) * p.f.V + col) * KP + key];
  else
    return element(operand_at<T, kOutputTerms, KP>(fwd::state_of<T, KP>(p.f, h, slot), p.f.V), col, key);
}
template <class T, int KP>
__device__ __forceinline__ float vnew_at(const Params<T>& p, int h, std::int64_t slot, int i, int col) {
  if constexpr (kMma<T>)
    return p.f.vnew_f32[(record_index(p, h, slot) * kChunk + i) * p.f.V + col];
  else
    return element(operand_at<T, kOutputTerms, kChunk>(Record<T, KP>::vn(fwd::record_of<T, KP>(p.f, h, slot), p.f.V), p.f.V), col, i);
}

// This block's chunk: blockIdx.x = (h · slots + slot) · tiles + tile. False for a slot no chunk fills.
struct ChunkBlock {
  int h = 0, tile = 0, n = 0;
  std::int64_t slot = 0, b = 0, t0 = 0, sequence = 0;
  bool first = false, last = false;
};
template <class T>
__device__ __forceinline__ bool chunk_block(const Params<T>& p, int tiles, ChunkBlock& c) {
  c.tile = static_cast<int>(blockIdx.x % tiles);
  c.slot = blockIdx.x / tiles % p.f.slots;
  c.h = static_cast<int>(blockIdx.x / tiles / p.f.slots);
  return fwd::chunk_of_slot(p.f, c.slot, c.b, c.t0, c.n, &c.sequence, &c.first, &c.last);
}

// f(u, m0, n0) for this warp's two 16 × 16 strips (u = 0, 1) of a 64 × 64 product: the same strips in
// every call, so accumulators indexed by u persist across calls.
template <class F>
__device__ __forceinline__ void for_each_square_strip(F f) {
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    const int s = threadIdx.x / 32 + kWarps * u;
    f(u, s % 4 * 16, s / 4 * 16);
  }
}

// acc += A Bᵀ over the key tiles [key0, key0 + 64) of KP for 64 × 64 strips: a(i, key) and b(j, key) fill
// the two operands tile by tile (b unused when b_op is a_op: A Aᵀ). Called by the whole block.
template <class T, int KP, int TA, int TB, class FA, class FB>
__device__ __forceinline__ void sum_over_key_tiles(float (&acc)[2][2][4], const Operand<T, TA, kKeyTile>& a_op,
                                                   const Operand<T, TB, kKeyTile>& b_op, FA a, FB b) {
  const bool same = static_cast<const void*>(a_op.words) == static_cast<const void*>(b_op.words);
  for (int key0 = 0; key0 < KP; key0 += kKeyTile) {
    fill(a_op, kChunk, [&](int i, int d) { return a(i, key0 + d); });
    if (!same) fill(b_op, b_op.rows, [&](int j, int d) { return b(j, key0 + d); });
    __syncthreads();
    for_each_square_strip([&](int u, int m0, int n0) { warp_product<T, kKeyTile>(acc[u], a_op, b_op, m0, n0); });
    __syncthreads();
  }
}

// ---- backward_prepare --------------------------------------------------------------------------------
// Shared memory (words): the ChunkDecays, g, β and γ [64], Γ fp32 [64][kPitch], P then A fp32 [64][kPitch],
// Q and K [64 rows][KP] (input terms), then in their place W_k's columns fp32 [KP][kChunk + 1].
template <class T, int KP>
struct PrepareLayout {
  static constexpr int kIn = operand_words<T, kInputTerms<T>>(kChunk, KP);
  static constexpr int kWPitch = kChunk + 1;  // W_k's column d at row d: thread d's stores fall in distinct banks
  static_assert(KP * kWPitch <= 2 * kIn, "W_k's columns fit in Q's and K's place");
  static_assert(KP <= kThreads, "one thread a key column");
  static constexpr int kWords = ChunkDecays::kWords + 3 * kChunk + 2 * kChunk * kPitch + 2 * kIn;
};

// W_k (the forward's W = T Diag(β) Diag(γ) K) is solved for here, (I + A) W_k = Diag(β γ) K, rather than
// copied from the forward's record, which forms T = (I + A)⁻¹ column by column and W as the product
// (T Diag(β) Diag(γ)) K: T's rounding errors (~1e-6 on entries up to ~2) then reach each row of W_k
// independently. The reverse pass carries ∂L/∂S across the chunk by γ_{n−1} I − W_kᵀ K̃; where that
// transfer contracts strongly (β k_iᵀk_i near 1, dht alone) its true value, 1e-30 and below, is a
// difference of O(1) terms, and only a W_k whose rows satisfy the solve's equations up to their own
// roundings keeps the residual γ − Σ W_k K̃ local — the float reference's forward substitution
// (docs/gradients.md "The chunked backward"); the product leaves ~1e-6 of ∂L/∂S a chunk there
// (reports/h200/backward_chunked/README.md). A and β are formed exactly as chunk_prepare forms them
// (the same products, Γ and operations), γ is the record's, so W_k solves the forward's own system.
template <class T, int KP, Step STEP>
__global__ void __launch_bounds__(kThreads) backward_prepare(const Params<T> p) {
  using L = PrepareLayout<T, KP>;
  using R = Record<T, KP>;
  using Acc = std::conditional_t<kMma<T>, float, double>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const ChunkDecays decays(words);
  float* const gate_s = words + ChunkDecays::kWords;
  float* const beta_s = gate_s + kChunk;   // β (0 past n)
  float* const gamma_s = beta_s + kChunk;  // γ (0 past n)
  float* const ratio_s = gamma_s + kChunk;
  float* const p_s = ratio_s + kChunk * kPitch;  // P, then A
  const auto q_op = operand_at<T, kInputTerms<T>, KP>(p_s + kChunk * kPitch, kChunk);
  const auto k_op = operand_at<T, kInputTerms<T>, KP>(p_s + kChunk * kPitch + L::kIn, kChunk);
  float* const w_s = p_s + kChunk * kPitch;  // W_k's columns [KP][kWPitch], in Q's and K's place

  ChunkBlock cb;
  if (!chunk_block(p, 1, cb)) return;
  const int h = cb.h, n = cb.n;
  const std::int64_t slot = cb.slot, b = cb.b, t0 = cb.t0;
  const int K = p.f.K, V = p.f.V;
  const TokenRows<const T> q = rows_of(p.f.q, b, h / p.f.group), k = rows_of(p.f.k, b, h / p.f.group);
  const TokenRows<const T> gate = rows_of(p.f.gate, b, h), step = rows_of(p.f.step, b, h);
  float* const record = fwd::record_of<T, KP>(p.f, h, slot);

  fill(q_op, kChunk, [&](int i, int d) { return i < n && d < K ? to_float(q(t0 + i, d)) : 0.f; });
  fill(k_op, kChunk, [&](int i, int d) { return i < n && d < K ? to_float(k(t0 + i, d)) : 0.f; });
  if (const int i = threadIdx.x; i < kChunk) gate_s[i] = i < n ? to_float(gate(t0 + i)) : 0.f;
  __syncthreads();
  // β per token (threads 0..63) as chunk_prepare computes it (KLA: the same ‖k‖² tree and division, so
  // bitwise the forward's), γ from the record; the log-decays' prefix sums (thread 64).
  if (threadIdx.x < kChunk) {
    beta_s[threadIdx.x] = fwd::token_step<T, KP, STEP>(step, k_op, t0, threadIdx.x, n, p.f.eps);
    gamma_s[threadIdx.x] = R::gamma(record, V)[threadIdx.x];
  } else if (threadIdx.x == kChunk) {
    decays.form([&](int i) { return gate_s[i]; }, n);
  }
  __syncthreads();
  decays.fill_ratios(ratio_s, kPitch, n);
  __syncthreads();
  for_each_strip<kChunk, kChunk, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, KP>(acc, q_op, k_op, m0, n0);
    for_each_element(acc, m0, n0, [&](int i, int j, float x) { p_s[i * kPitch + j] = x * ratio_s[i * kPitch + j]; });
  });
  __syncthreads();

  const Operands<T, KP> out = operands_of<T, KP>(p, h, slot);
  const auto kt_in = operand_at<T, kStateTerms, kChunk>(R::kt(record), KP);  // K̃ᵀ [KP rows][64]
  fill(out.key_rows(), kChunk, [&](int i, int d) { return element(kt_in, d, i); });
  fill(out.p_t(), kChunk, [&](int j, int i) { return p_s[i * kPitch + j]; });
  fill(out.p(), kChunk, [&](int i, int j) { return p_s[i * kPitch + j]; });
  fill(out.q_t(), KP, [&](int d, int i) { return gamma_s[i] * element(q_op, i, d); });
  __syncthreads();

  // A = StrictLower(Diag(β) K Kᵀ ⊙ Γ) in P's place, as chunk_prepare forms it.
  for_each_strip<kChunk, kChunk, 2>(
      [&](int m0, int n0) { fwd::step_matrix_strip<T, KP>(k_op, beta_s, ratio_s, p_s, kPitch, m0, n0); });
  __syncthreads();
  // W_k column d by substitution (thread d < K; zero past K), then through w_s to W_kᵀ's operand.
  Acc x[kChunk];
  if (const int d = threadIdx.x; d < K) {
    fwd::unit_lower_solve_column<Acc>(p_s, kPitch, [&](int i) {
      return static_cast<Acc>(beta_s[i]) * static_cast<Acc>(gamma_s[i]) * static_cast<Acc>(element(k_op, i, d));
    }, x);
  } else {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) x[i] = 0;
  }
  __syncthreads();  // every column read K: w_s takes its place
  if (const int d = threadIdx.x; d < KP) {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) w_s[d * L::kWPitch + i] = static_cast<float>(x[i]);
  }
  __syncthreads();
  fill(out.w_t(), KP, [&](int d, int i) { return w_s[d * L::kWPitch + i]; });
}

// ---- reverse_state_pass ------------------------------------------------------------------------------
// Shared memory (words): one A-operand buffer (K̃ and Pᵀ, then (Diag(γ) Q)ᵀ, then W_kᵀ), D as a B operand
// [16 rows][KP], dOᵀ [16 rows][64] (input terms) and dV_newᵀ [16 rows][64], D fp32 [KP][20] and dV_new
// fp32 [64][20].
template <class T, int KP>
struct PassLayout {
  static constexpr int TERMS = kChainTerms;
  using O = Operands<T, KP>;
  static constexpr int kA = O::kKt + O::kPt > O::kWt ? O::kKt + O::kPt : O::kWt;
  static constexpr int kD = operand_words<T, TERMS>(kPassTileV, KP);
  static constexpr int kDo = operand_words<T, kInputTerms<T>>(kPassTileV, kChunk);
  static constexpr int kDvn = operand_words<T, TERMS>(kPassTileV, kChunk);
  static constexpr int kPitchV = kPassTileV + 4;
  static constexpr int kWords = kA + kD + kDo + kDvn + (KP + kChunk) * kPitchV;
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads, 1) reverse_state_pass(const Params<T> p) {
  constexpr int TERMS = kChainTerms;
  using L = PassLayout<T, KP>;
  using O = Operands<T, KP>;
  using R = Record<T, KP>;
  constexpr int sp = L::kPitchV;
  constexpr int kStrips = KP / 16, kPerWarp = (kStrips + kWarps - 1) / kWarps;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const a_words = reinterpret_cast<float*>(smem_vec);
  const auto key_rows_op = operand_at<T, TERMS, KP>(a_words, kChunk);
  const auto p_t_op = operand_at<T, TERMS, kChunk>(a_words + O::kKt, kChunk);
  const auto t_op = operand_at<T, TERMS, kChunk>(a_words, KP);  // (Diag(γ) Q)ᵀ, then W_kᵀ
  const auto d_op = operand_at<T, TERMS, KP>(a_words + L::kA, kPassTileV);
  const auto do_op = operand_at<T, kInputTerms<T>, kChunk>(a_words + L::kA + L::kD, kPassTileV);
  const auto dvn_op = operand_at<T, TERMS, kChunk>(a_words + L::kA + L::kD + L::kDo, kPassTileV);
  float* const d_s = a_words + L::kA + L::kD + L::kDo + L::kDvn;  // D [KP][sp]
  float* const dvn_s = d_s + KP * sp;                             // dV_new [64][sp]

  fwd::PassBlock pb;
  if (!fwd::pass_block<kThreads, KP>(p.f, pb)) {  // a corrupt cu_seqlens: NaN in dh0 flags the sequence
    if (p.d_initial.data != nullptr)
      for (int e = threadIdx.x; e < KP * kPassTileV; e += kThreads) {
        const int r = e / kPassTileV, col = pb.col0 + e % kPassTileV;
        if (r < p.f.K && col < p.f.V) *p.d_initial.at(pb.sequence, pb.h, r, col) = __int_as_float(0x7fc00000);
      }
    return;
  }
  const int h = pb.h, K = p.f.K, V = p.f.V, col0 = pb.col0;
  const std::int64_t b = p.f.cu_seqlens != nullptr ? 0 : pb.sequence;
  const TokenRows<const T> d_o = rows_of(p.d_o, b, h);
  const float scale = p.f.scale;
  // f(r, col, D's element) over this block's tile of D: KP rows, kPassTileV columns from col0.
  const auto for_each_d = [&](auto f) {
    for (int e = threadIdx.x; e < KP * kPassTileV; e += kThreads) f(e / kPassTileV, col0 + e % kPassTileV, d_s[e / kPassTileV * sp + e % kPassTileV]);
  };
  for_each_d([&](int r, int col, float& d) {
    d = p.d_final.data != nullptr && r < K && col < V ? *p.d_final.at(pb.sequence, h, r, col) : 0.f;
  });
  __syncthreads();

  for (std::int64_t c = pb.chunks - 1; c >= 0; --c) {
    const std::int64_t slot = pb.first_slot + c, t0 = pb.bos + c * kChunk;
    const int n = pb.length(c);
    const O ops = operands_of<T, KP>(p, h, slot);
    const float decay_last = R::gamma(fwd::record_of<T, KP>(p.f, h, slot), V)[n - 1];
    // D_{c+1}: to the workspace (value_reductions, decay_gradients) and as a B operand.
    float* const d_state = d_state_of<T, KP>(p, h, slot);
    for_each_d([&](int r, int col, float d) {
      if (col < V) d_state[std::int64_t{r} * V + col] = d;
    });
    fill(d_op, kPassTileV, [&](int col, int r) { return d_s[r * sp + col]; });
    fill(do_op, kPassTileV, [&](int col, int i) { return i < n && col0 + col < V ? to_float(d_o(t0 + i, col0 + col)) : 0.f; });
    copy_rows(key_rows_op, ops.key_rows(), 0, kChunk);
    copy_rows(p_t_op, ops.p_t(), 0, kChunk);
    __syncthreads();
    // dV_new = K̃ D + scale Pᵀ dO (rows past n are zero: K̃'s and Pᵀ's are).
    for_each_strip<kChunk, kPassTileV, 2>([&](int m0, int n0) {
      float acc[2][4], acc_do[2][4];
      zero(acc);
      zero(acc_do);
      warp_product<T, KP>(acc, key_rows_op, d_op, m0, n0);
      warp_product<T, kChunk>(acc_do, p_t_op, do_op, m0, n0);
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[j][r] = fmaf(scale, acc_do[j][r], acc[j][r]);
      for_each_element(acc, m0, n0, [&](int i, int col, float y) { dvn_s[i * sp + col] = y; });
    });
    __syncthreads();
    float* const d_vnew = d_vnew_of(p, h, slot);
    for (int e = threadIdx.x; e < kChunk * kPassTileV; e += kThreads) {
      const int i = e / kPassTileV, col = col0 + e % kPassTileV;
      if (col < V) d_vnew[std::int64_t{i} * V + col] = dvn_s[i * sp + e % kPassTileV];
    }
    fill(dvn_op, kPassTileV, [&](int col, int i) { return dvn_s[i * sp + col]; });
    copy_rows(t_op, ops.q_t(), 0, KP);
    __syncthreads();
    // ∂L/∂S_c = γ_{n−1} D + scale (Diag(γ) Q)ᵀ dO − W_kᵀ dV_new.
    float acc_q[kPerWarp][2][4];
#pragma unroll
    for (int u = 0; u < kPerWarp; ++u) {
      zero(acc_q[u]);
      if (const int s = threadIdx.x / 32 + kWarps * u; s < kStrips) warp_product<T, kChunk>(acc_q[u], t_op, do_op, s * 16, 0);
    }
    __syncthreads();
    copy_rows(t_op, ops.w_t(), 0, KP);
    __syncthreads();
#pragma unroll
    for (int u = 0; u < kPerWarp; ++u) {
      const int s = threadIdx.x / 32 + kWarps * u;
      if (s >= kStrips) continue;
      float acc_w[2][4];
      zero(acc_w);
      warp_product<T, kChunk>(acc_w, t_op, dvn_op, s * 16, 0);
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc_q[u][j][r] = fmaf(scale, acc_q[u][j][r], -acc_w[j][r]);
      for_each_element(acc_q[u], s * 16, 0, [&](int r, int col, float y) { d_s[r * sp + col] = fmaf(decay_last, d_s[r * sp + col], y); });
    }
    __syncthreads();
  }
  float* const d_start = p.d_start + (pb.sequence * p.f.H + h) * std::int64_t{KP} * V;
  for_each_d([&](int r, int col, float d) {
    if (col >= V) return;
    d_start[std::int64_t{r} * V + col] = d;
    if (p.d_initial.data != nullptr && r < K) *p.d_initial.at(pb.sequence, h, r, col) = d;
  });
}

// ---- value_reductions --------------------------------------------------------------------------------
// Shared memory (words): [64 rows][kSumTileV] operands: dO (input terms), dV_new, V_new, S_c's and D's
// key rows of this block (TERMS) and V (input terms).
template <class T, int TERMS>
struct SumLayout {
  static constexpr int kIn = operand_words<T, kInputTerms<T>>(kChunk, kSumTileV);
  static constexpr int kMid = operand_words<T, TERMS>(kChunk, kSumTileV);
  static constexpr int kWords = 2 * kIn + 4 * kMid;
};

template <class T, int TERMS, int KP>
__global__ void __launch_bounds__(kThreads) value_reductions(const Params<T> p) {
  using L = SumLayout<T, TERMS>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto do_op = operand_at<T, kInputTerms<T>, kSumTileV>(words, kChunk);
  const auto v_op = operand_at<T, kInputTerms<T>, kSumTileV>(words + L::kIn, kChunk);
  const auto dvn_op = operand_at<T, TERMS, kSumTileV>(words + 2 * L::kIn, kChunk);
  const auto vn_op = operand_at<T, TERMS, kSumTileV>(words + 2 * L::kIn + L::kMid, kChunk);
  const auto s_op = operand_at<T, TERMS, kSumTileV>(words + 2 * L::kIn + 2 * L::kMid, kChunk);
  const auto d_op = operand_at<T, TERMS, kSumTileV>(words + 2 * L::kIn + 3 * L::kMid, kChunk);

  ChunkBlock cb;
  if (!chunk_block(p, p.key_tiles, cb)) return;
  const int h = cb.h, n = cb.n, kt = cb.tile;
  const std::int64_t slot = cb.slot, b = cb.b, t0 = cb.t0;
  const int K = p.f.K, V = p.f.V, key0 = kt * kKeyTile;
  const bool first_tile = kt == 0;  // the 64 × 64 sums belong to the first key tile's block
  const TokenRows<const T> d_o = rows_of(p.d_o, b, h), v = rows_of(p.f.v, b, h);
  const float* const d_state = d_state_of<T, KP>(p, h, slot);
  const float* const d_vnew = d_vnew_of(p, h, slot);

  float dq_state[2][2][4] = {}, g[2][2][4] = {}, dk_update[2][2][4] = {}, dp[2][2][4] = {}, y[2][2][4] = {};
  for (int v0 = 0; v0 < V; v0 += kSumTileV) {
    fill(do_op, kChunk, [&](int i, int c) { return i < n && v0 + c < V ? to_float(d_o(t0 + i, v0 + c)) : 0.f; });
    fill(dvn_op, kChunk, [&](int i, int c) { return v0 + c < V ? d_vnew[std::int64_t{i} * V + v0 + c] : 0.f; });
    fill(vn_op, kChunk, [&](int i, int c) { return v0 + c < V ? vnew_at<T, KP>(p, h, slot, i, v0 + c) : 0.f; });
    fill(s_op, kChunk, [&](int r, int c) { return key0 + r < K && v0 + c < V ? state_at<T, KP>(p, h, slot, key0 + r, v0 + c) : 0.f; });
    fill(d_op, kChunk, [&](int r, int c) {
      return key0 + r < K && v0 + c < V ? d_state[std::int64_t{key0 + r} * V + v0 + c] : 0.f;
    });
    if (first_tile) fill(v_op, kChunk, [&](int i, int c) { return i < n && v0 + c < V ? to_float(v(t0 + i, v0 + c)) : 0.f; });
    __syncthreads();
    for_each_square_strip([&](int u, int m0, int n0) {
      warp_product<T, kSumTileV>(dq_state[u], do_op, s_op, m0, n0);
      warp_product<T, kSumTileV>(g[u], dvn_op, s_op, m0, n0);
      warp_product<T, kSumTileV>(dk_update[u], vn_op, d_op, m0, n0);
      if (first_tile) {
        warp_product<T, kSumTileV>(dp[u], do_op, vn_op, m0, n0);
        warp_product<T, kSumTileV>(y[u], dvn_op, v_op, m0, n0);
      }
    });
    __syncthreads();
  }
  const Sums<KP> out = sums_of<T, KP>(p, h, slot);
  const float scale = p.f.scale;
  for_each_square_strip([&](int u, int m0, int n0) {
    for_each_element(dq_state[u], m0, n0, [&](int i, int r, float x) { out.dq_state()[i * KP + key0 + r] = scale * x; });
    for_each_element(g[u], m0, n0, [&](int i, int r, float x) { out.g()[i * KP + key0 + r] = x; });
    for_each_element(dk_update[u], m0, n0, [&](int i, int r, float x) { out.dk_update()[i * KP + key0 + r] = x; });
    if (first_tile) {
      for_each_element(dp[u], m0, n0, [&](int i, int j, float x) { out.dp()[i * kChunk + j] = scale * x; });
      for_each_element(y[u], m0, n0, [&](int i, int j, float x) { out.y()[i * kChunk + j] = x; });
    }
  });
}

// ---- chunk_gradients ---------------------------------------------------------------------------------
// Shared memory (words): the ChunkDecays and seven vectors [64], then two regions. Phase one (T, dR, dA):
// region 1 holds Γ, X and dR/dT fp32 [64][kPitch] and two operands, region 2 T, dA/dX and dP fp32.
// Phase two (dq, dk per key tile): region 1 holds the four A operands dP, dPᵀ, dX + dXᵀ, Tᵀ; region 2 the
// key tile's B operands K, Q (input terms) and G.
template <class T, int TERMS>
struct GradientLayout {
  static constexpr int kOp = operand_words<T, (TERMS > kInputTerms<T> ? TERMS : kInputTerms<T>)>(kChunk, kChunk);
  static constexpr int kMatrix = kChunk * kPitch;
  static constexpr int kVectors = ChunkDecays::kWords + 7 * kChunk;
  static constexpr int kRegion1 = 4 * kOp > 3 * kMatrix + 2 * kOp ? 4 * kOp : 3 * kMatrix + 2 * kOp;
  static constexpr int kRegion2 = 3 * kOp > 3 * kMatrix ? 3 * kOp : 3 * kMatrix;
  static constexpr int kWords = kVectors + kRegion1 + kRegion2;
};

template <class T, int TERMS, int KP, Step STEP>
__global__ void __launch_bounds__(kThreads, 1) chunk_gradients(const Params<T> p) {
  using L = GradientLayout<T, TERMS>;
  using R = Record<T, KP>;
  constexpr int in = kInputTerms<T>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const ChunkDecays decays(words);
  float* const gate_s = words + ChunkDecays::kWords;
  float* const beta_s = gate_s + kChunk;
  float* const gamma_s = beta_s + kChunk;
  float* const to_end_s = gamma_s + kChunk;
  float* const dbeta_s = to_end_s + kChunk;
  float* const norm_s = dbeta_s + kChunk;  // KLA: ‖k‖² + ε
  float* const gain_s = norm_s + kChunk;   // KLA: −2β dβ / (‖k‖² + ε)
  float* const region1 = words + L::kVectors;
  float* const region2 = region1 + L::kRegion1;
  // Phase one.
  float* const ratio_s = region1;                 // Γ
  float* const x_s = region1 + L::kMatrix;        // X
  float* const dr_s = region1 + 2 * L::kMatrix;   // dR, then dT
  float* const op1 = region1 + 3 * L::kMatrix;
  float* const op2 = op1 + L::kOp;
  float* const t_s = region2;                     // T
  float* const da_s = region2 + L::kMatrix;       // M1, then dA, then dX
  float* const dp_s = region2 + 2 * L::kMatrix;   // dP

  ChunkBlock cb;
  if (!chunk_block(p, 1, cb)) return;
  const int h = cb.h, n = cb.n;
  const std::int64_t slot = cb.slot, b = cb.b, t0 = cb.t0;
  const int K = p.f.K, V = p.f.V;
  const TokenRows<const T> q = rows_of(p.f.q, b, h / p.f.group), k = rows_of(p.f.k, b, h / p.f.group);
  const TokenRows<const T> gate = rows_of(p.f.gate, b, h), step = rows_of(p.f.step, b, h);
  const Sums<KP> sums = sums_of<T, KP>(p, h, slot);
  const float* const gamma_rec = R::gamma(fwd::record_of<T, KP>(p.f, h, slot), V);

  if (const int i = threadIdx.x; i < kChunk) {
    gate_s[i] = i < n ? to_float(gate(t0 + i)) : 0.f;
    gamma_s[i] = gamma_rec[i];
    float beta = 0.f, norm = 1.f;
    if (i < n) {
      beta = to_float(step(t0 + i));
      if constexpr (STEP == Step::kaczmarz) {
        norm = fwd::key_norm_squared<KP>([&](int d) { return d < K ? to_float(k(t0 + i, d)) : 0.f; }) + p.f.eps;
        beta = beta / norm;
      }
    }
    beta_s[i] = beta;
    norm_s[i] = norm;
  }
  __syncthreads();
  if (threadIdx.x == 0) decays.form([&](int i) { return gate_s[i]; }, n);
  __syncthreads();
  decays.fill_ratios(ratio_s, kPitch, n);
  if (const int i = threadIdx.x; i < kChunk) to_end_s[i] = decays.ratio(n - 1, i, n);

  // X = K Kᵀ over the key tiles; A = StrictLower(Diag(β) X ⊙ Γ) into t_s (the forward's A).
  const auto key = [&](int i, int d) { return i < n && d < K ? to_float(k(t0 + i, d)) : 0.f; };
  {
    const auto k_op = operand_at<T, in, kKeyTile>(op1, kChunk);
    float acc[2][2][4] = {};
    sum_over_key_tiles<T, KP>(acc, k_op, k_op, key, key);
    for_each_square_strip([&](int u, int m0, int n0) {
      for_each_element(acc[u], m0, n0, [&](int i, int j, float x) {
        x_s[i * kPitch + j] = x;
        t_s[i * kPitch + j] = j < i ? beta_s[i] * x * ratio_s[i * kPitch + j] : 0.f;
      });
    });
  }
  __syncthreads();
  {  // T = (I + A)⁻¹ in place
    float x[kChunk];
    if (threadIdx.x < kChunk) fwd::unit_lower_inverse_column(t_s, kPitch, threadIdx.x, x);
    __syncthreads();
    if (const int col = threadIdx.x; col < kChunk) {
#pragma unroll
      for (int i = 0; i < kChunk; ++i) t_s[i * kPitch + col] = x[i];
    }
  }

  // dR = Y − G Kᵀ Diag(γ).
  {
    float acc[2][2][4] = {};
    sum_over_key_tiles<T, KP>(acc, operand_at<T, TERMS, kKeyTile>(op1, kChunk), operand_at<T, in, kKeyTile>(op2, kChunk),
                              [&](int i, int d) { return sums.g()[i * KP + d]; }, key);
    for_each_square_strip([&](int u, int m0, int n0) {
      for_each_element(acc[u], m0, n0, [&](int i, int j, float x) { dr_s[i * kPitch + j] = sums.y()[i * kChunk + j] - gamma_s[j] * x; });
    });
  }
  __syncthreads();
  // dβ_j = Σ_i dR_ij T_ij; dT = dR Diag(β) in place (thread j: column j).
  if (const int j = threadIdx.x; j < kChunk) {
    float s = 0.f;
    for (int i = 0; i < kChunk; ++i) {
      s = fmaf(dr_s[i * kPitch + j], t_s[i * kPitch + j], s);
      dr_s[i * kPitch + j] *= beta_s[j];
    }
    dbeta_s[j] = s;
  }
  __syncthreads();
  // A square product into dst: acc(i, j) = Σ_k a(i, k) b(j, k), the operands formed from fp32 matrices.
  const auto square_product = [&](auto a, auto b, auto store) {
    const auto a_op = operand_at<T, TERMS, kChunk>(op1, kChunk);
    const auto b_op = operand_at<T, TERMS, kChunk>(op2, kChunk);
    fill(a_op, kChunk, a);
    fill(b_op, kChunk, b);
    __syncthreads();
    for_each_square_strip([&](int, int m0, int n0) {
      float acc[2][4] = {};
      warp_product<T, kChunk>(acc, a_op, b_op, m0, n0);
      for_each_element(acc, m0, n0, store);
    });
    __syncthreads();
  };
  // M1 = Tᵀ dT, then dA = −M1 Tᵀ on the strict lower triangle.
  square_product([&](int i, int c) { return t_s[c * kPitch + i]; }, [&](int j, int c) { return dr_s[c * kPitch + j]; },
                 [&](int i, int j, float x) { da_s[i * kPitch + j] = x; });
  square_product([&](int i, int c) { return da_s[i * kPitch + c]; }, [&](int j, int c) { return t_s[j * kPitch + c]; },
                 [&](int i, int j, float x) { da_s[i * kPitch + j] = j < i ? -x : 0.f; });
  // dβ_i += Σ_j dA_ij X_ij Γ_ij; dX = Diag(β) (dA ⊙ Γ) in place (thread i: row i); dP = dP0 ⊙ Γ.
  if (const int i = threadIdx.x; i < kChunk) {
    float s = 0.f;
    for (int j = 0; j < i; ++j) {
      const float da = da_s[i * kPitch + j];
      s = fmaf(da * x_s[i * kPitch + j], ratio_s[i * kPitch + j], s);
      da_s[i * kPitch + j] = beta_s[i] * (da * ratio_s[i * kPitch + j]);
    }
    const float dbeta = dbeta_s[i] + s;
    float d_step = dbeta, gain = 0.f;
    if constexpr (STEP == Step::kaczmarz) {
      d_step = dbeta / norm_s[i];  // dη
      gain = -2.f * beta_s[i] * dbeta / norm_s[i];
    }
    gain_s[i] = gain;
    if (i < n) rows_of(p.dstep, b, h)(t0 + i) = from_float<T>(d_step);
  }
  for (int e = threadIdx.x; e < kChunk * kChunk; e += kThreads) {
    const int i = e / kChunk, j = e % kChunk;
    dp_s[i * kPitch + j] = sums.dp()[e] * ratio_s[i * kPitch + j];
    p.solve_t[record_index(p, h, slot) * kChunk * kChunk + e] = t_s[j * kPitch + i] * beta_s[i];  // Rᵀ_ij = T_ji β_i
  }
  __syncthreads();

  // Phase two: the A operands (region 1), then per key tile the B operands (region 2).
  const auto dp_op = operand_at<T, TERMS, kChunk>(region1, kChunk);
  const auto dp_t_op = operand_at<T, TERMS, kChunk>(region1 + L::kOp, kChunk);
  const auto dx_op = operand_at<T, TERMS, kChunk>(region1 + 2 * L::kOp, kChunk);
  const auto t_t_op = operand_at<T, TERMS, kChunk>(region1 + 3 * L::kOp, kChunk);
  fill(dp_op, kChunk, [&](int i, int j) { return dp_s[i * kPitch + j]; });
  fill(dp_t_op, kChunk, [&](int i, int j) { return dp_s[j * kPitch + i]; });
  fill(dx_op, kChunk, [&](int i, int j) { return da_s[i * kPitch + j] + da_s[j * kPitch + i]; });
  fill(t_t_op, kChunk, [&](int i, int j) { return t_s[j * kPitch + i]; });
  __syncthreads();
  const auto k_op = operand_at<T, in, kChunk>(region2, kKeyTile);
  const auto q_op = operand_at<T, in, kChunk>(region2 + L::kOp, kKeyTile);
  const auto g_op = operand_at<T, TERMS, kChunk>(region2 + 2 * L::kOp, kKeyTile);
  const TokenRows<T> dq = rows_of(p.dq, b, h / p.f.group), dk = rows_of(p.dk, b, h / p.f.group);  // group = 1 only
  for (int key0 = 0; key0 < KP; key0 += kKeyTile) {
    fill(k_op, kKeyTile, [&](int d, int j) { return j < n && key0 + d < K ? to_float(k(t0 + j, key0 + d)) : 0.f; });
    fill(q_op, kKeyTile, [&](int d, int j) { return j < n && key0 + d < K ? to_float(q(t0 + j, key0 + d)) : 0.f; });
    fill(g_op, kKeyTile, [&](int d, int j) { return sums.g()[j * KP + key0 + d]; });
    __syncthreads();
    for_each_square_strip([&](int, int m0, int n0) {
      float acc_q[2][4] = {}, acc_k[2][4] = {}, acc_g[2][4] = {};
      warp_product<T, kChunk>(acc_q, dp_op, k_op, m0, n0);
      warp_product<T, kChunk>(acc_k, dp_t_op, q_op, m0, n0);
      warp_product<T, kChunk>(acc_k, dx_op, k_op, m0, n0);
      warp_product<T, kChunk>(acc_g, t_t_op, g_op, m0, n0);
#pragma unroll
      for (int j = 0; j < 2; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          const int i = m0 + threadIdx.x % 32 / 4 + 8 * (r / 2), key = key0 + n0 + 8 * j + 2 * (threadIdx.x % 4) + r % 2;
          if (i >= n || key >= K) continue;
          const float dq_i = fmaf(gamma_s[i], sums.dq_state()[i * KP + key], acc_q[j][r]);
          float dk_i = fmaf(to_end_s[i], sums.dk_update()[i * KP + key], acc_k[j][r]);
          dk_i = fmaf(-gamma_s[i] * beta_s[i], acc_g[j][r], dk_i);
          if constexpr (STEP == Step::kaczmarz) dk_i = fmaf(gain_s[i], to_float(k(t0 + i, key)), dk_i);
          if (p.dqk_parts == nullptr) {
            dq(t0 + i, key) = from_float<T>(dq_i);
            dk(t0 + i, key) = from_float<T>(dk_i);
          } else {  // this value head's part of its group's sum (sum_value_head_groups)
            float* const part = dqk_part_of(p, h, slot, i, key);
            part[0] = dq_i;
            part[kChunk * K] = dk_i;
          }
        }
    });
    __syncthreads();
  }
}

// ---- sum_value_head_groups ---------------------------------------------------------------------------
// Grouped value heads (group > 1): dq and dk of query/key head hq are the sums of chunk_gradients' parts
// of value heads hq · group, …, hq · group + group − 1, added in that order in fp32 (one owner per element,
// a fixed order: the same bits every run). One block per (query/key head, slot): blockIdx.x = hq · slots +
// slot, so ChunkBlock::h is the query/key head here.
template <class T>
__global__ void __launch_bounds__(kThreads) sum_value_head_groups(const Params<T> p) {
  ChunkBlock cb;
  if (!chunk_block(p, 1, cb)) return;
  const int hq = cb.h, group = p.f.group, K = p.f.K;
  const TokenRows<T> dq = rows_of(p.dq, cb.b, hq), dk = rows_of(p.dk, cb.b, hq);
  for (int e = threadIdx.x; e < cb.n * K; e += kThreads) {
    const int i = e / K, key = e % K;
    float sum_q = 0.f, sum_k = 0.f;
    for (int j = 0; j < group; ++j) {
      const float* const part = dqk_part_of(p, hq * group + j, cb.slot, i, key);
      sum_q += part[0];
      sum_k += part[kChunk * K];
    }
    dq(cb.t0 + i, key) = from_float<T>(sum_q);
    dk(cb.t0 + i, key) = from_float<T>(sum_k);
  }
}

// ---- value_gradients ---------------------------------------------------------------------------------
// Shared memory (words): Rᵀ [64][64], dV_newᵀ [64 rows][64], P [64][64], V_newᵀ [64 rows][64] and a key
// tile of S_c [64 rows][64] (TERMS), a key tile of Q (input terms), the products o·do − v·dv fp32
// [64][kPitch], γ [64].
template <class T, int TERMS>
struct ValueLayout {
  static constexpr int kMid = operand_words<T, TERMS>(kChunk, kChunk);
  static constexpr int kP = operand_words<T, kChainTerms>(kChunk, kChunk);
  static constexpr int kQ = operand_words<T, kInputTerms<T>>(kChunk, kKeyTile);
  static constexpr int kWords = 4 * kMid + kP + kQ + 2 * kChunk * kPitch + kChunk;  // the products in fp64
};

template <class T, int TERMS, int KP>
__global__ void __launch_bounds__(kThreads, 1) value_gradients(const Params<T> p) {
  using L = ValueLayout<T, TERMS>;
  using R = Record<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto rt_op = operand_at<T, TERMS, kChunk>(words, kChunk);
  const auto dvn_op = operand_at<T, TERMS, kChunk>(words + L::kMid, kOutTileV);
  const auto vn_op = operand_at<T, TERMS, kChunk>(words + 2 * L::kMid, kOutTileV);
  const auto s_op = operand_at<T, TERMS, kKeyTile>(words + 3 * L::kMid, kOutTileV);
  const auto p_op = operand_at<T, kChainTerms, kChunk>(words + 4 * L::kMid, kChunk);
  const auto q_op = operand_at<T, kInputTerms<T>, kKeyTile>(words + 4 * L::kMid + L::kP, kChunk);
  double* const prod_s = reinterpret_cast<double*>(words + 4 * L::kMid + L::kP + L::kQ);  // 8-byte aligned
  float* const gamma_s = reinterpret_cast<float*>(prod_s + kChunk * kPitch);

  const int out_tiles = p.f.out_tiles;
  ChunkBlock cb;
  if (!chunk_block(p, out_tiles, cb)) return;
  const int h = cb.h, n = cb.n, tile = cb.tile;
  const std::int64_t slot = cb.slot, b = cb.b, t0 = cb.t0;
  const int K = p.f.K, V = p.f.V, v0 = tile * kOutTileV;
  const TokenRows<const T> q = rows_of(p.f.q, b, h / p.f.group), v = rows_of(p.f.v, b, h), d_o = rows_of(p.d_o, b, h);
  const float* const solve_t = p.solve_t + record_index(p, h, slot) * kChunk * kChunk;
  const float* const d_vnew = d_vnew_of(p, h, slot);

  fill(rt_op, kChunk, [&](int i, int j) { return solve_t[i * kChunk + j]; });
  fill(dvn_op, kOutTileV, [&](int c, int j) { return v0 + c < V ? d_vnew[std::int64_t{j} * V + v0 + c] : 0.f; });
  copy_rows(p_op, operands_of<T, KP>(p, h, slot).p(), 0, kChunk);
  fill(vn_op, kOutTileV, [&](int c, int j) { return v0 + c < V ? vnew_at<T, KP>(p, h, slot, j, v0 + c) : 0.f; });
  if (threadIdx.x < kChunk) gamma_s[threadIdx.x] = R::gamma(fwd::record_of<T, KP>(p.f, h, slot), V)[threadIdx.x];

  // o / scale = Diag(γ) Q S_c + P V_new, Q S_c over the key tiles.
  float acc_o[2][2][4] = {};
  sum_over_key_tiles<T, KP>(
      acc_o, q_op, s_op, [&](int i, int d) { return i < n && d < K ? to_float(q(t0 + i, d)) : 0.f; },
      [&](int c, int d) { return d < K && v0 + c < V ? state_at<T, KP>(p, h, slot, d, v0 + c) : 0.f; });

  const TokenRows<T> dv = rows_of(p.dv, b, h);
  const float scale = p.f.scale;
  const int g = threadIdx.x % 32 / 4;
  for_each_square_strip([&](int u, int m0, int n0) {
    float acc_v[2][4] = {};
    warp_product<T, kChunk>(acc_v, rt_op, dvn_op, m0, n0);
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc_o[u][j][r] *= gamma_s[m0 + g + 8 * (r / 2)];
    warp_product<T, kChunk>(acc_o[u], p_op, vn_op, m0, n0);
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int i = m0 + g + 8 * (r / 2), c = n0 + 8 * j + 2 * (threadIdx.x % 4) + r % 2, col = v0 + c;
        double term = 0;  // in fp64: the identity's terms cancel where decays are strong
        if (i < n && col < V) {
          const float dv_i = acc_v[j][r];
          dv(t0 + i, col) = from_float<T>(dv_i);
          term = double(scale * acc_o[u][j][r]) * to_float(d_o(t0 + i, col)) - double(to_float(v(t0 + i, col))) * dv_i;
        }
        prod_s[i * kPitch + c] = term;
      }
  });
  __syncthreads();
  if (const int i = threadIdx.x; i < kChunk) {
    double s = 0;
    for (int c = 0; c < kOutTileV; ++c) s += prod_s[i * kPitch + c];
    p.dg_terms[(record_index(p, h, slot) * out_tiles + tile) * kChunk + i] = s;
  }
}

// ---- decay_gradients ---------------------------------------------------------------------------------
// The direct dg at a chunk's first token is ⟨S_c, D_c⟩ (S_c = S_{t0−1}, D_c = ∂L/∂S_{t0−1}: α ∂L/∂α through
// S̃ = α S), and at the next chunk's ⟨S_{c+1}, D_{c+1}⟩; between them the identity's terms
// o_s·do_s − v_s·dv_s step from one to the other. Token i of the chunk takes the nearer end —
// dg = ⟨S_c, D_c⟩ − Σ_{s<i} terms_s, or Σ_{s≥i} terms_s + ⟨S_{c+1}, D_{c+1}⟩ — so that at most n/2 terms
// cancel, and a sequence's first token gets ⟨h0, dh0⟩ (exactly 0 without an initial state). A token with
// α = 0 (g = −∞) is an anchor too: its dg is exactly 0, and the identity steps from it both ways. The dot
// products are summed by the block in a fixed order, in fp64, with the states in fp32 (the last chunk's
// S_{c+1} is the final state: the same values as a next chunk's S_c, so a launch split on a chunk boundary
// gives the same bits).
template <class T, int KP>
__global__ void __launch_bounds__(kThreads) decay_gradients(const Params<T> p) {
  __shared__ double partial[2][kThreads];
  ChunkBlock cb;
  if (!chunk_block(p, 1, cb)) return;
  const int h = cb.h, n = cb.n;
  const std::int64_t slot = cb.slot, b = cb.b, t0 = cb.t0, sequence = cb.sequence;
  const bool first = cb.first, last = cb.last;
  const int K = p.f.K, V = p.f.V;
  const float* const d_next = d_state_of<T, KP>(p, h, slot);
  const float* const d_here = first ? p.d_start + (sequence * p.f.H + h) * std::int64_t{KP} * V : d_state_of<T, KP>(p, h, slot - 1);
  double start = 0, end = 0;
  for (int e = threadIdx.x; e < K * V; e += kThreads) {
    const int key = e / V, col = e % V;
    const std::int64_t at = std::int64_t{key} * V + col;
    const float next = last ? *p.f.final_state.at(sequence, h, key, col) : state_at<T, KP>(p, h, slot + 1, key, col);
    start = fma(double(state_at<T, KP>(p, h, slot, key, col)), double(d_here[at]), start);
    end = fma(double(next), double(d_next[at]), end);
  }
  partial[0][threadIdx.x] = start;
  partial[1][threadIdx.x] = end;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      partial[0][threadIdx.x] += partial[0][threadIdx.x + half];
      partial[1][threadIdx.x] += partial[1][threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const int out_tiles = p.f.out_tiles;
    const double* const terms = p.dg_terms + record_index(p, h, slot) * out_tiles * kChunk;
    const auto term = [&](int i) {
      double s = 0;
      for (int tile = 0; tile < out_tiles; ++tile) s += terms[tile * kChunk + i];
      return s;
    };
    const TokenRows<const T> gate = rows_of(p.f.gate, b, h);
    const auto resets = [&](int i) {  // α_i = 0: nothing before token i reaches the loss through it
      const float g = to_float(gate(t0 + i));
      return isinf(g) && g < 0.f;
    };
    const TokenRows<T> dg = rows_of(p.dg, b, h);
    // Segments between anchors a < e (the chunk's ends and its resets): the first half from a's value
    // forward, the rest from e's backward.
    int a = 0;
    double value_a = resets(0) ? 0.0 : partial[0][0];
    while (a < n) {
      int e = a + 1;
      while (e < n && !resets(e)) ++e;
      const double value_e = e < n ? 0.0 : partial[1][0];
      double acc = value_a;
      int i = a;
      for (; i < e && i - a <= e - i; ++i) {
        dg(t0 + i) = from_float<T>(static_cast<float>(acc));
        acc -= term(i);
      }
      acc = value_e;
      for (int j = e - 1; j >= i; --j) dg(t0 + j) = from_float<T>(static_cast<float>(acc += term(j)));
      a = e;
      value_a = 0.0;
    }
  }
}

// Varlen: the gradients of the tokens outside every sequence (before the first offset or from the last
// on: FLA's padded tail) are zero, as the fused recurrent backward writes them; the chunk kernels write
// the tokens of a sequence only. Blocks stride over the tokens, threads over a token's elements.
template <class T>
__global__ void __launch_bounds__(kThreads) zero_outside_sequences(const Params<T> p) {
  const fwd::Params<T>& f = p.f;
  const std::int64_t first = fwd::offset_at(f.cu_seqlens, f.cu_seqlens_int64, 0);
  const std::int64_t last = fwd::offset_at(f.cu_seqlens, f.cu_seqlens_int64, f.sequences);
  const std::int64_t H = f.H, Hq = f.H / f.group, K = f.K, V = f.V;  // dq, dk per query/key head
  const T zero = from_float<T>(0.f);
  for (std::int64_t t = blockIdx.x; t < f.tokens; t += gridDim.x) {
    if (first <= t && t < last) continue;
    for (std::int64_t e = threadIdx.x; e < Hq * K; e += kThreads) {
      *p.dq.at(0, t, e / K, e % K) = zero;
      *p.dk.at(0, t, e / K, e % K) = zero;
    }
    for (std::int64_t e = threadIdx.x; e < H * V; e += kThreads) *p.dv.at(0, t, e / V, e % V) = zero;
    for (int h = threadIdx.x; h < H; h += kThreads) {
      *p.dg.at(0, t, h) = zero;
      *p.dstep.at(0, t, h) = zero;
    }
  }
}

}  // namespace larc::gpu::detail::delta_rule_chunked_backward
