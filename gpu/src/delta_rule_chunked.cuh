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
// Two kernels: chunk_prepare (one block per (head, chunk slot), all chunks at once) writes W, U, P
// and the decays γ, Γ_{n−1,·} of every chunk into a workspace; state_pass (one block per (sequence,
// head, tile of kTileV value columns), chunks in order) keeps S_c in shared memory and writes o and
// the final state. A sequence is a batch entry, or with varlen (FLA's cu_seqlens, B = 1) a span of
// the packed tokens whose chunks start at its own first token; chunk_map (varlen only) gives each
// sequence its first slot. β of KLA (SPEC §3) is computed in chunk_prepare from k exactly as kla-fused-recurrent
// does (same fp32 tree, same division), so both kernels see bitwise the same β.
//
// Arithmetic. fp32 state and accumulation everywhere. bf16/fp16 inputs: every chunk-local product
// runs on tensor cores (mma.sync m16n8k16, bf16 operands, fp32 accumulate). An operand that is a
// bf16 input (q, k, v) enters as one bf16 term, exactly; every other operand (fp16 inputs, the fp32
// intermediates T, W, U, P, V_new, S and products with decays) enters as hi + lo, two bf16 terms
// (hi = bf16(x), lo = bf16(x − hi): 16 significant bits), and a product of two split operands takes
// three MMAs (hi·hi + hi·lo + lo·hi). fp32 inputs: the same products by FP32 FMA in the same fragment
// layout — never TF32 (FLA's chunk kernel on fp32 inputs returns TF32-grade results, up to 0.9 % off at
// one timestep, ../shared/anchors/README.md).
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
// at KP = 128 (16 at KP = 256): 64 × kTileV outputs (V_new, o) in strips of 16 × kTileV/2, KP × kTileV (S) in
// strips of 16 × kTileV.
constexpr int kRowStripTiles = kTileV / 16;
constexpr int kStateStripTiles = kTileV / 8;
constexpr int kPrepTileV = 64;  // value columns per U pass of chunk_prepare
constexpr int kSplitTerms = 2;  // bf16 terms of an operand that is not a bf16 input

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
  const void* cu_seqlens = nullptr;    // varlen: [N+1] int32 or int64; B = 1
  bool cu_seqlens_int64 = false;
  const std::int64_t* first_slot = nullptr;  // varlen: sequence n's records from slot first_slot[n] ([N+1], chunk_map)
  std::int64_t tokens = 0;  // T: tokens per batch entry (varlen: all packed tokens)
  std::int64_t chunks = 0;  // ceil(T / kChunk): chunks per batch entry (not varlen)
  std::int64_t sequences = 0;  // B, or N (varlen)
  std::int64_t slots = 0;  // records per head: B · chunks, or ceil(T / kChunk) + N (varlen; an upper bound)
  int H = 0, K = 0, V = 0;
  int v_tiles = 0;  // ceil(V / kTileV)
  float scale = 1, eps = 0;
};

// One chunk's record in the workspace (floats; every part starts at a multiple of 64 floats):
// W [64][KP], U [64][V], P [64][64], γ [64], Γ_{n−1,·} [64].
template <int KP>
struct Record {
  static __host__ __device__ std::int64_t floats(int V) { return std::int64_t{kChunk} * (KP + V + kChunk + 2); }
  static __device__ float* w(float* r) { return r; }
  static __device__ float* u(float* r) { return r + kChunk * KP; }
  static __device__ float* p(float* r, int V) { return u(r) + std::int64_t{kChunk} * V; }
  static __device__ float* gamma(float* r, int V) { return p(r, V) + kChunk * kChunk; }
  static __device__ float* to_end(float* r, int V) { return gamma(r, V) + kChunk; }
};

template <class T>
__device__ __forceinline__ float* record_of(const Params<T>& p, int h, std::int64_t slot, std::int64_t record_floats) {
  return p.workspace + (h * p.slots + slot) * record_floats;
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

// (first, second) as a bf16 pair, first in the low half: hi = bf16(x), lo = bf16(x − hi).
__device__ __forceinline__ void split_pair(float first, float second, std::uint32_t& hi, std::uint32_t& lo) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(first, second);
  const float2 hf = __bfloat1622float2(h);
  hi = bits_of(h);
  lo = bits_of(__floats2bfloat162_rn(first - hf.x, second - hf.y));
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// Tensor cores: TA, TB bf16 terms of A and B (1 or 2); two split operands take hi·hi + hi·lo + lo·hi.
template <int TA, int TB, int KD, int NT, class FA, class FB>
__device__ __forceinline__ void warp_mma(float (&acc)[NT][4], FA a, FB b, int m0, int n0) {
  static_assert(KD % 16 == 0 && (TA == 1 || TA == 2) && (TB == 1 || TB == 2));
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int r0 = m0 + g, r1 = r0 + 8;
#pragma unroll
  for (int k0 = 0; k0 < KD; k0 += 16) {
    const int c0 = k0 + 2 * t, c1 = c0 + 8;
    std::uint32_t ah[4], al[4];  // a register order: (r0, c0), (r1, c0), (r0, c1), (r1, c1)
    split_pair(a(r0, c0), a(r0, c0 + 1), ah[0], al[0]);
    split_pair(a(r1, c0), a(r1, c0 + 1), ah[1], al[1]);
    split_pair(a(r0, c1), a(r0, c1 + 1), ah[2], al[2]);
    split_pair(a(r1, c1), a(r1, c1 + 1), ah[3], al[3]);
#pragma unroll
    for (int j = 0; j < NT; ++j) {
      const int n = n0 + 8 * j + g;
      std::uint32_t bh[2], bl[2];  // b register order: k = c0, c0 + 1; k = c1, c1 + 1 (column n)
      split_pair(b(c0, n), b(c0 + 1, n), bh[0], bl[0]);
      split_pair(b(c1, n), b(c1 + 1, n), bh[1], bl[1]);
      mma_bf16(acc[j], ah, bh);
      if constexpr (TB == 2) mma_bf16(acc[j], ah, bl);
      if constexpr (TA == 2) mma_bf16(acc[j], al, bh);
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

// Shared-memory floats of chunk_prepare: G' (fp64) and the reset index take 3·64 floats, then
// k, q [64][KP+4], Γ and A/T [64][68], β, γ and g [64].
template <int KP>
constexpr int prepare_smem_floats() {
  return 3 * kChunk + 2 * kChunk * (KP + 4) + 2 * kChunk * (kChunk + 4) + 3 * kChunk;
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

  // Block → (head, slot) → (sequence, chunk c of it).
  const std::int64_t slot = blockIdx.x % p.slots;
  const int h = static_cast<int>(blockIdx.x / p.slots);
  std::int64_t sequence = slot / (p.chunks > 0 ? p.chunks : 1), c = slot - sequence * p.chunks;
  if (p.cu_seqlens != nullptr) {
    if (slot >= p.first_slot[p.sequences]) return;  // a slot no sequence needs
    std::int64_t lo = 0, hi = p.sequences;  // the last n with first_slot[n] ≤ slot: first_slot[lo] ≤ slot < first_slot[hi]
    while (hi - lo > 1) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      (p.first_slot[mid] <= slot ? lo : hi) = mid;
    }
    sequence = lo;
    c = slot - p.first_slot[lo];
  }
  std::int64_t b, bos, eos;
  sequence_of(p, sequence, b, bos, eos);  // valid: a sequence with invalid bounds has no slot
  const std::int64_t t0 = bos + c * kChunk;
  const int n = static_cast<int>(eos - t0 < kChunk ? eos - t0 : kChunk);
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
    Record<KP>::to_end(record, V)[i] = ratio(n - 1, i);
  }
  __syncthreads();

  // A = StrictLower(Diag(β) K K^T ⊙ Γ) into t_s; P = (Q K^T) ⊙ Γ (lower, diagonal included) to the record.
  {
    constexpr int in = kInputTerms<T>;
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

  const auto t_row = [&](int i, int j) { return t_s[i * cp + j]; };
  // W = T Diag(β) (Diag(γ) K): all KP columns (zero past K).
  {
    float* const w_out = Record<KP>::w(record);
    const auto decayed_key = [&](int j, int d) { return gamma_s[j] * k_s[j * kp + d]; };
    for_each_strip<kChunk, KP, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, kSplitTerms, kSplitTerms, kChunk>(acc, t_row, decayed_key, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int d, float y) { w_out[i * KP + d] = y; });
    });
  }
  // U = T Diag(β) V, kPrepTileV columns at a time through q_s.
  float* const u_out = Record<KP>::u(record);
  for (int v0 = 0; v0 < V; v0 += kPrepTileV) {
    __syncthreads();  // q_s is free (P, or the previous tile, is done)
    stage_rows<T, kPrepTileV>(q_s, cp, v, t0, n, v0, V);
    __syncthreads();
    const auto v_row = [&](int j, int col) { return q_s[j * cp + col]; };
    for_each_strip<kChunk, kPrepTileV, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, kSplitTerms, kInputTerms<T>, kChunk>(acc, t_row, v_row, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int col, float y) {
        if (v0 + col < V) u_out[std::int64_t{i} * V + v0 + col] = y;
      });
    });
  }
}

// P has its own buffer up to KP = 128; at KP = 256 (W, Q, K alone take 195 KB) it is staged into W's
// buffer once V_new is formed.
template <int KP>
constexpr bool kSeparateP = KP <= 128;

// Shared-memory floats of state_pass: W, Q, K [64][KP+4], S [KP][kTileV+4], U/V_new [64][kTileV+4],
// P [64][68] (KP ≤ 128), γ and Γ_{n−1,·} [64]; 220.5 KB at KP = 256.
template <int KP>
constexpr int state_pass_smem_floats() {
  return 3 * kChunk * (KP + 4) + KP * (kTileV + 4) + kChunk * (kTileV + 4) + (kSeparateP<KP> ? kChunk * (kChunk + 4) : 0) +
         2 * kChunk;
}

template <class T, int KP>
__global__ void __launch_bounds__(kThreads, 1) state_pass(const Params<T> p) {
  constexpr int kp = KP + 4, sp = kTileV + 4, cp = kChunk + 4;
  extern __shared__ float4 smem_vec[];
  float* const w_s = reinterpret_cast<float*>(smem_vec);  // [64][kp]
  float* const q_s = w_s + kChunk * kp;                   // [64][kp]
  float* const k_s = q_s + kChunk * kp;                   // [64][kp]
  float* const s_s = k_s + kChunk * kp;                   // S_c [KP][sp], this block's columns
  float* const vn_s = s_s + KP * sp;                      // U, then V_new [64][sp]
  float* const p_s = kSeparateP<KP> ? vn_s + kChunk * sp : w_s;                 // P [64][cp]
  float* const gamma_s = vn_s + kChunk * sp + (kSeparateP<KP> ? kChunk * cp : 0);  // γ
  float* const to_end_s = gamma_s + kChunk;               // Γ_{n−1,·}

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
  const TokenRows<const T> q = rows_of(p.q, b, h), k = rows_of(p.k, b, h);
  const TokenRows<T> o = rows_of(p.o, b, h);
  const std::int64_t record_floats = Record<KP>::floats(V);

  for (int e = threadIdx.x; e < KP * kTileV; e += kThreads) {
    const int r = e / kTileV, col = col0 + e % kTileV;
    s_s[r * sp + e % kTileV] = p.initial_state.data != nullptr && r < K && col < V
                                   ? *p.initial_state.at(sequence, h, r, col)
                                   : 0.f;
  }

  const auto stage_p = [&](float* record) {
    const float4* const p_in = reinterpret_cast<const float4*>(Record<KP>::p(record, V));
    for (int e = threadIdx.x; e < kChunk * kChunk / 4; e += kThreads)
      *reinterpret_cast<float4*>(p_s + e / (kChunk / 4) * cp + e % (kChunk / 4) * 4) = p_in[e];
  };
  constexpr int in = kInputTerms<T>;
  const auto s_at = [&](int r, int col) { return s_s[r * sp + col]; };
  const auto vn_at = [&](int i, int col) { return vn_s[i * sp + col]; };
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t t0 = bos + c * kChunk;
    const int n = static_cast<int>(eos - t0 < kChunk ? eos - t0 : kChunk);
    float* const record = record_of(p, h, first_slot + c, record_floats);
    __syncthreads();  // the previous chunk's readers of the staging buffers are done
    {
      const float4* const w_in = reinterpret_cast<const float4*>(Record<KP>::w(record));
      for (int e = threadIdx.x; e < kChunk * KP / 4; e += kThreads)
        *reinterpret_cast<float4*>(w_s + e / (KP / 4) * kp + e % (KP / 4) * 4) = w_in[e];
      if constexpr (kSeparateP<KP>) stage_p(record);
      const float* const u_in = Record<KP>::u(record);
      for (int e = threadIdx.x; e < kChunk * kTileV; e += kThreads) {
        const int i = e / kTileV, col = col0 + e % kTileV;
        vn_s[i * sp + e % kTileV] = col < V ? u_in[std::int64_t{i} * V + col] : 0.f;
      }
      if (threadIdx.x < kChunk) {
        gamma_s[threadIdx.x] = Record<KP>::gamma(record, V)[threadIdx.x];
        to_end_s[threadIdx.x] = Record<KP>::to_end(record, V)[threadIdx.x];
      }
      stage_rows<T, KP>(q_s, kp, q, t0, n, 0, K);
      stage_rows<T, KP>(k_s, kp, k, t0, n, 0, K);
    }
    __syncthreads();

    // V_new = U − W S_c, in place of U.
    for_each_strip<kChunk, kTileV, kRowStripTiles>([&](int m0, int n0) {
      float acc[kRowStripTiles][4];
      zero(acc);
      warp_product<T, kSplitTerms, kSplitTerms, KP>(acc, [&](int i, int d) { return w_s[i * kp + d]; }, s_at, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int col, float y) { vn_s[i * sp + col] = vn_s[i * sp + col] - y; });
    });
    __syncthreads();
    if constexpr (!kSeparateP<KP>) {  // W is read no more: P into its buffer
      stage_p(record);
      __syncthreads();
    }

    // o = scale [γ ⊙ (Q S_c) + P V_new], rows < n and columns < V.
    for_each_strip<kChunk, kTileV, kRowStripTiles>([&](int m0, int n0) {
      float acc[kRowStripTiles][4];
      zero(acc);
      warp_product<T, in, kSplitTerms, KP>(acc, [&](int i, int d) { return q_s[i * kp + d]; }, s_at, m0, n0);
      const int g = threadIdx.x % 32 / 4;
#pragma unroll
      for (int j = 0; j < kRowStripTiles; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) acc[j][r] *= gamma_s[m0 + g + 8 * (r / 2)];
      warp_product<T, kSplitTerms, kSplitTerms, kChunk>(acc, [&](int i, int j) { return p_s[i * cp + j]; }, vn_at, m0,
                                                        n0);
      for_each_element(acc, m0, n0, [&](int i, int col, float y) {
        if (i < n && col0 + col < V) o(t0 + i, col0 + col) = from_float<T>(p.scale * y);
      });
    });
    __syncthreads();  // every read of S_c is done

    // S_{c+1} = γ_{n−1} S_c + K^T (Γ_{n−1,·} ⊙ V_new).
    const float decay_last = gamma_s[n - 1];
    for_each_strip<KP, kTileV, kStateStripTiles>([&](int m0, int n0) {
      float acc[kStateStripTiles][4];
      zero(acc);
      warp_product<T, in, kSplitTerms, kChunk>(acc, [&](int r, int i) { return k_s[i * kp + r]; },
                                               [&](int i, int col) { return to_end_s[i] * vn_s[i * sp + col]; }, m0, n0);
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

}  // namespace larc::gpu::detail::delta_rule_chunked
