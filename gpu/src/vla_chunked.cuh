// The chunked forward of VLA (SPEC §1; docs/gpu-kernels/vla.md): what vla-fused-recurrent computes (vla_fused.cu: the
// same tensors, the same φ = ELU+1, λ0 = 1, stab_eps = 1e-4, u_t = norm(k_t)/√K, ratio read), in
// chunks of C = 64 tokens, in the chunked form of reference/include/larc/reference/vla_chunked.h
// (vla::chunked, verified against vla::serial). This header: the pieces every kernel shares and the
// penalty's kernels; vla_chunked.cu: the S pass (chunk_prepare → state_pass → chunk_output) and the launcher.
//
// Per head and chunk of n ≤ 64 tokens (local index t, rows past n zero), U, K̂, Φ_q, V the chunk's rows
// of u, k̂ = norm(φ(k)), φ(q), v; A_s, X_c = S_cᵀ (K × V) and ζ the memory before the chunk; D = diag(δ).
//
// 0. The penalty, every chunk at once. The Sherman–Morrison recursion keeps A_t = M_t⁻¹,
//    M_t = λ0 I + Σ_{s≤t} u_s u_sᵀ (SPEC VLA-C4: δ = 1 + uᵀAu ≥ 1 while A is positive definite, so the
//    floor of δ does not bind in exact arithmetic), so the A_s a chunk starts from is the inverse of a prefix sum:
//      penalty_gram (per (head, chunk)): the chunk's Σ_t u_t u_tᵀ and Σ_t φ(k_t), in double;
//      chunk_prefix's exclusive_prefix (per (b, h) and 256 double pairs, chunks in order): Σ_{c'<c} Gram_{c'}
//                   and ζ before the chunk, in double;
//      penalty_start (per (head, chunk)): M_c = λ0 I + that sum, A_s = M_c⁻¹ by Gauss–Jordan in double,
//                   rounded once to fp32, then
//                   Y = U A_sᵀ (row t: A_s u_t), KA = K̂ A_sᵀ (row t: A_s k̂_t), G = Y Uᵀ (G_rj = y_r·u_j), KY = K̂ Yᵀ.
//    In double the inversion's error (about cond(M_c)·2⁻⁵³, cond(M_c) ≤ 1 + t/(λ0 K)) lies below that one
//    rounding, and no error is carried from chunk to chunk (docs/gpu-kernels/vla.md, "Chunked").
// 1. penalty_chunk (one block per (head, chunk), all at once): SPEC §1's Sherman–Morrison steps (VLA-C4)
//    blocked as vla_chunked.h's penalty_chunk does them. The n sequential steps are an LDLᵀ factorisation
//    of C = I + G with floored pivots: with L_tr = (z_r·u_t)/δ_r (r < t), z_t = y_t − Σ_{r<t} z_r (z_r·u_t)/δ_r
//    reads Y = L Z, and
//      z_t·u_i = G_ti − Σ_{p<t} L_tp (z_p·u_i) = G_ti − Σ_{p<t} L_ip L_tp δ_p,
//    so δ_t = max(1 + z_t·u_t, stab_eps) = max(C_tt − Σ_p L_tp² δ_p, stab_eps) and L_it = (C_ti − Σ_p L_ip L_tp δ_p)/δ_t
//    (i > t): penalty_chunk's recurrence for T_z = L⁻¹ (its P_rt = z_r·u_t), with the floor where it
//    applies it. One forward substitution on the augmented right-hand side [G | KYᵀ | Y] (columns, one
//    thread each, a right-looking update with one __syncthreads per pivot) gives at once
//      P = L⁻¹ G (P_rj = z_r·u_j: the pivots and multipliers), H = K̂ Zᵀ (H_tr = k̂_t·z_r), Z = L⁻¹ Y.
//    Then  A_t k̂_t = A_s k̂_t − Σ_{r≤t} z_r (z_r·k̂_t)/δ_r:  rows of KA + M Z, M = −(H ⊙ L) D⁻¹;
//          α̂_t = norm(A_t k̂_t) (zero past n). (The A after the chunk, A_s − Zᵀ D⁻¹ Z, is not needed.)
//    ζ_t = ζ_{t−1} + φ(k_t) (per coordinate, tokens in order, from ζ before the chunk rounded to fp32) and
//    den_t = max(ζ_tᵀ φ(q_t), stab_eps).
//    Writes α̂ [64][KP] and den [64] (PenaltyRecord).
// 2. chunk_prepare (one block per (head, chunk), all at once): the affine recursion's UT/WY form with
//    two key sets (vla_chunked.h: removal keys k̂, write keys α̂, β = 1, no decay):
//      T = (I + StrictLower(K̂ Âᵀ))⁻¹ (forward substitution), W = T K̂, U = T V, P = (Φ_q Âᵀ) ⊙ L.
// 3. state_pass (one block per (b, h, 16 value columns), chunks in order; register_state_pass.cuh):
//    V_new = U − W X_c, X_{c+1} = X_c + Âᵀ V_new; final_state = X_T.
// 4. chunk_output (one block per (head, chunk, 64 value columns), all at once):
//    o = (Φ_q X_c + P V_new) / den, rows < n.
//
// u, k̂, φ(q), den and α̂'s norm are computed as vla_fused.cu computes them (lane d mod 32 of a warp per
// token, the same sums in the same order, the same divisions and floors), so u and k̂ are bitwise the
// fused kernel's; ζ (summed per chunk in double), den, A, α̂ and X differ from it by rounding only.
//
// Arithmetic: fp32 state and accumulation. The penalty: the chunk starts (Grams, M_c, its inverse) in fp64,
// its products (Y, KA, G, KY, M Z) and the LDL in fp32 (one FMA a term, as the float forms multiply). The S
// pass (chunk_operands.cuh), bf16/fp16: products on tensor cores, fp32 intermediates on the state's path
// (k̂, α̂, T, W, U, V_new, X) as three bf16 terms, those read only by o (φ(q), P, X_c for the read, V_new for
// the read) as two. fp32 inputs are refused (vla_chunked.cu): only bf16/fp16 kernels are compiled.
#pragma once

#include <cstdint>

#include "chunk_operands.cuh"
#include "chunk_prefix.cuh"
#include "delta_rule_fused.cuh"  // delta_rule::TokenRows, rows_of
#include "kernel_common.cuh"
#include "larc/common/mechanism_constants.h"
#include "register_state_pass.cuh"

namespace larc::gpu::detail::vla_chunked {

using namespace chunk_operands;
using register_state_pass::kOutputTerms;
using register_state_pass::kStateTerms;
using delta_rule::rows_of;
using delta_rule::TokenRows;

constexpr int kChunk = 64;
constexpr int kThreads = kBlockThreads;
constexpr int kWarps = kThreads / 32;
constexpr int kTileV = register_state_pass::kTileV;  // value columns per state-pass block
constexpr int kPrepTileV = 64;   // value columns per U pass of chunk_prepare
constexpr int kOutTileV = 64;    // value columns per chunk_output block
constexpr int kSquarePitch = kChunk + 4;  // fp32 rows of 64 in shared memory (16-byte aligned, ≡ 4 mod 32)
constexpr float kLambda0 = 1.f;    // A_0 = I/λ0, as vla_fused.cu
constexpr float kStabEps = float(mechanism_constants::vla_stab_eps);  // floor of δ and of the read's denominator

template <class T>
struct Params {
  Strided<const T> q, k, v;
  Strided<T> o;
  Strided<float> final_state;  // data == nullptr when not requested
  double* starts = nullptr;    // StartRecord per (h, slot)
  float* penalty = nullptr;    // PenaltyRecord per (h, slot)
  float* records = nullptr;    // Record per (h, slot) (vla_chunked.cu)
  float* states = nullptr;     // X_c as chunk_output's operand per (h, slot)
  std::int64_t tokens = 0;     // T
  std::int64_t chunks = 0;     // ⌈T/64⌉
  std::int64_t B = 0;
  std::int64_t slots = 0;      // B · chunks: slot = b · chunks + c, record (h, slot) = h · slots + slot
  int H = 0, K = 0, V = 0;
  int v_tiles = 0;             // ⌈V / kTileV⌉
  int out_tiles = 0;           // ⌈V / kOutTileV⌉
};

// The penalty pass's output of one chunk: α̂ [64][KP] fp32 (zero past n and past K), den [64] (1 past n).
template <int KP>
struct PenaltyRecord {
  static constexpr std::int64_t kWords = std::int64_t{kChunk} * KP + kChunk;
  static __device__ float* alpha(float* r) { return r; }
  static __device__ float* den(float* r) { return r + kChunk * KP; }
};
template <class T, int KP>
__device__ __forceinline__ float* penalty_of(const Params<T>& p, int h, std::int64_t slot) {
  return p.penalty + (h * p.slots + slot) * PenaltyRecord<KP>::kWords;
}

// Columns of the penalty's LDLᵀ right-hand side: [0, 64) G, [64, 128) KYᵀ, [128, 128 + KP) Y.
template <int KP>
constexpr int kSolveColumns = 2 * kChunk + KP;

// Where a chunk's penalty starts, per (head, chunk), in doubles: ζ [KP], then M [KP][KP] (whose words, and
// past them, penalty_start later writes the chunk's products in fp32: the right-hand side [G | KYᵀ | Y]
// [64 rows][kSolveColumns] and K̂ A_sᵀ [64][KP]). penalty_gram writes the chunk's Σ_t φ(k_t) and Gram
// Σ_t u_t u_tᵀ; chunk_prefix's exclusive prefix turns the first kSummed doubles, in place, into ζ before
// the chunk and the Gram sum of the chunks before, to which penalty_start adds λ0 I: M_c.
template <int KP>
struct StartRecord {
  static constexpr std::int64_t kSummed = std::int64_t{KP} + std::int64_t{KP} * KP;
  static constexpr std::int64_t kOperandFloats = std::int64_t{kChunk} * (kSolveColumns<KP> + KP);
  static constexpr std::int64_t kDoubles = KP + (KP * KP > kOperandFloats / 2 ? KP * KP : kOperandFloats / 2);
  static_assert(kSummed % 2 == 0 && kDoubles % 2 == 0, "the prefix runs over double2 vectors");
  static __device__ double* zeta(double* r) { return r; }
  static __device__ double* m(double* r) { return r + KP; }
  static __device__ float* rhs(double* r) { return reinterpret_cast<float*>(m(r)); }
  static __device__ float* ka(double* r) { return rhs(r) + std::int64_t{kChunk} * kSolveColumns<KP>; }
};
template <class T, int KP>
__device__ __forceinline__ double* start_of(const Params<T>& p, int h, std::int64_t slot) {
  return p.starts + (h * p.slots + slot) * StartRecord<KP>::kDoubles;
}

// The chunk of a (head, slot) block: head h, batch entry b, first token t0, n ≤ 64 tokens.
struct Chunk {
  std::int64_t slot, b, t0;
  int h, n;
};
template <class T>
__device__ __forceinline__ Chunk chunk_of(const Params<T>& p, std::int64_t record) {
  Chunk c;
  c.slot = record % p.slots;
  c.h = static_cast<int>(record / p.slots);
  c.b = c.slot / p.chunks;
  c.t0 = c.slot % p.chunks * kChunk;
  c.n = static_cast<int>(p.tokens - c.t0 < kChunk ? p.tokens - c.t0 : kChunk);
  return c;
}

// max(x, floor) keeping a NaN, as vla_fused.cu's floored (the reference's `if (x < floor) x = floor`).
__device__ __forceinline__ float floored(float x, float floor) { return x < floor ? floor : x; }

// The sum over the warp in every lane (vla_fused.cu's group_sum<32>: the same butterfly).
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// Whole warp, token t: u = (1/√K)·k/‖k‖ and k̂ = φ(k)/‖φ(k)‖, lane holding entries lane + 32c (zero
// past K), by vla_fused.cu's token_vectors arithmetic.
template <class T, int KP>
__device__ __forceinline__ void key_directions(const TokenRows<const T>& k, std::int64_t t, int K, float (&u)[KP / 32],
                                               float (&khat)[KP / 32]) {
  const int lane = threadIdx.x % 32;
  float raw[KP / 32], phi[KP / 32];
  float kk = 0.f, pp = 0.f;
#pragma unroll
  for (int c = 0; c < KP / 32; ++c) {
    const bool in = lane + 32 * c < K;
    raw[c] = in ? to_float(k(t, lane + 32 * c)) : 0.f;
    phi[c] = in ? elu_plus_one(raw[c]) : 0.f;
    kk += raw[c] * raw[c];
    pp += phi[c] * phi[c];
  }
  kk = warp_sum(kk);
  pp = warp_sum(pp);
  const float k_norm = sqrtf(kk), phi_norm = sqrtf(pp), inv_sqrt_k = 1.f / sqrtf(static_cast<float>(K));
#pragma unroll
  for (int c = 0; c < KP / 32; ++c) {
    const bool in = lane + 32 * c < K;
    u[c] = in ? inv_sqrt_k * (raw[c] / k_norm) : 0.f;
    khat[c] = in ? phi[c] / phi_norm : 0.f;
  }
}

// ---- the penalty, every chunk at once ---------------------------------------------------------------
// Register tiles over the block: thread (ty, tx) = (thread / 16, thread % 16) of a 16 × 16 grid holds a
// rectangle of rows from ty and of columns from tx.
static_assert(kThreads == 256, "the penalty's register tiles are a 16 × 16 grid of threads");
__device__ __forceinline__ int tile_y() { return static_cast<int>(threadIdx.x) / 16; }
__device__ __forceinline__ int tile_x() { return static_cast<int>(threadIdx.x) % 16; }
template <int KP>
constexpr int kTile = KP / 16;  // columns (and M_c's rows) a thread of a [·][KP] tile

// acc[a][c] += Σ_{j<depth} left[a·row_step + j·left_pitch] · right[j·right_pitch + c], fp32 FMAs in j order: a
// thread's ROWS × COLS tile of a product of matrices in shared memory.
template <int ROWS, int COLS>
__device__ __forceinline__ void tile_product(float (&acc)[ROWS][COLS], const float* left, int row_step, int left_pitch,
                                             const float* right, int right_pitch, int depth) {
  for (int j = 0; j < depth; ++j) {
    float a[ROWS], b[COLS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) a[r] = left[r * row_step + j * left_pitch];
#pragma unroll
    for (int c = 0; c < COLS; ++c) b[c] = right[j * right_pitch + c];
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int c = 0; c < COLS; ++c) acc[r][c] = fmaf(a[r], b[c], acc[r][c]);
  }
}

// φ(k_t) of the chunk's tokens to dst [64][KP] (floats), zero past n and K, by the whole block; the loads
// unrolled, so that many are in flight at once. penalty_gram sums it into ζ's chunk total, penalty_chunk into
// ζ_t.
template <class T, int KP>
__device__ __forceinline__ void stage_key_features(float* dst, const TokenRows<const T>& k, std::int64_t t0, int n, int K) {
  static_assert(kChunk * KP % kThreads == 0);
#pragma unroll 8
  for (int a = 0; a < kChunk * KP / kThreads; ++a) {
    const int e = static_cast<int>(threadIdx.x) + a * kThreads, i = e / KP, d = e % KP;
    dst[e] = i < n && d < K ? elu_plus_one(to_float(k(t0 + i, d))) : 0.f;
  }
}

// Shared memory of penalty_gram: the chunk's u_t widened to double once [64][KP], then φ(k_t) [64][KP] (floats).
template <int KP>
struct GramLayout {
  static constexpr int kUWords = 2 * kChunk * KP, kPhi = kUWords, kWords = kPhi + kChunk * KP;
};

// One block per (head, chunk): the chunk's Gram Σ_t u_t u_tᵀ and Σ_t φ(k_t) to its StartRecord, in double
// (u is fp32, so its products are exact there). u and φ(k) by the arithmetic penalty_start and penalty_chunk use.
// u is widened once as it is staged and φ(k) staged beside it, so that the Gram's loop is loads and DFMAs and ζ's
// sums read shared memory, not a global load a token.
template <class T, int KP>
__global__ void __launch_bounds__(kThreads) penalty_gram(const Params<T> p) {
  using L = GramLayout<KP>;
  constexpr int R = kTile<KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  double* const u_s = reinterpret_cast<double*>(smem_vec);
  float* const phi_s = reinterpret_cast<float*>(smem_vec) + L::kPhi;
  const Chunk ch = chunk_of(p, blockIdx.x);
  const int K = p.K, lane = threadIdx.x % 32;
  const TokenRows<const T> k = rows_of(p.k, ch.b, ch.h);
  double* const start = start_of<T, KP>(p, ch.h, ch.slot);

  for (int i = threadIdx.x / 32; i < kChunk; i += kWarps) {
    float u[KP / 32] = {}, khat[KP / 32];
    if (i < ch.n) key_directions<T, KP>(k, ch.t0 + i, K, u, khat);
#pragma unroll
    for (int c = 0; c < KP / 32; ++c) u_s[i * KP + lane + 32 * c] = static_cast<double>(u[c]);
  }
  stage_key_features<T, KP>(phi_s, k, ch.t0, ch.n, K);
  __syncthreads();
  if (threadIdx.x < KP) {
    const int d = threadIdx.x;
    double sum = 0.;
    for (int i = 0; i < ch.n; ++i) sum += phi_s[i * KP + d];
    StartRecord<KP>::zeta(start)[d] = sum;
  }
  const int i0 = tile_y() * R, j0 = tile_x() * R;
  double g[R][R] = {};
  for (int t = 0; t < ch.n; ++t) {
    double a[R], b[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      a[r] = u_s[t * KP + i0 + r];
      b[r] = u_s[t * KP + j0 + r];
    }
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int c = 0; c < R; ++c) g[r][c] = fma(a[r], b[c], g[r][c]);
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int c = 0; c < R; ++c) StartRecord<KP>::m(start)[(i0 + r) * KP + j0 + c] = g[r][c];
}

// ---- penalty_start ---------------------------------------------------------------------------------
// Shared memory (floats): Uᵀ and K̂ᵀ [KP rows][128 (+4)] (column t < 64: u_t, 64 + t: k̂_t), A_sᵀ [KP][KP (+4)]
// and Yᵀ [KP][64 (+4)]; the pivot's row and column are static. 166 KB at KP = 128; one block an SM.
template <int KP>
struct StartLayout {
  static constexpr int kRowPitch = 2 * kChunk + 4, kAPitch = KP + 4, kYPitch = kSquarePitch;
  static constexpr int kRowsT = 0, kAT = KP * kRowPitch, kYT = kAT + KP * kAPitch;
  static constexpr int kWords = kYT + KP * kYPitch;
};

// One block per (head, chunk):
//   M_c = λ0 I + the Gram sum before the chunk, and A_s = M_c⁻¹ by Gauss–Jordan elimination in place, in
//   double, M_c held in the block's registers (a thread R × R of it). M_c is symmetric positive definite
//   (λ0 > 0), so its pivots are positive and need no pivoting. Pivot p: row p becomes M_pj/M_pp (its own entry 1/M_pp), every other row i loses M_ip
//   times it (its entry in column p becomes −M_ip/M_pp). Rows and columns ≥ K are zero and stay so.
//   A_s is rounded once, to fp32.
//   Then the chunk's products with A_s, in fp32 (one FMA a term, as the float forms multiply):
//   [Y; K̂ A_sᵀ] = [U; K̂] A_sᵀ (row t of Y: A_s u_t), G = Y Uᵀ (G_rj = y_r·u_j), KY = K̂ Yᵀ (KY_tr = k̂_t·y_r),
//   written over M_c: the LDL's right-hand side [G | KYᵀ | Y] and K̂ A_sᵀ.
template <class T, int KP>
__global__ void __launch_bounds__(kThreads, 1) penalty_start(const Params<T> p) {
  using L = StartLayout<KP>;
  using SR = StartRecord<KP>;
  constexpr int R = kTile<KP>, kStacked = 2 * kChunk, kRowsPerY = kStacked / 16;
  constexpr int kColumns = kSolveColumns<KP>;
  static_assert(R % 2 == 0, "the pivots alternate the two pivot buffers by q's parity, across groups too");
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  float* const rows_t = words + L::kRowsT;
  float* const a_t = words + L::kAT;  // a_t[j][i] = A_s[i][j]: products read A_s by its rows
  float* const y_t = words + L::kYT;
  __shared__ double row_s[2][KP], column_s[2][KP];  // the pivot's, by pivot parity: one barrier a pivot
  const Chunk ch = chunk_of(p, blockIdx.x);
  const int K = p.K, n = ch.n, ty = tile_y(), tx = tile_x(), lane = threadIdx.x % 32;
  const int i0 = ty * R, j0 = tx * R;  // this thread's rows and columns of M_c
  const TokenRows<const T> k = rows_of(p.k, ch.b, ch.h);
  double* const start = start_of<T, KP>(p, ch.h, ch.slot);

  double m[R][R];
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int c = 0; c < R; ++c) {
      const bool diagonal = i0 + r == j0 + c && i0 + r < K;  // M_c = λ0 I_K + the Grams of the chunks before
      m[r][c] = SR::m(start)[(i0 + r) * KP + j0 + c] + (diagonal ? static_cast<double>(kLambda0) : 0.);
    }
  for (int i = threadIdx.x / 32; i < kChunk; i += kWarps) {  // u_t and k̂_t, zero past n
    float u[KP / 32] = {}, khat[KP / 32] = {};
    if (i < n) key_directions<T, KP>(k, ch.t0 + i, K, u, khat);
#pragma unroll
    for (int c = 0; c < KP / 32; ++c) {
      rows_t[(lane + 32 * c) * L::kRowPitch + i] = u[c];
      rows_t[(lane + 32 * c) * L::kRowPitch + kChunk + i] = khat[c];
    }
  }

  // Pivots in groups of R, each group unrolled: pivot piv = block·R + q is row q of the tiles of row
  // `block` (ty = block) and column q of the tiles of column `block` (tx = block), a register index known at
  // compile time, so that the threads holding it copy, clear and single it out without a select an element.
  for (int block = 0; block * R < K; ++block) {
    const bool holds_row = ty == block, holds_column = tx == block;
#pragma unroll
    for (int q = 0; q < R; ++q) {
      const int piv = block * R + q;
      if (piv >= K) break;
      double* const row = row_s[q % 2];
      double* const column = column_s[q % 2];
      if (holds_row)
#pragma unroll
        for (int c = 0; c < R; ++c) row[j0 + c] = m[q][c];
      if (holds_column)
#pragma unroll
        for (int r = 0; r < R; ++r) column[i0 + r] = m[r][q];
      // Row piv and column piv cleared, and row piv's factor −1: the one update below then writes
      // M_pj/M_pp over row piv, −M_ip/M_pp over column piv and 1/M_pp over the pivot, each the one rounding of
      // the product the elimination defines.
      if (holds_row)
#pragma unroll
        for (int c = 0; c < R; ++c) m[q][c] = 0.;
      if (holds_column)
#pragma unroll
        for (int r = 0; r < R; ++r) m[r][q] = 0.;
      __syncthreads();
      const double inverse = 1. / row[piv];
      double scaled[R], factor[R];
#pragma unroll
      for (int c = 0; c < R; ++c) scaled[c] = (holds_column && c == q ? 1. : row[j0 + c]) * inverse;
#pragma unroll
      for (int r = 0; r < R; ++r) factor[r] = holds_row && r == q ? -1. : column[i0 + r];
#pragma unroll
      for (int r = 0; r < R; ++r)
#pragma unroll
        for (int c = 0; c < R; ++c) m[r][c] = fma(-factor[r], scaled[c], m[r][c]);
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int c = 0; c < R; ++c)
      a_t[(j0 + c) * L::kAPitch + i0 + r] = i0 + r < K && j0 + c < K ? static_cast<float>(m[r][c]) : 0.f;
  __syncthreads();  // A_sᵀ and the rows complete; every tile of M_c read, so its words may be written

  // [Y; K̂ A_sᵀ]: thread rows s ∈ [ty·8, ty·8 + 8) of the 128 stacked rows, columns i ∈ [j0, j0 + R).
  {
    const int s0 = ty * kRowsPerY;
    float acc[kRowsPerY][R] = {};
    tile_product(acc, rows_t + s0, 1, L::kRowPitch, a_t + j0, L::kAPitch, K);
    float* const rhs = SR::rhs(start);
    float* const ka = SR::ka(start);
#pragma unroll
    for (int r = 0; r < kRowsPerY; ++r)
#pragma unroll
      for (int c = 0; c < R; ++c) {
        const int s = s0 + r, i = j0 + c;
        if (s < kChunk) {
          y_t[i * L::kYPitch + s] = acc[r][c];
          rhs[s * kColumns + 2 * kChunk + i] = acc[r][c];
        } else {
          ka[(s - kChunk) * KP + i] = acc[r][c];
        }
      }
  }
  __syncthreads();

  // G (rows s < 64: G_sj = y_s·u_j) and KY (rows 64 + t: KY_tj = k̂_t·y_j): thread rows s ∈ [ty·8, ty·8 + 8),
  // columns j ∈ [tx·4, tx·4 + 4). Warps are uniform in which (ty < 8 for pairs of ty).
  {
    constexpr int kCols = kChunk / 16;
    const int s0 = ty * kRowsPerY, j0 = tx * kCols;
    const bool gram = s0 < kChunk;
    const float* const left = gram ? y_t + s0 : rows_t + s0;
    const int left_pitch = gram ? L::kYPitch : L::kRowPitch;
    const float* const right = gram ? rows_t + j0 : y_t + j0;
    const int right_pitch = gram ? L::kRowPitch : L::kYPitch;
    float acc[kRowsPerY][kCols] = {};
    tile_product(acc, left, 1, left_pitch, right, right_pitch, K);
    float* const rhs = SR::rhs(start);
#pragma unroll
    for (int r = 0; r < kRowsPerY; ++r)
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int s = s0 + r, j = j0 + c;
        if (gram)
          rhs[s * kColumns + j] = acc[r][c];
        else
          rhs[j * kColumns + kChunk + (s - kChunk)] = acc[r][c];  // KYᵀ: row j, column 64 + t
      }
  }
}

// ---- penalty_chunk ---------------------------------------------------------------------------------
// Shared memory (floats): φ(k) then ζ_t [64][KP], later A_t k̂_t [64][KP (+4)] in its words; M [64][64 (+4)],
// Zᵀ's rows Z [64][KP (+4)], the pivot rows [2][64] and δ [64]. 84 KB at KP = 128: two blocks an SM.
template <int KP>
struct ChunkLayout {
  static constexpr int kWidePitch = KP + 4;
  static constexpr int kZeta = 0, kKa = 0;
  static constexpr int kM = kChunk * kWidePitch;
  static constexpr int kZ = kM + kChunk * kSquarePitch;
  static constexpr int kPivots = kZ + kChunk * kWidePitch;
  static constexpr int kWords = kPivots + 3 * kChunk;
  static_assert(kChunk * KP <= kM, "ζ_t within A_t k̂_t's words");
};

// One block per (head, chunk), from penalty_start's products and ζ before the chunk (the exclusive prefix).
template <class T, int KP>
__global__ void __launch_bounds__(kThreads, 2) penalty_chunk(const Params<T> p) {
  using L = ChunkLayout<KP>;
  using SR = StartRecord<KP>;
  constexpr int R = kTile<KP>, kRowsPerThread = kChunk / 16, wp = L::kWidePitch, mp = kSquarePitch;
  constexpr int kColumns = kSolveColumns<KP>;
  static_assert(kColumns <= kThreads);
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  float* const zeta_s = words + L::kZeta;
  float* const ka_s = words + L::kKa;
  float* const m_s = words + L::kM;
  float* const z_s = words + L::kZ;
  float* const pivot_rows = words + L::kPivots;  // [2][64], by pivot parity
  float* const delta_s = pivot_rows + 2 * kChunk;

  const Chunk ch = chunk_of(p, blockIdx.x);
  const int K = p.K, n = ch.n;
  const std::int64_t t0 = ch.t0;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, col = threadIdx.x;
  const TokenRows<const T> q = rows_of(p.q, ch.b, ch.h), k = rows_of(p.k, ch.b, ch.h);
  double* const start = start_of<T, KP>(p, ch.h, ch.slot);
  float* const record = penalty_of<T, KP>(p, ch.h, ch.slot);

  // ζ_t: φ(k) of the chunk, then thread d sums its coordinate over the tokens in order, in place, from ζ
  // before the chunk.
  stage_key_features<T, KP>(zeta_s, k, t0, n, K);
  __syncthreads();
  if (col < KP) {
    float zeta = static_cast<float>(SR::zeta(start)[col]);
    for (int i = 0; i < kChunk; ++i) zeta_s[i * KP + col] = zeta += zeta_s[i * KP + col];
  }
  __syncthreads();
  // A warp per token: den_t = max(ζ_tᵀ φ(q_t), stab_eps); the warp's tokens' q loaded before any sum.
  {
    static_assert(kChunk % kWarps == 0);
    constexpr int kTokens = kChunk / kWarps;
    float phi_q[kTokens][KP / 32];
#pragma unroll
    for (int a = 0; a < kTokens; ++a)
#pragma unroll
      for (int cc = 0; cc < KP / 32; ++cc) {
        const int i = warp + a * kWarps, d = lane + 32 * cc;
        phi_q[a][cc] = i < n && d < K ? elu_plus_one(to_float(q(t0 + i, d))) : 0.f;
      }
#pragma unroll
    for (int a = 0; a < kTokens; ++a) {
      const int i = warp + a * kWarps;
      float den = 1.f;
      if (i < n) {
        float zq = 0.f;
#pragma unroll
        for (int cc = 0; cc < KP / 32; ++cc) zq += zeta_s[i * KP + lane + 32 * cc] * phi_q[a][cc];
        den = floored(warp_sum(zq), kStabEps);
      }
      if (lane == 0) PenaltyRecord<KP>::den(record)[i] = den;
    }
  }

  // The LDLᵀ of I + G as a forward substitution on [G | KYᵀ | Y], thread `col` owning one column x
  // (rows r = the chunk's tokens). Before pivot r, rows ≤ r are final: δ_r = max(1 + P_rr, stab_eps)
  // and every row i > r loses L_ir · (row r) with L_ir = P_ri/δ_r, P_ri the G part's row r.
  float x[kChunk];
  if (col < kColumns) {
    const float* const rhs = SR::rhs(start);
#pragma unroll
    for (int r = 0; r < kChunk; ++r) x[r] = rhs[r * kColumns + col];
  }
#pragma unroll
  for (int r = 0; r < kChunk; ++r) {
    float* const row = pivot_rows + (r % 2) * kChunk;
    if (col < kChunk) row[col] = x[r];
    __syncthreads();
    const float delta = floored(1.f + row[r], kStabEps);
    if (col == 0) delta_s[r] = delta;
    if (col < kColumns) {
      const float w = x[r] / delta;
#pragma unroll
      for (int i4 = (r + 1) / 4 * 4; i4 < kChunk; i4 += 4) {
        const float4 l = *reinterpret_cast<const float4*>(row + i4);
        if (i4 > r) x[i4] = fmaf(-l.x, w, x[i4]);
        if (i4 + 1 > r) x[i4 + 1] = fmaf(-l.y, w, x[i4 + 1]);
        if (i4 + 2 > r) x[i4 + 2] = fmaf(-l.z, w, x[i4 + 2]);
        x[i4 + 3] = fmaf(-l.w, w, x[i4 + 3]);
      }
    }
  }
  __syncthreads();  // δ complete
  // Z (the Y part: column d of Z), and M = −(H ⊙ L) D⁻¹ (the KYᵀ part: row t of H = K̂ Zᵀ).
  if (col >= 2 * kChunk && col < kColumns) {
#pragma unroll
    for (int r = 0; r < kChunk; ++r) z_s[r * wp + col - 2 * kChunk] = x[r];
  } else if (col >= kChunk && col < 2 * kChunk) {
    const int t = col - kChunk;
#pragma unroll
    for (int r = 0; r < kChunk; ++r) m_s[t * mp + r] = r <= t ? -x[r] / delta_s[r] : 0.f;
  }
  __syncthreads();
  // A_t k̂_t = (K̂ A_sᵀ)_t + (M Z)_t: thread rows t ∈ [ty·4, ty·4 + 4), columns i ∈ [tx·R, tx·R + R).
  {
    const int r0 = tile_y() * kRowsPerThread, i0 = tile_x() * R;
    const float* const ka = SR::ka(start);
    float acc[kRowsPerThread][R];
#pragma unroll
    for (int a = 0; a < kRowsPerThread; ++a)
#pragma unroll
      for (int c = 0; c < R; ++c) acc[a][c] = ka[(r0 + a) * KP + i0 + c];
    tile_product(acc, m_s + r0 * mp, mp, 1, z_s + i0, wp, n);
#pragma unroll
    for (int a = 0; a < kRowsPerThread; ++a)
#pragma unroll
      for (int c = 0; c < R; ++c) ka_s[(r0 + a) * wp + i0 + c] = acc[a][c];
  }
  __syncthreads();
  // α̂_t = norm(A_t k̂_t), a warp per token (vla_fused.cu: sqrtf of warp_dot, then a division).
  for (int i = warp; i < kChunk; i += kWarps) {
    float a[KP / 32], ss = 0.f;
#pragma unroll
    for (int cc = 0; cc < KP / 32; ++cc) {
      a[cc] = ka_s[i * wp + lane + 32 * cc];
      ss += a[cc] * a[cc];
    }
    const float norm = sqrtf(warp_sum(ss));
#pragma unroll
    for (int cc = 0; cc < KP / 32; ++cc) PenaltyRecord<KP>::alpha(record)[i * KP + lane + 32 * cc] = i < n ? a[cc] / norm : 0.f;
  }
}

}  // namespace larc::gpu::detail::vla_chunked
