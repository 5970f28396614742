// The chunked forward of GDN and KLA (issue 8; docs/gpu-kernels.md "Chunked delta rule (issue 8)"):
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
// keeps S_c in shared memory, replaces U by V_new in the workspace, writes S_c (the state entering chunk
// c) to a second workspace and the final state; chunk_output (one block per (head, chunk slot, tile of
// kOutTileV value columns), every chunk at once) forms o. state_pass stages chunk c + 1's W, K̃ and U by
// cp.async while it computes chunk c (two stages where shared memory allows: KP ≤ 128). A sequence is
// a batch entry, or with varlen (FLA's cu_seqlens, B = 1) a span of the packed tokens whose chunks start
// at its own first token; chunk_map (varlen only) gives each sequence its first slot. β of KLA (SPEC §3)
// is computed in chunk_prepare from k exactly as kla-fused-recurrent does (same fp32 tree, same
// division), so both kernels see bitwise the same β.
//
// Arithmetic. fp32 state and accumulation everywhere. bf16/fp16 inputs: every chunk-local product
// runs on tensor cores (mma.sync m16n8k16, bf16 operands, fp32 accumulate). An operand that is an
// input (q, k, v) enters exactly: bf16 as one bf16 term, fp16 (11 significant bits) as two. An fp32
// intermediate enters as bf16 terms x = hi + mid + lo (each the bf16 rounding of what is left: 24
// significant bits, all of fp32's) on the state's path (T, W, K̃, U, V_new, S: the final state is fp32
// and is judged as such), and as hi + lo (16 bits) in chunk_output, whose o is rounded to the 8 or 11
// bits of the input dtype. A product takes the term pairs (i, j) with i + j ≤ 2 (the rest is below
// 2^-24 relative): 6 MMAs for two 3-term operands, 3 for hi + lo by hi + lo or an input by 3 terms.
// fp32 inputs: the same products by FP32 FMA in the same fragment layout — never TF32 (FLA's chunk
// kernel on fp32 inputs returns TF32-grade results, up to 0.9 % off at one timestep,
// ../shared/anchors/README.md).
//
// Shared memory holds every staged operand as fp32 with row pitches ≡ 4 (mod 8) floats, so the reads
// of a fragment's k-pairs (rows 2t, 2t + 1 of column g, lane = 4g + t) fall in 32 distinct banks.
#pragma once

#include <cstdint>
#include <type_traits>

#include "delta_rule_fused.cuh"  // delta_rule::TokenRows, rows_of
#include "kernel_common.cuh"

namespace larc::gpu::detail::delta_rule_chunked {

using delta_rule::rows_of;
using delta_rule::TokenRows;

constexpr int kChunk = 64;
constexpr int kWarps = 8;
constexpr int kThreads = 32 * kWarps;
constexpr int kTileV = 16;      // value columns per state_pass block (16 or 32)
// 8-column tiles per warp strip in state_pass, chosen so that every product has 8 strips (one a warp)
// at KP = 128 (16 at KP = 256): 64 × kTileV outputs (V_new) in strips of 16 × kTileV/2, KP × kTileV (S) in
// strips of 16 × kTileV.
constexpr int kRowStripTiles = kTileV / 16;
constexpr int kStateStripTiles = kTileV / 8;
constexpr int kPrepTileV = 64;  // value columns per U pass of chunk_prepare
constexpr int kOutTileV = 64;   // value columns per chunk_output block
constexpr int kStateTerms = 3;  // bf16 terms of an fp32 intermediate on the state's path (24 bits)
constexpr int kOutputTerms = 2;  // ... in chunk_output (16 bits; o is rounded to the input dtype)

enum class Step { beta, kaczmarz };  // GDN: β is an input; KLA: β = η / (‖k‖² + ε)

// bf16 terms of an input operand (q, k, v): bf16 is exact in one, fp16 (11 significant bits) in two.
template <class T>
constexpr int kInputTerms = std::is_same_v<T, __nv_bfloat16> ? 1 : 2;

template <class T>
struct Params {
  Strided<const T> q, k, v, gate, step;  // gate: g; step: beta (GDN) or eta (KLA)
  Strided<T> o;
  Strided<const float> initial_state;  // optional (data == nullptr when absent)
  Strided<float> final_state;          // optional
  float* workspace = nullptr;          // Records, [H][slots]
  float* states = nullptr;             // S_c entering each chunk, [H][slots][KP][V]
  const void* cu_seqlens = nullptr;    // varlen: [N+1] int32 or int64; B = 1
  bool cu_seqlens_int64 = false;
  const std::int64_t* first_slot = nullptr;  // varlen: sequence n's records from slot first_slot[n] ([N+1], chunk_map)
  std::int64_t tokens = 0;  // T: tokens per batch entry (varlen: all packed tokens)
  std::int64_t chunks = 0;  // ceil(T / kChunk): chunks per batch entry (not varlen)
  std::int64_t sequences = 0;  // B, or N (varlen)
  std::int64_t slots = 0;  // records per head: B · chunks, or ceil(T / kChunk) + N (varlen; an upper bound)
  int H = 0, K = 0, V = 0;
  int v_tiles = 0;  // ceil(V / kTileV)
  int out_tiles = 0;  // ceil(V / kOutTileV)
  float scale = 1, eps = 0;
};

// One chunk's record in the workspace (floats; every part starts at a multiple of 64 floats):
// W [64][KP], K̃ = Diag(Γ_{n−1,·}) K [64][KP], U (V_new once state_pass has passed) [64][V], P [64][64], γ [64].
template <int KP>
struct Record {
  static __host__ __device__ std::int64_t floats(int V) { return std::int64_t{kChunk} * (2 * KP + V + kChunk + 1); }
  static __device__ float* w(float* r) { return r; }
  static __device__ float* decayed_key(float* r) { return r + kChunk * KP; }
  static __device__ float* u(float* r) { return r + 2 * kChunk * KP; }
  static __device__ float* p(float* r, int V) { return u(r) + std::int64_t{kChunk} * V; }
  static __device__ float* gamma(float* r, int V) { return p(r, V) + kChunk * kChunk; }
};

template <class T>
__device__ __forceinline__ float* record_of(const Params<T>& p, int h, std::int64_t slot, std::int64_t record_floats) {
  return p.workspace + (h * p.slots + slot) * record_floats;
}

// S_c of (head, slot): [KP][V] floats.
template <class T, int KP>
__device__ __forceinline__ float* state_of(const Params<T>& p, int h, std::int64_t slot) {
  return p.states + (h * p.slots + slot) * std::int64_t{KP} * p.V;
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

__global__ void __launch_bounds__(kMapThreads) chunk_map(const SequenceMap m) {
  __shared__ std::int64_t total[kMapThreads];
  const auto chunks_of = [&](std::int64_t n) -> std::int64_t {
    const std::int64_t bos = offset_at(m.cu_seqlens, m.int64, n), eos = offset_at(m.cu_seqlens, m.int64, n + 1);
    return 0 <= bos && bos <= eos && eos <= m.tokens ? chunks_in(eos - bos) : 0;
  };
  const int i = threadIdx.x;
  const std::int64_t per = (m.sequences + kMapThreads - 1) / kMapThreads;
  const std::int64_t first = i * per, last = first + per < m.sequences ? first + per : m.sequences;
  std::int64_t sum = 0;
  for (std::int64_t n = first; n < last; ++n) sum += chunks_of(n);
  total[i] = sum;
  __syncthreads();
  for (int d = 1; d < kMapThreads; d *= 2) {  // inclusive scan of the run totals
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
  if (i == kMapThreads - 1) m.first_slot[m.sequences] = total[i];
}

// ---- Warp-level products in the m16n8k16 fragment layout ------------------------------------------
// A warp computes a 16 × 8·NT strip C[m0.., n0..] += A[m0.., 0..KD) · B[0..KD, n0..]; a(row, k) and
// b(k, col) return fp32 operands. Lane (g = lane / 4, t = lane % 4) holds acc[j][r] at row
// m0 + g + 8·(r / 2), column n0 + 8j + 2t + r % 2 — the mma.sync accumulator layout, used by the
// FMA path too so that the surrounding code is the same for every dtype.

__device__ __forceinline__ std::uint32_t bits_of(__nv_bfloat162 x) { return *reinterpret_cast<std::uint32_t*>(&x); }

// (first, second) as N bf16 pairs, first in the low half: term n is the bf16 rounding of what terms
// 0..n−1 left (exact in fp32), so N = 3 carries all 24 bits of an fp32 value.
template <int N>
__device__ __forceinline__ void split_pair(float first, float second, std::uint32_t (&terms)[N]) {
#pragma unroll
  for (int n = 0; n < N; ++n) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(first, second);
    const float2 hf = __bfloat1622float2(h);
    terms[n] = bits_of(h);
    first -= hf.x;
    second -= hf.y;
  }
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], std::uint32_t a0, std::uint32_t a1, std::uint32_t a2,
                                         std::uint32_t a3, std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Tensor cores: TA, TB bf16 terms of A and B (1 to 3); the term pairs (i, j) with i + j ≤ 2.
template <int TA, int TB, int KD, int NT, class FA, class FB>
__device__ __forceinline__ void warp_mma(float (&acc)[NT][4], FA a, FB b, int m0, int n0) {
  static_assert(KD % 16 == 0 && TA >= 1 && TA <= 3 && TB >= 1 && TB <= 3);
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r0 = m0 + g, r1 = r0 + 8;
#pragma unroll
  for (int k0 = 0; k0 < KD; k0 += 16) {
    const int c0 = k0 + 2 * t, c1 = c0 + 8;
    std::uint32_t fa[4][TA];  // A register order: (r0, c0), (r1, c0), (r0, c1), (r1, c1)
    split_pair(a(r0, c0), a(r0, c0 + 1), fa[0]);
    split_pair(a(r1, c0), a(r1, c0 + 1), fa[1]);
    split_pair(a(r0, c1), a(r0, c1 + 1), fa[2]);
    split_pair(a(r1, c1), a(r1, c1 + 1), fa[3]);
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int n = n0 + 8 * j + g;
      std::uint32_t fb[2][TB];  // B register order: k = c0, c0 + 1; k = c1, c1 + 1 (column n)
      split_pair(b(c0, n), b(c0 + 1, n), fb[0]);
      split_pair(b(c1, n), b(c1 + 1, n), fb[1]);
#pragma unroll
      for (int ta = 0; ta < TA; ++ta)
#pragma unroll
        for (int tb = 0; tb < TB; ++tb)
          if (ta + tb <= 2) mma_bf16(acc[j], fa[0][ta], fa[1][ta], fa[2][ta], fa[3][ta], fb[0][tb], fb[1][tb]);
    }
  }
}

// FP32 FMA (fp32 inputs), k in order.
template <int KD, int NT, class FA, class FB>
__device__ __forceinline__ void warp_fma(float (&acc)[NT][4], FA a, FB b, int m0, int n0) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll 4
  for (int k = 0; k < KD; ++k) {
    const float a0 = a(m0 + g, k), a1 = a(m0 + g + 8, k);
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int n = n0 + 8 * j + 2 * t;
      const float b0 = b(k, n), b1 = b(k, n + 1);
      acc[j][0] = fmaf(a0, b0, acc[j][0]);
      acc[j][1] = fmaf(a0, b1, acc[j][1]);
      acc[j][2] = fmaf(a1, b0, acc[j][2]);
      acc[j][3] = fmaf(a1, b1, acc[j][3]);
    }
  }
}

template <class T, int TA, int TB, int KD, int NT, class FA, class FB>
__device__ __forceinline__ void warp_product(float (&acc)[NT][4], FA a, FB b, int m0, int n0) {
  if constexpr (std::is_same_v<T, float>)
    warp_fma<KD, NT>(acc, a, b, m0, n0);
  else
    warp_mma<TA, TB, KD, NT>(acc, a, b, m0, n0);
}

// The 16 × 8·NT strips of an M × N output, dealt to the block's warps round-robin: f(m0, n0).
template <int M, int N, int NT, class F>
__device__ __forceinline__ void for_each_strip(F f) {
  static_assert(M % 16 == 0 && N % (8 * NT) == 0);
  constexpr int m_tiles = M / 16, strips = m_tiles * (N / (8 * NT));
  for (int s = threadIdx.x / 32; s < strips; s += kWarps) f(s % m_tiles * 16, s / m_tiles * 8 * NT);
}

// e(row, col, value) for this lane's elements of a strip.
template <int NT, class E>
__device__ __forceinline__ void for_each_element(const float (&acc)[NT][4], int m0, int n0, E e) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) e(m0 + g + 8 * (r / 2), n0 + 8 * j + 2 * t + r % 2, acc[j][r]);
}

template <int NT>
__device__ __forceinline__ void zero(float (&acc)[NT][4]) {
#pragma unroll
  for (int j = 0; j < NT; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[j][r] = 0.f;
}

// ‖k‖² by kla-fused-recurrent's tree (delta_rule_fused.cuh column_dot, any geometry): the KP rows (zero
// past K) cut into 8 runs of KP/8, each summed with four accumulators (row j into j % 4), the run sums
// combined ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)). KP is the fused kernel's KMAX for the
// same K (64, 128 or 256), so β = η / (‖k‖² + ε) is bitwise the fused kernel's.
template <int KP>
__device__ __forceinline__ float key_norm_squared(const float* k) {
  constexpr int run = KP / 8;
  float r[8];
#pragma unroll
  for (int s = 0; s < 8; ++s) {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < run; ++j) acc[j % 4] = fmaf(k[s * run + j], k[s * run + j], acc[j % 4]);
    r[s] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
  return ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
}

// Rows [t0, t0 + n) of a [T, D] token-row view into a [kChunk][pitch] fp32 tile, columns
// [d0, d0 + width); rows ≥ n and columns ≥ d_end as zeros.
template <class T, int WIDTH>
__device__ __forceinline__ void stage_rows(float* dst, int pitch, const TokenRows<const T>& src, std::int64_t t0,
                                           int n, int d0, int d_end) {
  for (int e = threadIdx.x; e < kChunk * WIDTH; e += kThreads) {
    const int i = e / WIDTH, d = d0 + e % WIDTH;
    dst[i * pitch + e % WIDTH] = i < n && d < d_end ? to_float(src(t0 + i, d)) : 0.f;
  }
}

// The chunk of a head's record slot: batch entry b, first token t0, length n. False for a varlen slot
// no sequence needs, or one of a sequence state_pass refuses (corrupt cu_seqlens whose overlapping
// sequences need more than `slots` records: that sequence gets a NaN final state and no output).
template <class T>
__device__ __forceinline__ bool chunk_of_slot(const Params<T>& p, std::int64_t slot, std::int64_t& b, std::int64_t& t0,
                                              int& n) {
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
  return true;
}

// Shared-memory floats of chunk_prepare: G' (fp64) and the reset index take 3·64 floats, then
// k, q [64][KP+4], Γ and A/T [64][68], β, γ, g and Γ_{n−1,·} [64].
template <int KP>
constexpr int prepare_smem_floats() {
  return 3 * kChunk + 2 * kChunk * (KP + 4) + 2 * kChunk * (kChunk + 4) + 4 * kChunk;
}

template <class T, int KP, Step STEP>
__global__ void __launch_bounds__(kThreads, KP <= 128 ? 2 : 1) chunk_prepare(const Params<T> p) {
  constexpr int kp = KP + 4, cp = kChunk + 4;
  extern __shared__ float4 smem_vec[];
  double* const log_decay = reinterpret_cast<double*>(smem_vec);     // G'_i: Σ g_r since the last −∞
  int* const reset = reinterpret_cast<int*>(log_decay + kChunk);     // last r ≤ i with g_r = −∞ (−1: none)
  float* const k_s = reinterpret_cast<float*>(reset + kChunk);       // [64][kp]
  float* const q_s = k_s + kChunk * kp;                              // [64][kp]; later V tiles [64][cp]
  float* const ratio_s = q_s + kChunk * kp;                          // Γ [64][cp], zero above the diagonal
  float* const t_s = ratio_s + kChunk * cp;                          // A, then T Diag(β) [64][cp]
  float* const beta_s = t_s + kChunk * cp;                           // β (0 past n)
  float* const gamma_s = beta_s + kChunk;                            // γ (0 past n)
  float* const gate_s = gamma_s + kChunk;                            // g (0 past n)
  float* const to_end_s = gate_s + kChunk;                           // Γ_{n−1,·} (0 past n)

  const std::int64_t slot = blockIdx.x % p.slots;
  const int h = static_cast<int>(blockIdx.x / p.slots);
  std::int64_t b, t0;
  int n;
  if (!chunk_of_slot(p, slot, b, t0, n)) return;
  const int K = p.K, V = p.V;
  const TokenRows<const T> q = rows_of(p.q, b, h), k = rows_of(p.k, b, h), v = rows_of(p.v, b, h);
  const TokenRows<const T> gate = rows_of(p.gate, b, h), step = rows_of(p.step, b, h);
  float* const record = record_of(p, h, slot, Record<KP>::floats(V));

  stage_rows<T, KP>(k_s, kp, k, t0, n, 0, K);
  stage_rows<T, KP>(q_s, kp, q, t0, n, 0, K);
  if (const int i = threadIdx.x; i < kChunk) gate_s[i] = i < n ? to_float(gate(t0 + i)) : 0.f;
  __syncthreads();

  // β per token (threads 0..63); the log-decays' prefix sums in fp64 (thread 64).
  if (threadIdx.x < kChunk) {
    const int i = threadIdx.x;
    float beta = 0.f;
    if (i < n) {
      beta = to_float(step(t0 + i));
      if constexpr (STEP == Step::kaczmarz) beta = beta / (key_norm_squared<KP>(k_s + i * kp) + p.eps);
    }
    beta_s[i] = beta;
  } else if (threadIdx.x == kChunk) {
    double sum = 0;
    int last = -1;
    for (int i = 0; i < kChunk; ++i) {
      if (i < n) {
        const float g = gate_s[i];
        if (isinf(g) && g < 0.f) {  // α = 0: nothing before token i survives it
          last = i;
          sum = 0;
        } else {
          sum += g;
        }
      }
      log_decay[i] = sum;
      reset[i] = last;
    }
  }
  __syncthreads();

  // Γ_ij = Π_{r=j+1..i} α_r for j ≤ i < n: e^{G'_i − G'_j} when no α_r = 0 lies in (j, i], else 0.
  // Each rounded once from the fp64 difference (exp_rounded_once), never as a ratio of e^{G}.
  const auto ratio = [&](int i, int j) {
    return j <= i && i < n && reset[i] <= j ? exp_rounded_once(static_cast<float>(log_decay[i] - log_decay[j])) : 0.f;
  };
  for (int e = threadIdx.x; e < kChunk * kChunk; e += kThreads) ratio_s[e / kChunk * cp + e % kChunk] = ratio(e / kChunk, e % kChunk);
  if (threadIdx.x < kChunk) {
    const int i = threadIdx.x;
    const float gamma = i < n && reset[i] < 0 ? exp_rounded_once(static_cast<float>(log_decay[i])) : 0.f;
    gamma_s[i] = gamma;
    Record<KP>::gamma(record, V)[i] = gamma;
    to_end_s[i] = ratio(n - 1, i);
  }
  __syncthreads();

  // K̃ = Diag(Γ_{n−1,·}) K, all KP columns (zero past K and n).
  {
    float* const kd_out = Record<KP>::decayed_key(record);
    for (int e = threadIdx.x; e < kChunk * KP; e += kThreads) kd_out[e] = to_end_s[e / KP] * k_s[e / KP * kp + e % KP];
  }

  // A = StrictLower(Diag(β) K K^T ⊙ Γ) into t_s; P = (Q K^T) ⊙ Γ (lower, diagonal included) to the record.
  constexpr int in = kInputTerms<T>;
  {
    const auto k_row = [&](int i, int d) { return k_s[i * kp + d]; };
    const auto q_row = [&](int i, int d) { return q_s[i * kp + d]; };
    const auto k_col = [&](int d, int j) { return k_s[j * kp + d]; };
    float* const p_out = Record<KP>::p(record, V);
    for_each_strip<kChunk, kChunk, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, in, in, KP>(acc, k_row, k_col, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int j, float x) {
        t_s[i * cp + j] = j < i ? beta_s[i] * x * ratio_s[i * cp + j] : 0.f;
      });
      zero(acc);
      warp_product<T, in, in, KP>(acc, q_row, k_col, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int j, float x) { p_out[i * kChunk + j] = x * ratio_s[i * cp + j]; });
    });
  }
  __syncthreads();

  // T = (I + A)^{-1} by forward substitution, one column per thread (column c of T solves
  // (I + A) x = e_c, rows in order), then T Diag(β) in place of A. Row i's Σ_{j<i} A_ij x_j is summed
  // in four partial sums (j mod 4, each j ascending) combined pairwise, so the dependent chain is one
  // FMA and two adds per row instead of i FMAs (the reference's unit_lower_solve sums j in order).
  float x[kChunk];
  if (threadIdx.x < kChunk) {
    const int col = threadIdx.x;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      float s[4] = {i == col ? 1.f : 0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int j = 0; j < i; ++j) s[j % 4] = fmaf(-t_s[i * cp + j], x[j], s[j % 4]);
      x[i] = (s[0] + s[1]) + (s[2] + s[3]);
    }
  }
  __syncthreads();
  if (threadIdx.x < kChunk) {
    const int col = threadIdx.x;
    const float beta = beta_s[col];
#pragma unroll
    for (int i = 0; i < kChunk; ++i) t_s[i * cp + col] = x[i] * beta;
  }
  __syncthreads();

  // W = (T Diag(β) Diag(γ)) K: all KP columns (zero past K).
  {
    float* const w_out = Record<KP>::w(record);
    const auto decayed_t = [&](int i, int j) { return t_s[i * cp + j] * gamma_s[j]; };
    const auto k_row = [&](int j, int d) { return k_s[j * kp + d]; };
    for_each_strip<kChunk, KP, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, kStateTerms, in, kChunk>(acc, decayed_t, k_row, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int d, float y) { w_out[i * KP + d] = y; });
    });
  }
  // U = T Diag(β) V, kPrepTileV columns at a time through q_s.
  const auto t_row = [&](int i, int j) { return t_s[i * cp + j]; };
  float* const u_out = Record<KP>::u(record);
  for (int v0 = 0; v0 < V; v0 += kPrepTileV) {
    __syncthreads();  // q_s is free (P, or the previous tile, is done)
    stage_rows<T, kPrepTileV>(q_s, cp, v, t0, n, v0, V);
    __syncthreads();
    const auto v_row = [&](int j, int col) { return q_s[j * cp + col]; };
    for_each_strip<kChunk, kPrepTileV, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, kStateTerms, in, kChunk>(acc, t_row, v_row, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int col, float y) {
        if (v0 + col < V) u_out[std::int64_t{i} * V + v0 + col] = y;
      });
    });
  }
}

// ---- state_pass ------------------------------------------------------------------------------------
__device__ __forceinline__ void copy_async16(float* dst, const float* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(static_cast<unsigned>(__cvta_generic_to_shared(dst))),
               "l"(src)
               : "memory");
}
__device__ __forceinline__ void commit_async() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait_async() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Stages of state_pass's operand buffers: chunk c + 1 is staged while chunk c is computed where two fit.
template <int KP>
constexpr int kPassStages = KP <= 128 ? 2 : 1;

// A stage: W, K̃ [64][KP+4], U [64][kTileV+4], γ [64].
template <int KP>
constexpr int kPassStageFloats = 2 * kChunk * (KP + 4) + kChunk * (kTileV + 4) + kChunk;

// Shared-memory floats of state_pass: the stages, then S_c [KP][kTileV+4] (157 KB at KP = 128 and at 256).
template <int KP>
constexpr int state_pass_smem_floats() {
  return kPassStages<KP> * kPassStageFloats<KP> + KP * (kTileV + 4);
}

template <class T, int KP>
__global__ void __launch_bounds__(kThreads, 1) state_pass(const Params<T> p) {
  constexpr int kp = KP + 4, sp = kTileV + 4;
  extern __shared__ float4 smem_vec[];
  float* const smem = reinterpret_cast<float*>(smem_vec);
  float* const s_s = smem + kPassStages<KP> * kPassStageFloats<KP>;  // S_c [KP][sp], this block's columns
  const auto w_of = [&](int buf) { return smem + buf * kPassStageFloats<KP>; };
  const auto kd_of = [&](int buf) { return w_of(buf) + kChunk * kp; };
  const auto u_of = [&](int buf) { return kd_of(buf) + kChunk * kp; };
  const auto gamma_of = [&](int buf) { return u_of(buf) + kChunk * sp; };

  const std::int64_t block = blockIdx.x;
  const int tile = static_cast<int>(block % p.v_tiles);
  const int h = static_cast<int>(block / p.v_tiles % p.H);
  const std::int64_t sequence = block / p.v_tiles / p.H;  // states [sequence, h]
  const int K = p.K, V = p.V, col0 = tile * kTileV;
  std::int64_t b, bos, eos;
  const bool valid = sequence_of(p, sequence, b, bos, eos);
  const std::int64_t chunks = valid ? chunks_in(eos - bos) : 0;
  const std::int64_t first_slot = p.cu_seqlens == nullptr ? sequence * p.chunks : p.first_slot[sequence];
  // A corrupt cu_seqlens (bounds outside [0, T], or overlapping sequences past the slots): NaN in the
  // final state, nothing else written for this sequence.
  if (!valid || first_slot + chunks > p.slots) {
    if (p.final_state.data != nullptr)
      for (int e = threadIdx.x; e < KP * kTileV; e += kThreads) {
        const int r = e / kTileV, col = col0 + e % kTileV;
        if (r < K && col < V) *p.final_state.at(sequence, h, r, col) = __int_as_float(0x7fc00000);
      }
    return;
  }
  const std::int64_t record_floats = Record<KP>::floats(V);

  for (int e = threadIdx.x; e < KP * kTileV; e += kThreads) {
    const int r = e / kTileV, col = col0 + e % kTileV;
    s_s[r * sp + e % kTileV] = p.initial_state.data != nullptr && r < K && col < V
                                   ? *p.initial_state.at(sequence, h, r, col)
                                   : 0.f;
  }

  // Chunk c's W, K̃, U columns and γ into stage buffer `buf` by cp.async (U by plain loads when V is not a
  // multiple of 4: its rows are then not 16-byte aligned).
  const auto stage = [&](std::int64_t c, int buf) {
    float* const record = record_of(p, h, first_slot + c, record_floats);
    const float* const w_in = Record<KP>::w(record);
    const float* const kd_in = Record<KP>::decayed_key(record);
    for (int e = threadIdx.x; e < kChunk * KP / 4; e += kThreads) {
      const int i = e / (KP / 4), d = e % (KP / 4) * 4;
      copy_async16(w_of(buf) + i * kp + d, w_in + i * KP + d);
      copy_async16(kd_of(buf) + i * kp + d, kd_in + i * KP + d);
    }
    const float* const u_in = Record<KP>::u(record);
    float* const u_s = u_of(buf);
    if (V % 4 == 0) {
      for (int e = threadIdx.x; e < kChunk * kTileV / 4; e += kThreads) {
        const int i = e / (kTileV / 4), c4 = e % (kTileV / 4) * 4;
        if (col0 + c4 < V)
          copy_async16(u_s + i * sp + c4, u_in + std::int64_t{i} * V + col0 + c4);
        else
          *reinterpret_cast<float4*>(u_s + i * sp + c4) = make_float4(0.f, 0.f, 0.f, 0.f);
      }
    } else {
      for (int e = threadIdx.x; e < kChunk * kTileV; e += kThreads) {
        const int i = e / kTileV, col = col0 + e % kTileV;
        u_s[i * sp + e % kTileV] = col < V ? u_in[std::int64_t{i} * V + col] : 0.f;
      }
    }
    if (threadIdx.x < kChunk / 4) copy_async16(gamma_of(buf) + 4 * threadIdx.x, Record<KP>::gamma(record, V) + 4 * threadIdx.x);
  };

  const auto s_at = [&](int r, int col) { return s_s[r * sp + col]; };
  if constexpr (kPassStages<KP> == 2) {
    if (chunks > 0) stage(0, 0);
    commit_async();
  }
  for (std::int64_t c = 0; c < chunks; ++c) {
    const int buf = kPassStages<KP> == 2 ? static_cast<int>(c & 1) : 0;
    const int n = static_cast<int>(eos - (bos + c * kChunk) < kChunk ? eos - (bos + c * kChunk) : kChunk);
    float* const record = record_of(p, h, first_slot + c, record_floats);
    __syncthreads();  // the buffer about to be refilled (chunk c − 1's) is read no more
    if constexpr (kPassStages<KP> == 2) {
      if (c + 1 < chunks) stage(c + 1, buf ^ 1);
      commit_async();
      wait_async<1>();  // chunk c's group is complete
    } else {
      stage(c, 0);
      commit_async();
      wait_async<0>();
    }
    __syncthreads();  // chunk c's operands are visible to the block
    const float* const w_s = w_of(buf);
    const float* const kd_s = kd_of(buf);
    float* const u_s = u_of(buf);

    // S_c to the states workspace (chunk_output's), rows < K.
    float* const s_out = state_of<T, KP>(p, h, first_slot + c);
    for (int e = threadIdx.x; e < K * kTileV; e += kThreads) {
      const int r = e / kTileV, col = col0 + e % kTileV;
      if (col < V) s_out[std::int64_t{r} * V + col] = s_s[r * sp + e % kTileV];
    }
    // V_new = U − W S_c, in place of U, in shared memory and in the record.
    float* const vn_out = Record<KP>::u(record);
    for_each_strip<kChunk, kTileV, kRowStripTiles>([&](int m0, int n0) {
      float acc[kRowStripTiles][4];
      zero(acc);
      warp_product<T, kStateTerms, kStateTerms, KP>(acc, [&](int i, int d) { return w_s[i * kp + d]; }, s_at, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int col, float y) {
        const float vn = u_s[i * sp + col] - y;
        u_s[i * sp + col] = vn;
        if (col0 + col < V) vn_out[std::int64_t{i} * V + col0 + col] = vn;
      });
    });
    __syncthreads();  // every read of S_c and write of V_new is done

    // S_{c+1} = γ_{n−1} S_c + K̃^T V_new.
    const float decay_last = gamma_of(buf)[n - 1];
    for_each_strip<KP, kTileV, kStateStripTiles>([&](int m0, int n0) {
      float acc[kStateStripTiles][4];
      zero(acc);
      warp_product<T, kStateTerms, kStateTerms, kChunk>(acc, [&](int r, int i) { return kd_s[i * kp + r]; },
                                                       [&](int i, int col) { return u_s[i * sp + col]; }, m0, n0);
      for_each_element(acc, m0, n0, [&](int r, int col, float y) { s_s[r * sp + col] = decay_last * s_s[r * sp + col] + y; });
    });
  }
  __syncthreads();

  if (p.final_state.data != nullptr)
    for (int e = threadIdx.x; e < KP * kTileV; e += kThreads) {
      const int r = e / kTileV, col = col0 + e % kTileV;
      if (r < K && col < V) *p.final_state.at(sequence, h, r, col) = s_s[r * sp + e % kTileV];
    }
}

// ---- chunk_output ----------------------------------------------------------------------------------
// Shared-memory floats of chunk_output: Q [64][KP+4], S_c [KP][kOutTileV+4], P [64][68],
// V_new [64][kOutTileV+4], γ [64] (103 KB at KP = 128, 171 KB at 256).
template <int KP>
constexpr int output_smem_floats() {
  return kChunk * (KP + 4) + KP * (kOutTileV + 4) + kChunk * (kChunk + 4) + kChunk * (kOutTileV + 4) + kChunk;
}

// o = scale [Diag(γ) Q S_c + P V_new] for the rows < n of one chunk, columns [v0, v0 + kOutTileV).
template <class T, int KP>
__global__ void __launch_bounds__(kThreads, KP <= 128 ? 2 : 1) chunk_output(const Params<T> p) {
  constexpr int kp = KP + 4, op = kOutTileV + 4, cp = kChunk + 4;
  extern __shared__ float4 smem_vec[];
  float* const q_s = reinterpret_cast<float*>(smem_vec);  // [64][kp]
  float* const s_s = q_s + kChunk * kp;                   // [KP][op]
  float* const p_s = s_s + KP * op;                       // [64][cp]
  float* const vn_s = p_s + kChunk * cp;                  // [64][op]
  float* const gamma_s = vn_s + kChunk * op;              // [64]

  const int tile = static_cast<int>(blockIdx.x % p.out_tiles);
  const std::int64_t slot = blockIdx.x / p.out_tiles % p.slots;
  const int h = static_cast<int>(blockIdx.x / p.out_tiles / p.slots);
  std::int64_t b, t0;
  int n;
  if (!chunk_of_slot(p, slot, b, t0, n)) return;
  const int K = p.K, V = p.V, v0 = tile * kOutTileV;
  float* const record = record_of(p, h, slot, Record<KP>::floats(V));
  const float* const s_in = state_of<T, KP>(p, h, slot);
  const float* const vn_in = Record<KP>::u(record);
  const float* const p_in = Record<KP>::p(record, V);

  stage_rows<T, KP>(q_s, kp, rows_of(p.q, b, h), t0, n, 0, K);
  for (int e = threadIdx.x; e < KP * kOutTileV; e += kThreads) {
    const int r = e / kOutTileV, col = v0 + e % kOutTileV;
    s_s[r * op + e % kOutTileV] = r < K && col < V ? s_in[std::int64_t{r} * V + col] : 0.f;
  }
  for (int e = threadIdx.x; e < kChunk * kOutTileV; e += kThreads) {
    const int i = e / kOutTileV, col = v0 + e % kOutTileV;
    vn_s[i * op + e % kOutTileV] = col < V ? vn_in[std::int64_t{i} * V + col] : 0.f;
  }
  for (int e = threadIdx.x; e < kChunk * kChunk / 4; e += kThreads)
    *reinterpret_cast<float4*>(p_s + e / (kChunk / 4) * cp + e % (kChunk / 4) * 4) =
        reinterpret_cast<const float4*>(p_in)[e];
  if (threadIdx.x < kChunk) gamma_s[threadIdx.x] = Record<KP>::gamma(record, V)[threadIdx.x];
  __syncthreads();

  const TokenRows<T> o = rows_of(p.o, b, h);
  for_each_strip<kChunk, kOutTileV, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, kInputTerms<T>, kOutputTerms, KP>(acc, [&](int i, int d) { return q_s[i * kp + d]; },
                                                      [&](int r, int col) { return s_s[r * op + col]; }, m0, n0);
    const int g = threadIdx.x % 32 / 4;
#pragma unroll
    for (int j = 0; j < 2; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[j][r] *= gamma_s[m0 + g + 8 * (r / 2)];
    warp_product<T, kOutputTerms, kOutputTerms, kChunk>(acc, [&](int i, int j) { return p_s[i * cp + j]; },
                                                        [&](int j, int col) { return vn_s[j * op + col]; }, m0, n0);
    for_each_element(acc, m0, n0, [&](int i, int col, float y) {
      if (i < n && v0 + col < V) o(t0 + i, v0 + col) = from_float<T>(p.scale * y);
    });
  });
}

}  // namespace larc::gpu::detail::delta_rule_chunked
