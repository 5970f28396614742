// The chunked forward of GDN and KLA (docs/gpu-kernels/delta-rule.md "Chunked GDN and KLA"):
// FLA's chunk gated delta rule in the UT/WY form of the reference's delta_rule::chunked, C = 64.
//
// Per head, chunk of n ≤ 64 tokens (local index i), in-chunk log-decays G_i = Σ_{r≤i} g_r and
// Γ_ij = e^{G_i − G_j} (j ≤ i), γ_i = e^{G_i} (SPEC "GDN", chunked form):
//   A   = StrictLower(Diag(β) K K^T ⊙ Γ),   T = (I + A)^{-1}               (forward substitution, fp32)
//   W   = T Diag(β) Diag(γ) K,               U = T Diag(β) V
//   P   = (Q K^T) ⊙ Γ ⊙ L                                                   (L includes the diagonal)
//   V_new   = U − W S_c
//   O       = scale [Diag(γ) Q S_c + P V_new]
//   S_{c+1} = γ_{n−1} S_c + K^T Diag(Γ_{n−1,·}) V_new
// The reference forms W with T_w = (I + StrictLower(Diag(β) K K^T))^{-1} and subtracts Diag(γ) W S_c;
// T Diag(β γ) = Diag(γ) T_w Diag(β) (A = Diag(γ) A_w Diag(γ)^{-1} on the strict lower part), so
// FLA's single solve computes the same V_new; both are polynomials in the decays, so the identity
// also holds where a decay is 0.
//
// Three kernels, FLA's split of the work: chunk_prepare (one block per (head, chunk slot), every chunk
// at once) writes W, K̃ = Diag(Γ_{n−1,·}) K, U, P and γ of every chunk into a workspace; state_pass (one
// block per (sequence, head, tile of kTileV value columns), chunks in order: the only sequential part)
// keeps S_c in shared memory, writes V_new to the record, S_c (the state entering chunk c) to a second
// workspace and the final state; chunk_output (one block per (head, chunk slot, tile of kOutTileV value
// columns), every chunk at once) forms o. state_pass loads chunk c + 1's W, U and γ by cp.async while it
// forms chunk c's state update, and chunk c + 1's K̃ᵀ while it forms chunk c + 1's V_new (W and K̃ᵀ
// share one buffer, loaded in turn, when KP > 128). A sequence is a batch entry, or with varlen (FLA's
// cu_seqlens, B = 1) a span of the packed tokens whose chunks start at its own first token; chunk_map
// (varlen only) gives each sequence its first slot. β of KLA (SPEC §3) is computed in chunk_prepare
// from k exactly as kla-fused-recurrent does (same fp32 tree, same division), so both kernels see
// bitwise the same β.
//
// Arithmetic (chunk_operands.cuh). fp32 state and accumulation everywhere. bf16/fp16 inputs: every
// chunk-local product on tensor cores; inputs enter exactly; fp32 intermediates as three bf16 terms on
// the state's path (T, W, K̃, U, V_new, S: the final state is fp32 and is judged as such; two terms
// miss the gate's fp32 tolerance: docs/perf-notes.md, "Chunked GDN / KLA" row 1) and as two in
// chunk_output, whose o is rounded to the input dtype. fp32 inputs: the same products by FMA in fp64 —
// never TF32 (FLA's chunk kernel on fp32 inputs returns TF32-grade results: ../shared/anchors/README.md).
// The io grade (gdn/kla-chunked-io, declared io: docs/gate.md "Precision grades"): every intermediate
// operand, on the state's path and chunk_output's, rounded once to the input dtype's terms — bf16 one term,
// one MMA per product as FLA's h, w, v_new; fp16 two bf16 terms (16 bits, fp16 has 11) — so the fp32
// final state carries S's rounding per chunk. U, summed into V_new and no product's operand, stays fp32;
// fp32 inputs keep the arithmetic above. The io grade's U and W take the operands of the io baseline and
// of FLA's recompute_w_u_fwd: U = rb(T) rb(Diag(β) V), W = rb(T) rb(Diag(β γ) K), T rounded alone and
// the B operands formed in fp32 from the inputs and rounded once (chunk_prepare; docs/gpu-kernels/
// delta-rule.md "The io grade").
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "chunk_operands.cuh"
#include "delta_rule_fused.cuh"  // delta_rule::TokenRows, rows_of
#include "kernel_common.cuh"
#include "register_state_pass.cuh"
#include "validate.h"

namespace larc::gpu::detail::delta_rule_chunked {

using namespace chunk_operands;
using register_state_pass::kOutputTerms;
using register_state_pass::kStateTerms;

using delta_rule::rows_of;
using delta_rule::TokenRows;

constexpr int kChunk = 64;
constexpr int kThreads = kBlockThreads;
constexpr int kTileV = register_state_pass::kTileV;  // value columns per state-pass block
constexpr int kPrepTileV = 64;  // value columns per U pass of chunk_prepare
constexpr int kOutTileV = 64;   // value columns per chunk_output block

enum class Step { beta, kaczmarz };  // GDN: β is an input; KLA: β = η / (‖k‖² + ε)

template <class T>
struct Params {
  Strided<const T> q, k, v, gate, step;  // gate: g; step: beta (GDN) or eta (KLA)
  Strided<T> o;
  Strided<const float> initial_state;  // optional (data == nullptr when absent)
  Strided<float> final_state;          // optional
  float* workspace = nullptr;          // Records, [H][slots]
  float* states = nullptr;             // S_c entering each chunk, [H][slots][KP][V]
  float* solve = nullptr;  // optional: (T Diag(β))ᵀ of each chunk, [H][slots] solve_operand (log-linear-gdn-chunked)
  // Optional, bf16/fp16 (the register pass): S_c [H][slots][V][KP] and V_new [H][slots][64][V] in fp32 as the
  // pass holds them (the chunked backward's reads; the records keep them in kOutputTerms planes).
  float* states_f32 = nullptr;
  float* vnew_f32 = nullptr;
  const void* cu_seqlens = nullptr;    // varlen: [N+1] int32 or int64; B = 1
  bool cu_seqlens_int64 = false;
  const std::int64_t* first_slot = nullptr;  // varlen: sequence n's records from slot first_slot[n] ([N+1], chunk_map)
  std::int64_t tokens = 0;  // T: tokens per batch entry (varlen: all packed tokens)
  std::int64_t chunks = 0;  // ceil(T / kChunk): chunks per batch entry (not varlen)
  std::int64_t sequences = 0;  // B, or N (varlen)
  std::int64_t slots = 0;  // records per head: B · chunks, or ceil(T / kChunk) + N (varlen; an upper bound)
  int H = 0, K = 0, V = 0;  // H: the value heads (v, gates, states, o)
  int group = 1;             // value heads per query/key head (FLA's GVA): head h reads q, k of head h / group
  int v_tiles = 0;  // ceil(V / kTileV)
  int out_tiles = 0;  // ceil(V / kOutTileV)
  float scale = 1, eps = 0;
};

// ST, OT (template parameters below): the bf16 terms of an intermediate operand on the state's path (T, W,
// K̃, S_c and V_new in the state pass) and on chunk_output's (S_c, P, V_new). The fp32 grade's kStateTerms and
// kOutputTerms by default; the io kernels (gdn/kla-chunked-io) take the input's terms for both, every
// intermediate rounded once to the input dtype (delta_rule_chunked.cu).
template <class T, int ST>
constexpr bool kIoGrade = kMma<T> && ST == kInputTerms<T>;  // the io kernels' instantiations

// One chunk's record in the workspace (4-byte words; every part a multiple of 16 bytes), operands in
// the layout of Operand so that they are copied to shared memory as they are:
//   W [64 rows][KP] and K̃ᵀ = (Diag(Γ_{n−1,·}) K)ᵀ [KP rows][64] in ST planes (chunk_prepare → state_pass),
//   U [64][V] fp32 (chunk_prepare → state_pass),
//   V_new [V rows][64] and P [64 rows][64] in OT planes (→ chunk_output), γ [64].
template <class T, int KP, int ST = kStateTerms, int OT = kOutputTerms>
struct Record {
  static constexpr int kW = operand_words<T, ST>(kChunk, KP);
  static constexpr int kKt = operand_words<T, ST>(KP, kChunk);
  static constexpr int kP = operand_words<T, OT>(kChunk, kChunk);
  static __host__ __device__ std::int64_t vn_words(int V) { return std::int64_t{operand_words<T, OT>(1, kChunk)} * V; }
  static __host__ __device__ std::int64_t words(int V) {
    return kW + kKt + std::int64_t{kChunk} * V + vn_words(V) + kP + kChunk;
  }
  static __device__ float* w(float* r) { return r; }
  static __device__ float* kt(float* r) { return r + kW; }
  static __device__ float* u(float* r) { return r + kW + kKt; }
  static __device__ float* vn(float* r, int V) { return u(r) + std::int64_t{kChunk} * V; }
  static __device__ float* p(float* r, int V) { return vn(r, V) + vn_words(V); }
  static __device__ float* gamma(float* r, int V) { return p(r, V) + kP; }
};

template <class T, int KP, int ST = kStateTerms, int OT = kOutputTerms>
__device__ __forceinline__ float* record_of(const Params<T>& p, int h, std::int64_t slot) {
  return p.workspace + (h * p.slots + slot) * Record<T, KP, ST, OT>::words(p.V);
}

// (T Diag(β))ᵀ of (head, slot), the chunk's attention solve (A_chunk = P T Diag(β) is the chunk's own
// token-to-token attention): [64 rows][64] in kOutputTerms planes, row s holding column s of T Diag(β).
template <class T>
constexpr int kSolveWords = operand_words<T, kOutputTerms>(kChunk, kChunk);
template <class T>
__device__ __forceinline__ Operand<T, kOutputTerms, kChunk> solve_operand(const Params<T>& p, int h, std::int64_t slot) {
  return operand_at<T, kOutputTerms, kChunk>(p.solve + (h * p.slots + slot) * kSolveWords<T>, kChunk);
}

// S_c of (head, slot) as chunk_output's B operand: [V rows][KP] in OT planes.
template <class T, int KP, int OT = kOutputTerms>
__host__ __device__ constexpr std::int64_t state_words(int V) {
  return std::int64_t{operand_words<T, OT>(1, KP)} * V;
}
template <class T, int KP, int OT = kOutputTerms>
__device__ __forceinline__ float* state_of(const Params<T>& p, int h, std::int64_t slot) {
  return p.states + (h * p.slots + slot) * state_words<T, KP, OT>(p.V);
}

__device__ __forceinline__ std::int64_t offset_at(const void* cu_seqlens, bool int64, std::int64_t i) {
  return int64 ? static_cast<const std::int64_t*>(cu_seqlens)[i] : static_cast<const std::int32_t*>(cu_seqlens)[i];
}

// Tokens [bos, eos) of sequence n in batch entry b (varlen: FLA's cu_seqlens, b = 0); false when
// cu_seqlens gives bounds outside 0 ≤ bos ≤ eos ≤ T.
template <class T>
__device__ __forceinline__ bool sequence_of(const Params<T>& p, std::int64_t n, std::int64_t& b, std::int64_t& bos,
                                            std::int64_t& eos) {
  b = n, bos = 0, eos = p.tokens;
  if (p.cu_seqlens == nullptr) return true;
  b = 0;
  bos = offset_at(p.cu_seqlens, p.cu_seqlens_int64, n);
  eos = offset_at(p.cu_seqlens, p.cu_seqlens_int64, n + 1);
  return 0 <= bos && bos <= eos && eos <= p.tokens;
}

__host__ __device__ constexpr std::int64_t chunks_in(std::int64_t tokens) { return (tokens + kChunk - 1) / kChunk; }

// Varlen: first_slot[n] = Σ_{m<n} chunks of sequence m (0 for a sequence with invalid bounds), and
// first_slot[N] = the total; one block, each thread a contiguous run of sequences, a block scan of the
// run totals. A corrupt cu_seqlens whose valid sequences overlap may need more than `slots` records;
// state_pass flags the sequences past them (NaN final state).
constexpr int kMapThreads = 1024;

struct SequenceMap {
  const void* cu_seqlens = nullptr;
  bool int64 = false;
  std::int64_t sequences = 0, tokens = 0;
  std::int64_t* first_slot = nullptr;
};

// A template (THREADS = kMapThreads), so that every unit including this header may instantiate it: its
// device code is merged at link time.
template <int THREADS>
__global__ void __launch_bounds__(THREADS) chunk_map(const SequenceMap m) {
  __shared__ std::int64_t total[THREADS];
  const auto chunks_of = [&](std::int64_t n) -> std::int64_t {
    const std::int64_t bos = offset_at(m.cu_seqlens, m.int64, n), eos = offset_at(m.cu_seqlens, m.int64, n + 1);
    return 0 <= bos && bos <= eos && eos <= m.tokens ? chunks_in(eos - bos) : 0;
  };
  const int i = threadIdx.x;
  const std::int64_t per = (m.sequences + THREADS - 1) / THREADS;
  const std::int64_t first = i * per, last = first + per < m.sequences ? first + per : m.sequences;
  std::int64_t sum = 0;
  for (std::int64_t n = first; n < last; ++n) sum += chunks_of(n);
  total[i] = sum;
  __syncthreads();
  for (int d = 1; d < THREADS; d *= 2) {  // inclusive scan of the run totals
    const std::int64_t x = i >= d ? total[i - d] : 0;
    __syncthreads();
    total[i] += x;
    __syncthreads();
  }
  std::int64_t slot = i == 0 ? 0 : total[i - 1];
  for (std::int64_t n = first; n < last; ++n) {
    m.first_slot[n] = slot;
    slot += chunks_of(n);
  }
  if (i == THREADS - 1) m.first_slot[m.sequences] = total[i];
}

// ‖k‖² by kla-fused-recurrent's tree (delta_rule_fused.cuh column_dot, any geometry): the KP rows (zero
// past K) cut into 8 runs of KP/8, each summed with four accumulators (row j into j % 4), the run sums
// combined ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)). KP is the fused kernel's KMAX for the
// same K (64, 128 or 256), so β = η / (‖k‖² + ε) is bitwise the fused kernel's. k(d) gives row d.
template <int KP, class F>
__device__ __forceinline__ float key_norm_squared(F k) {
  constexpr int run = KP / 8;
  float r[8];
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < run; ++j) acc[j % 4] = fmaf(k(s * run + j), k(s * run + j), acc[j % 4]);
    r[s] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
  return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
}

// The chunk of a head's record slot: batch entry b, first token t0, length n. False for a varlen slot
// no sequence needs, or one of a sequence state_pass refuses (corrupt cu_seqlens whose overlapping
// sequences need more than `slots` records: that sequence gets a NaN final state and no output).
// Optionally the sequence's index (its states' first index) and whether the chunk is its first, its last.
template <class T>
__device__ __forceinline__ bool chunk_of_slot(const Params<T>& p, std::int64_t slot, std::int64_t& b, std::int64_t& t0,
                                              int& n, std::int64_t* sequence_out = nullptr, bool* first = nullptr,
                                              bool* last = nullptr) {
  std::int64_t sequence = slot / (p.chunks > 0 ? p.chunks : 1), c = slot - sequence * p.chunks;
  if (p.cu_seqlens != nullptr) {
    if (slot >= p.first_slot[p.sequences]) return false;
    std::int64_t lo = 0, hi = p.sequences;  // the last n with first_slot[n] ≤ slot: first_slot[lo] ≤ slot < first_slot[hi]
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (p.first_slot[mid] <= slot ? lo : hi) = mid;
    }
    sequence = lo;
    c = slot - p.first_slot[lo];
  }
  std::int64_t bos, eos;
  sequence_of(p, sequence, b, bos, eos);  // valid: a sequence with invalid bounds has no slot
  if (p.cu_seqlens != nullptr && p.first_slot[sequence] + chunks_in(eos - bos) > p.slots) return false;
  t0 = bos + c * kChunk;
  n = static_cast<int>(eos - t0 < kChunk ? eos - t0 : kChunk);
  if (sequence_out != nullptr) *sequence_out = sequence;
  if (first != nullptr) *first = c == 0;
  if (last != nullptr) *last = t0 + n == eos;
  return true;
}

// β of the chunk's token i (0 past its n tokens): the input's, or KLA's η / (‖k‖² + ε) with ‖k‖² from
// row i of the key operand k_op (key_norm_squared's tree: the fused kernel's bits).
template <class T, int KP, Step STEP, class KOp>
__device__ __forceinline__ float token_step(const TokenRows<const T>& step, const KOp& k_op, std::int64_t t0, int i,
                                            int n, float eps) {
  if (i >= n) return 0.f;
  const float beta = to_float(step(t0 + i));
  if constexpr (STEP == Step::kaczmarz)
    return beta / (key_norm_squared<KP>([&](int d) { return element(k_op, i, d); }) + eps);
  return beta;
}

// (I + A) x = b for the strictly lower A [64][pitch] (fp32, 16-byte aligned rows) by forward
// substitution, rhs(i) = b_i, rows in order. Row i's Σ_{j<i} A_ij x_j is summed in four partial sums
// (j mod 4, each j ascending) combined pairwise, so the dependent chain is one FMA and two adds per row
// instead of i FMAs (the reference's unit_lower_solve sums j in order), in ACC: fp32, or fp64 where the
// products it feeds are FMA in fp64. Each x_i is rounded to fp32 (the operands it becomes are fp32)
// before the later rows take it, so every row's residual b_i − x_i − Σ A_ij x_j is that row's own
// rounding. One thread a right-hand side: a column of T = (I + A)⁻¹ with b = e_col.
template <class ACC, class B>
__device__ __forceinline__ void unit_lower_solve_column(const float* a, int pitch, B rhs, ACC (&x)[kChunk]) {
  const auto fma_acc = [](float m, ACC y, ACC s) {
    if constexpr (std::is_same_v<ACC, float>)
      return fmaf(m, y, s);
    else
      return fma(static_cast<double>(m), y, s);
  };
#pragma unroll
  for (int i = 0; i < kChunk; ++i) {
    ACC s[4] = {rhs(i), ACC(0), ACC(0), ACC(0)};
#pragma unroll
    for (int j = 0; j < i; j += 4) {  // A's row i four entries a load
      const float4 r = *reinterpret_cast<const float4*>(a + i * pitch + j);
      s[0] = fma_acc(-r.x, x[j], s[0]);
      if (j + 1 < i) s[1] = fma_acc(-r.y, x[j + 1], s[1]);
      if (j + 2 < i) s[2] = fma_acc(-r.z, x[j + 2], s[2]);
      if (j + 3 < i) s[3] = fma_acc(-r.w, x[j + 3], s[3]);
    }
    x[i] = static_cast<ACC>(static_cast<float>((s[0] + s[1]) + (s[2] + s[3])));
  }
}
// Column `col` of T = (I + A)⁻¹.
__device__ __forceinline__ void unit_lower_inverse_column(const float* a, int pitch, int col, float (&x)[kChunk]) {
  unit_lower_solve_column<float>(a, pitch, [col](int i) { return i == col ? 1.f : 0.f; }, x);
}

// Strip (m0, n0) of the UT transform's A = StrictLower(Diag(β) K Kᵀ ⊙ Γ) (ratios Γ and A both [64][pitch]),
// from the key operand k_op: one definition for chunk_prepare and the chunked backward's backward_prepare,
// whose W_k then solves the forward's own system.
template <class T, int KP, class KOp>
__device__ __forceinline__ void step_matrix_strip(const KOp& k_op, const float* beta_s, const float* ratio_s, float* a,
                                                  int pitch, int m0, int n0) {
  float acc[2][4];
  zero(acc);
  warp_product<T, KP>(acc, k_op, k_op, m0, n0);
  for_each_element(acc, m0, n0, [&](int i, int j, float x) {
    a[i * pitch + j] = j < i ? beta_s[i] * x * ratio_s[i * pitch + j] : 0.f;
  });
}

// ---- chunk_prepare ---------------------------------------------------------------------------------
// Shared memory (words): the ChunkDecays; β, γ, g, Γ_{n−1,·} [64]; K [64 rows][KP]
// and Kᵀ [KP rows][64] (input terms; the io grade: (Diag(β γ) K)ᵀ); A, then T Diag(β) (the io grade: T),
// fp32 [64][68]; and a region holding Q [64][KP] (input terms) and Γ fp32 [64][68] while A and P are
// formed, then T Diag(β) (Diag(γ)) [64][64] (the io grade: T) (ST) and a Vᵀ tile [kPrepTileV rows][64]
// (input terms; the io grade: (Diag(β) V)ᵀ).
template <class T, int KP, int ST = kStateTerms>
struct PrepareLayout {
  static constexpr int kIn = kInputTerms<T>;
  static constexpr int kSquare = kChunk * (kChunk + 4);
  static constexpr int kK = operand_words<T, kIn>(kChunk, KP);
  static constexpr int kKt = operand_words<T, kIn>(KP, kChunk);
  static constexpr int kT = operand_words<T, ST>(kChunk, kChunk);
  static constexpr int kVt = operand_words<T, kIn>(kPrepTileV, kChunk);
  static constexpr int kRegion = kK + kSquare > kT + kVt ? kK + kSquare : kT + kVt;
  static constexpr int kWords = ChunkDecays::kWords + 4 * kChunk + kK + kKt + kSquare + kRegion;
};

// The largest K chunk_prepare takes for inputs of type T: 256, unless its layout at KP = 256 passes the
// 227 KB of shared memory a block may opt into — fp16's, whose K and Kᵀ operands take two bf16 terms
// (240 KB). The chunked launchers refuse a larger K by name rather than fail the opt-in.
template <class T>
constexpr int kPrepareMaxK = sizeof(float) * PrepareLayout<T, 256>::kWords <= 227 * 1024 ? 256 : 128;

// Refuses, naming K, a launch whose K passes kPrepareMaxK of its input dtype (bound by the validator).
inline void require_prepare_k(Validator& v, Dtype dt) {
  if (dt != Dtype::fp16) return;
  v.require(v.size('K') <= kPrepareMaxK<__half>, "K = " + std::to_string(v.size('K')) + " exceeds " +
                                                     std::to_string(kPrepareMaxK<__half>) +
                                                     ", this kernel's limit for fp16 inputs (chunk_prepare's shared memory)");
}

template <class T, int KP, Step STEP, int ST = kStateTerms, int OT = kOutputTerms>
__global__ void __launch_bounds__(kThreads, KP <= 128 ? 2 : 1) chunk_prepare(const Params<T> p) {
  using L = PrepareLayout<T, KP, ST>;
  constexpr int in = L::kIn, cp = kChunk + 4;
  // The io grade forms U = rb(T) rb(Diag(β) V) and W = rb(T) rb(Diag(β γ) K) (rb: rounded once to the
  // input's terms): T rounded alone as both A operands, and B operands formed in fp32 from the inputs and
  // rounded once — the operands of the io baseline (T_u and B V; T_w and B K: docs/gate.md "Operands the io
  // baseline rounds") and of FLA's recompute_w_u_fwd (A, v·β and k·β·e^g in the input dtype). The
  // baseline's T_w = (I + StrictLower(Diag(β) K Kᵀ))⁻¹ applies γ after W S_c; the one solve here takes Γ
  // into T, so γ joins β in W's B operand, as in FLA. The fp32 grade's operands, T Diag(β) (Diag(γ)) with
  // K and V exact, round once fewer, yet at ST = 1 make the final state's error a heavy-tailed draw against
  // the baseline's (docs/gpu-kernels/delta-rule.md "The io grade").
  constexpr bool io = kIoGrade<T, ST>;
  float4* const smem_vec = dynamic_shared<float4>();
  const ChunkDecays decays(reinterpret_cast<float*>(smem_vec));
  float* const beta_s = reinterpret_cast<float*>(smem_vec) + ChunkDecays::kWords;  // β (0 past n)
  float* const gamma_s = beta_s + kChunk;                            // γ (0 past n)
  float* const gate_s = gamma_s + kChunk;                            // g (0 past n)
  float* const to_end_s = gate_s + kChunk;                           // Γ_{n−1,·} (0 past n)
  float* const k_words = to_end_s + kChunk;
  float* const kt_words = k_words + L::kK;
  float* const t_s = kt_words + L::kKt;                              // A, then T Diag(β) [64][cp]
  float* const region = t_s + L::kSquare;
  const auto k_op = operand_at<T, in, KP>(k_words, kChunk);
  const auto kt_op = operand_at<T, in, kChunk>(kt_words, KP);
  const auto q_op = operand_at<T, in, KP>(region, kChunk);
  float* const ratio_s = region + L::kK;                             // Γ [64][cp], zero above the diagonal
  const auto t_op = operand_at<T, ST, kChunk>(region, kChunk);
  const auto vt_op = operand_at<T, in, kChunk>(region + L::kT, kPrepTileV);

  const std::int64_t slot = blockIdx.x % p.slots;
  const int h = static_cast<int>(blockIdx.x / p.slots);
  std::int64_t b, t0;
  int n;
  if (!chunk_of_slot(p, slot, b, t0, n)) return;
  const int K = p.K, V = p.V;
  const TokenRows<const T> q = rows_of(p.q, b, h / p.group), k = rows_of(p.k, b, h / p.group), v = rows_of(p.v, b, h);
  const TokenRows<const T> gate = rows_of(p.gate, b, h), step = rows_of(p.step, b, h);
  float* const record = record_of<T, KP, ST, OT>(p, h, slot);
  using R = Record<T, KP, ST, OT>;

  fill(k_op, kChunk, [&](int i, int d) { return i < n && d < K ? to_float(k(t0 + i, d)) : 0.f; });
  fill(q_op, kChunk, [&](int i, int d) { return i < n && d < K ? to_float(q(t0 + i, d)) : 0.f; });
  if (const int i = threadIdx.x; i < kChunk) gate_s[i] = i < n ? to_float(gate(t0 + i)) : 0.f;
  __syncthreads();

  // β per token (threads 0..63); the log-decays' prefix sums in fp64 (thread 64).
  if (threadIdx.x < kChunk) {
    beta_s[threadIdx.x] = token_step<T, KP, STEP>(step, k_op, t0, threadIdx.x, n, p.eps);
  } else if (threadIdx.x == kChunk) {
    decays.form([&](int i) { return gate_s[i]; }, n);
  }
  __syncthreads();

  decays.fill_ratios(ratio_s, cp, n);
  if (threadIdx.x < kChunk) {
    const int i = threadIdx.x;
    const float gamma = decays.from_start(i, n);
    gamma_s[i] = io ? beta_s[i] * gamma : gamma;  // the io grade: β γ, the row scale of W's B operand (its only use)
    R::gamma(record, V)[i] = gamma;
    to_end_s[i] = decays.ratio(n - 1, i, n);
  }
  __syncthreads();

  // Kᵀ (the io grade: (Diag(β γ) K)ᵀ; W's B operand) here, K̃ᵀ = (Diag(Γ_{n−1,·}) K)ᵀ (the state update's
  // A operand) to the record.
  fill(kt_op, KP, [&](int d, int j) {
    if constexpr (io)
      return gamma_s[j] * element(k_op, j, d);
    else
      return element(k_op, j, d);
  });
  fill(operand_at<T, ST, kChunk>(R::kt(record), KP), KP,
       [&](int d, int j) { return to_end_s[j] * element(k_op, j, d); });

  // A = StrictLower(Diag(β) K K^T ⊙ Γ) into t_s; P = (Q K^T) ⊙ Γ (lower, diagonal included) to the record.
  {
    const auto p_out = operand_at<T, OT, kChunk>(R::p(record, V), kChunk);
    for_each_strip<kChunk, kChunk, 2>([&](int m0, int n0) {
      step_matrix_strip<T, KP>(k_op, beta_s, ratio_s, t_s, cp, m0, n0);
      float acc[2][4];
      zero(acc);
      warp_product<T, KP>(acc, q_op, k_op, m0, n0);
      for_each_pair(acc, m0, n0, [&](int i, int j, float x0, float x1) {
        store_pair(p_out, i, j, x0 * ratio_s[i * cp + j], x1 * ratio_s[i * cp + j + 1]);
      });
    });
  }
  __syncthreads();

  // T = (I + A)^{-1} (unit_lower_inverse_column), then T Diag(β) (the io grade: T) in place of A.
  float x[kChunk];
  if (threadIdx.x < kChunk) unit_lower_inverse_column(t_s, cp, threadIdx.x, x);
  __syncthreads();
  if (threadIdx.x < kChunk) {
    const int col = threadIdx.x;
    if constexpr (io) {
#pragma unroll
      for (int i = 0; i < kChunk; ++i) t_s[i * cp + col] = x[i];
    } else {
      const float beta = beta_s[col];
#pragma unroll
      for (int i = 0; i < kChunk; ++i) t_s[i * cp + col] = x[i] * beta;
    }
  }
  __syncthreads();
  if (p.solve != nullptr)
    fill(solve_operand(p, h, slot), kChunk, [&](int s, int r) {
      if constexpr (io)
        return t_s[r * cp + s] * beta_s[s];
      else
        return t_s[r * cp + s];
    });

  // W = (T Diag(β) Diag(γ)) K (the io grade: T (Diag(β γ) K)): all KP columns (zero past K), to the record.
  fill(t_op, kChunk, [&](int i, int j) {
    if constexpr (io)
      return t_s[i * cp + j];
    else
      return t_s[i * cp + j] * gamma_s[j];
  });
  __syncthreads();
  {
    const auto w_out = operand_at<T, ST, KP>(R::w(record), kChunk);
    for_each_strip<kChunk, KP, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, kChunk>(acc, t_op, kt_op, m0, n0);
      for_each_pair(acc, m0, n0, [&](int i, int d, float x0, float x1) { store_pair(w_out, i, d, x0, x1); });
    });
  }
  __syncthreads();
  // U = T Diag(β) V (the io grade: T (Diag(β) V), T's operand the one W took), kPrepTileV columns at a time
  // (Vᵀ tiles: token pairs of one column, read across columns).
  if constexpr (!io) fill(t_op, kChunk, [&](int i, int j) { return t_s[i * cp + j]; });
  write_value_solve<kPrepTileV>(t_op, vt_op, n, V, R::u(record), [&](int j, int c) {
    if constexpr (io)
      return beta_s[j] * to_float(v(t0 + j, c));
    else
      return to_float(v(t0 + j, c));
  });
}

// ---- state_pass ------------------------------------------------------------------------------------
// Shared memory (words): W [64 rows][KP] and K̃ᵀ [KP rows][64] (kStateTerms planes, as in the record;
// one buffer for both when KP > 128, loaded in turn), U then V_new fp32 [64][kTileV+4], S_c fp32
// [KP][kTileV+4], S_c as W S's B operand [kTileV rows][KP] and V_new as the update's B operand
// [kTileV rows][64] (kStateTerms planes), γ [64]. The pass of fp32 inputs (bf16 and fp16 take
// register_state_pass.cuh's): 95 KB at KP = 128, 114 KB at KP = 256.
template <class T, int KP>
struct PassLayout {
  static constexpr bool kShared = KP > 128;
  static constexpr int kW = Record<T, KP>::kW, kKt = Record<T, KP>::kKt;
  static constexpr int kBuffers = kShared ? (kW > kKt ? kW : kKt) : kW + kKt;
  static constexpr int kU = kChunk * (kTileV + 4), kS = KP * (kTileV + 4);
  static constexpr int kSop = operand_words<T, kStateTerms>(kTileV, KP);
  static constexpr int kVop = operand_words<T, kStateTerms>(kTileV, kChunk);
  static constexpr int kWords = kBuffers + kU + kS + kSop + kVop + kChunk;
};

// A state-pass block: one (sequence, head, tile of kTileV value columns); states [sequence, h].
struct PassBlock {
  int h = 0, col0 = 0;
  std::int64_t sequence = 0, bos = 0, eos = 0, chunks = 0, first_slot = 0;
  __device__ int length(std::int64_t c) const {  // tokens of chunk c
    return static_cast<int>(eos - (bos + c * kChunk) < kChunk ? eos - (bos + c * kChunk) : kChunk);
  }
};

// This block's PassBlock; false for a corrupt cu_seqlens (bounds outside [0, T], or overlapping
// sequences past the slots), after writing NaN into the block's final-state columns: nothing else is
// written for that sequence. THREADS: the block's.
template <int THREADS, int KP, class T>
__device__ __forceinline__ bool pass_block(const Params<T>& p, PassBlock& pb) {
  const std::int64_t block = blockIdx.x;
  pb.h = static_cast<int>(block / p.v_tiles % p.H);
  pb.col0 = static_cast<int>(block % p.v_tiles) * kTileV;
  pb.sequence = block / p.v_tiles / p.H;
  std::int64_t b;
  const bool valid = sequence_of(p, pb.sequence, b, pb.bos, pb.eos);
  pb.chunks = valid ? chunks_in(pb.eos - pb.bos) : 0;
  pb.first_slot = p.cu_seqlens == nullptr ? pb.sequence * p.chunks : p.first_slot[pb.sequence];
  if (valid && pb.first_slot + pb.chunks <= p.slots) return true;
  if (p.final_state.data != nullptr)
    for (int e = threadIdx.x; e < KP * kTileV; e += THREADS) {
      const int r = e / kTileV, col = pb.col0 + e % kTileV;
      if (r < p.K && col < p.V) *p.final_state.at(pb.sequence, pb.h, r, col) = __int_as_float(0x7fc00000);
    }
  return false;
}

// The state pass of bf16/fp16 inputs: register_state_pass.cuh with Bᵀ = K̃ᵀ and d_c = γ_{n−1}.
template <class T, int KP, int ST = kStateTerms, int OT = kOutputTerms>
__global__ void __launch_bounds__(register_state_pass::kThreads, 1) register_pass(const Params<T> p) {
  namespace rs = register_state_pass;
  using R = Record<T, KP, ST, OT>;
  float4* const smem_vec = dynamic_shared<float4>();
  PassBlock pb;
  if (!pass_block<rs::kThreads, KP>(p, pb)) return;
  const int K = p.K, V = p.V;
  rs::State<KP> x;
  rs::for_each_state<KP>(x, pb.col0, [&](float& e, int key, int col) {
    e = p.initial_state.data != nullptr && key < K && col < V ? *p.initial_state.at(pb.sequence, pb.h, key, col) : 0.f;
  });
  rs::run<T, KP, ST, OT>(x, pb.chunks, pb.col0, V, [&](std::int64_t c) {
    float* const record = record_of<T, KP, ST, OT>(p, pb.h, pb.first_slot + c);
    const std::int64_t slot = pb.first_slot + c, chunk_index = pb.h * p.slots + slot;
    return rs::ChunkIo{R::w(record), R::kt(record), R::u(record), R::gamma(record, V) + pb.length(c) - 1,
                       R::vn(record, V), state_of<T, KP, OT>(p, pb.h, slot),
                       p.states_f32 != nullptr ? p.states_f32 + chunk_index * V * KP : nullptr,
                       p.vnew_f32 != nullptr ? p.vnew_f32 + chunk_index * kChunk * V : nullptr};
  }, reinterpret_cast<float*>(smem_vec));
  if (p.final_state.data != nullptr)
    rs::for_each_state<KP>(x, pb.col0, [&](float& e, int key, int col) {
      if (key < K && col < V) *p.final_state.at(pb.sequence, pb.h, key, col) = e;
    });
}

// The state pass of fp32 inputs (FMA in fp64), S_c in shared memory.
template <class T, int KP>
__global__ void __launch_bounds__(kThreads, 1) state_pass(const Params<T> p) {
  using L = PassLayout<T, KP>;
  using R = Record<T, KP>;
  constexpr int sp = kTileV + 4;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const w_words = reinterpret_cast<float*>(smem_vec);
  float* const kt_words = L::kShared ? w_words : w_words + L::kW;
  float* const u_s = w_words + L::kBuffers;  // U, then V_new [64][sp], this block's columns
  float* const s_s = u_s + L::kU;             // S_c [KP][sp]
  float* const gamma_s = s_s + L::kS + L::kSop + L::kVop;
  const auto w_op = operand_at<T, kStateTerms, KP>(w_words, kChunk);
  const auto kt_op = operand_at<T, kStateTerms, kChunk>(kt_words, KP);
  const auto s_op = operand_at<T, kStateTerms, KP>(s_s + L::kS, kTileV);
  const auto vn_op = operand_at<T, kStateTerms, kChunk>(s_s + L::kS + L::kSop, kTileV);

  PassBlock pb;
  if (!pass_block<kThreads, KP>(p, pb)) return;
  const int h = pb.h, K = p.K, V = p.V, col0 = pb.col0;
  const std::int64_t sequence = pb.sequence, chunks = pb.chunks, first_slot = pb.first_slot;

  for (int e = threadIdx.x; e < KP * kTileV; e += kThreads) {
    const int r = e / kTileV, col = col0 + e % kTileV;
    s_s[r * sp + e % kTileV] = p.initial_state.data != nullptr && r < K && col < V
                                   ? *p.initial_state.at(sequence, h, r, col)
                                   : 0.f;
  }

  // Chunk c's W, this block's U columns and γ (one cp.async group), and its K̃ᵀ (another).
  const auto stage_w = [&](std::int64_t c) {
    float* const record = record_of<T, KP>(p, h, first_slot + c);
    copy_operand_async(w_op, operand_at<T, kStateTerms, KP>(R::w(record), kChunk));
    copy_column_tile_async<kThreads, kChunk, kTileV>(u_s, sp, R::u(record), V, col0);
    copy_words_async<kBlockThreads>(gamma_s, R::gamma(record, V), kChunk);
    commit_async();
  };
  const auto stage_kt = [&](std::int64_t c) {
    copy_operand_async(kt_op, operand_at<T, kStateTerms, kChunk>(R::kt(record_of<T, KP>(p, h, first_slot + c)), KP));
    commit_async();
  };

  if (chunks > 0) {
    stage_w(0);
    if constexpr (!L::kShared) stage_kt(0);
  }
  for (std::int64_t c = 0; c < chunks; ++c) {
    const int n = pb.length(c);
    float* const record = record_of<T, KP>(p, h, first_slot + c);
    if constexpr (L::kShared)
      wait_async<0>();
    else
      wait_async<1>();  // W, U and γ of chunk c (its K̃ᵀ may still be in flight)
    __syncthreads();
    const float decay_last = gamma_s[n - 1];

    // S_c as W S's B operand, and (its first kOutputTerms planes) to the states workspace for chunk_output.
    store_columns<kTileV>(s_op, operand_at<T, kOutputTerms, KP>(state_of<T, KP>(p, h, first_slot + c), V), s_s, sp,
                          col0, V);
    __syncthreads();
    // V_new = U − W S_c, in place of U.
    for_each_strip<kChunk, kTileV, 1>([&](int m0, int n0) {
      float acc[1][4];
      zero(acc);
      warp_product<T, KP>(acc, w_op, s_op, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int col, float y) { u_s[i * sp + col] -= y; });
    });
    __syncthreads();
    // V_new as the update's B operand, and (kOutputTerms planes) to the record for chunk_output.
    store_columns<kTileV>(vn_op, operand_at<T, kOutputTerms, kChunk>(R::vn(record, V), V), u_s, sp, col0, V);
    __syncthreads();  // W, U and γ are read no more
    if constexpr (L::kShared) {
      stage_kt(c);
      wait_async<0>();
    } else {
      if (c + 1 < chunks) stage_w(c + 1);
      else commit_async();  // an empty group keeps the count
      wait_async<1>();      // K̃ᵀ of chunk c
    }
    __syncthreads();
    // S_{c+1} = γ_{n−1} S_c + K̃ᵀ V_new.
    for_each_strip<KP, kTileV, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, kChunk>(acc, kt_op, vn_op, m0, n0);
      for_each_element(acc, m0, n0, [&](int r, int col, float y) { s_s[r * sp + col] = decay_last * s_s[r * sp + col] + y; });
    });
    __syncthreads();  // K̃ᵀ is read no more
    if (c + 1 < chunks) {
      if constexpr (L::kShared)
        stage_w(c + 1);
      else
        stage_kt(c + 1);
    } else if constexpr (!L::kShared) {
      commit_async();
    }
  }
  __syncthreads();

  if (p.final_state.data != nullptr)
    for (int e = threadIdx.x; e < KP * kTileV; e += kThreads) {
      const int r = e / kTileV, col = col0 + e % kTileV;
      if (r < K && col < V) *p.final_state.at(sequence, h, r, col) = s_s[r * sp + e % kTileV];
    }
}

// ---- chunk_output ----------------------------------------------------------------------------------
// Shared memory (words): Q [64 rows][KP] (input terms), S_c [kOutTileV rows][KP], P [64 rows][64],
// V_new [kOutTileV rows][64] (OT planes), γ [64]: 88 KB at KP = 128 (bf16, fp32 grade).
template <class T, int KP, int OT = kOutputTerms>
struct OutputLayout {
  static constexpr int kQ = operand_words<T, kInputTerms<T>>(kChunk, KP);
  static constexpr int kS = operand_words<T, OT>(kOutTileV, KP);
  static constexpr int kP = operand_words<T, OT>(kChunk, kChunk);
  static constexpr int kVn = operand_words<T, OT>(kOutTileV, kChunk);
  static constexpr int kWords = kQ + kS + kP + kVn + kChunk;
};

// o = scale [Diag(γ) Q S_c + P V_new] for the rows < n of one chunk, columns [v0, v0 + kOutTileV).
template <class T, int KP, int ST = kStateTerms, int OT = kOutputTerms>
__global__ void __launch_bounds__(kThreads, KP <= 128 ? 2 : 1) chunk_output(const Params<T> p) {
  using L = OutputLayout<T, KP, OT>;
  using R = Record<T, KP, ST, OT>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const q_words = reinterpret_cast<float*>(smem_vec);
  const auto q_op = operand_at<T, kInputTerms<T>, KP>(q_words, kChunk);
  const auto s_op = operand_at<T, OT, KP>(q_words + L::kQ, kOutTileV);
  const auto p_op = operand_at<T, OT, kChunk>(q_words + L::kQ + L::kS, kChunk);
  const auto vn_op = operand_at<T, OT, kChunk>(q_words + L::kQ + L::kS + L::kP, kOutTileV);
  float* const gamma_s = q_words + L::kQ + L::kS + L::kP + L::kVn;

  const int tile = static_cast<int>(blockIdx.x % p.out_tiles);
  const std::int64_t slot = blockIdx.x / p.out_tiles % p.slots;
  const int h = static_cast<int>(blockIdx.x / p.out_tiles / p.slots);
  std::int64_t b, t0;
  int n;
  if (!chunk_of_slot(p, slot, b, t0, n)) return;
  const int K = p.K, V = p.V, v0 = tile * kOutTileV;
  float* const record = record_of<T, KP, ST, OT>(p, h, slot);

  const TokenRows<const T> q = rows_of(p.q, b, h / p.group);
  fill(q_op, kChunk, [&](int i, int d) { return i < n && d < K ? to_float(q(t0 + i, d)) : 0.f; });
  copy_rows(s_op, operand_at<T, OT, KP>(state_of<T, KP, OT>(p, h, slot), V), v0, V);
  copy_rows(p_op, operand_at<T, OT, kChunk>(R::p(record, V), kChunk), 0, kChunk);
  copy_rows(vn_op, operand_at<T, OT, kChunk>(R::vn(record, V), V), v0, V);
  if (threadIdx.x < kChunk) gamma_s[threadIdx.x] = R::gamma(record, V)[threadIdx.x];
  __syncthreads();

  const TokenRows<T> o = rows_of(p.o, b, h);
  for_each_strip<kChunk, kOutTileV, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, KP>(acc, q_op, s_op, m0, n0);
    const int g = threadIdx.x % 32 / 4;
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[j][r] *= gamma_s[m0 + g + 8 * (r / 2)];
    warp_product<T, kChunk>(acc, p_op, vn_op, m0, n0);
    for_each_element(acc, m0, n0, [&](int i, int col, float y) {
      if (i < n && v0 + col < V) o(t0 + i, v0 + col) = from_float<T>(p.scale * y);
    });
  });
}

// ---- Host side shared with the chunked backward (delta_rule_chunked_backward.cu) -------------------
// The workspace of the records and states: varlen's first_slot [N+1] int64 (padded to 64 floats), then
// H · slots records, then H · slots states.
template <class T, int KP>
std::int64_t states_header_floats(const Params<T>& p) {
  return p.cu_seqlens != nullptr ? (2 * (p.sequences + 1) + kChunk - 1) / kChunk * kChunk : 0;
}
template <class T, int KP, int ST = kStateTerms, int OT = kOutputTerms>
std::int64_t states_workspace_floats(const Params<T>& p) {
  const std::int64_t records = p.H * p.slots;
  return states_header_floats<T, KP>(p) + records * (Record<T, KP, ST, OT>::words(p.V) + state_words<T, KP, OT>(p.V));
}
// Points p's workspace, states and (varlen) first_slot into `workspace` (nullptr when it is empty).
template <class T, int KP, int ST = kStateTerms, int OT = kOutputTerms>
void place_states_workspace(Params<T>& p, float* workspace) {
  if (workspace == nullptr) return;
  p.workspace = workspace + states_header_floats<T, KP>(p);
  p.states = p.workspace + p.H * p.slots * Record<T, KP, ST, OT>::words(p.V);
  if (p.cu_seqlens != nullptr) p.first_slot = reinterpret_cast<std::int64_t*>(workspace);
}
// Enqueues chunk_map (varlen), chunk_prepare and the state pass on p's placed workspace: every record,
// every S_c and the final state (when p.final_state is set). Defined in delta_rule_chunked.cu, and
// instantiated there for the other units (the chunked backward) with the fp32 grade's terms, T ∈ {bf16,
// fp16, fp32}, KP ∈ {64, 128, 256} and both steps.
template <class T, int KP, Step STEP, int ST = kStateTerms, int OT = kOutputTerms>
Status enqueue_states(const Params<T>& p, cudaStream_t stream, const std::string& name);

}  // namespace larc::gpu::detail::delta_rule_chunked
