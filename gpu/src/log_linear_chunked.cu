// Chunked log-linear attention, Mamba-2 variant (SPEC §4 "Chunked"; docs/gpu-kernels/log-linear.md): "log-linear-chunked",
// mechanism "log-linear", the inputs and output of log-linear-fused-recurrent (q, k [B,T,1,K] shared by
// all heads, v [B,T,H,V], g [B,T,H], level_scales [B,T,H,L]; o [B,T,H,V]; no state in or out, no read
// scale), K ≤ 128, T ≤ 2^23.
//
// Chunks of C = 64 tokens start at multiples of 64, so for tokens t, s of chunks c, c' the level is
//   ℓ(t, s) = 1 + ⌊log2(t xor s)⌋ = ℓ(t mod 64, s mod 64) ≤ 6 when c = c', and 6 + m(c, c') otherwise,
//   m(c, c') = 1 + ⌊log2(c xor c')⌋ — the Fenwick level of chunk c' seen from chunk c (LL-C2):
//   o_t = Σ_{s ∈ c, s ≤ t} λ_t^(ℓ(t,s)) Γ_ts (q_t · k_s) v_s  +  γ_t Σ_{m live at c} λ_t^(6+m) E_c^(m)ᵀ q_t,
// Γ_ts = Π_{r=s+1..t} a_r, γ_t = Π_{r ∈ c, r ≤ t} a_r, and E_c^(m) the sum of the summaries
// D_c' = Σ_{s ∈ c'} Γ_{end(c'), s} k_s v_sᵀ of the chunks c' at level m, decayed to the start of c.
// E follows the token recurrence (log_linear_fused.cu, reference/log_linear.h State::step) with chunks
// for tokens: before chunk c ≥ 1 cascade E^(j+1) = E^(0) + … + E^(j), j = ctz(c), and empty 0..j;
// read the live levels (m ≥ 1 with bit m−1 of c set); decay every level by A_c = γ_{n−1}; write D_c at
// level 0.
//
// A level is written once: level m ≥ 1 is created by the cascade at chunk c' = ctz(c') + 1 = m and then
// only decays until its next cascade, so it is live at the chunks c' … c' + 2^(m−1) − 1 (bit m − 1 of c
// set, c' = c with its m − 1 low bits cleared) as E_c^(m) = σ_c^(m) B_c', B_c' the cascade's sum and
// σ_c^(m) = Π A over chunks c' … c − 1.
// Three kernels: chunk_summary (one block per (head, chunk), all at once) writes D_c [KP][V] fp32 and
// A_c; level_pass (one block per (batch, head, tile of kLevelTileV value columns), chunks in order: the
// only sequential part, elementwise) writes each chunk's cascade B_c once, split into chunk_output's
// operand layout (cascade_image), and the scales σ_c^(m) of its live levels; chunk_output (one block per
// (head, chunk, tile of kOutTileV columns), all at once) forms o, copying each live level's image in by
// cp.async while the one before it is multiplied.
// Arithmetic (chunk_operands.cuh): D = K̃ᵀ V with K̃ = Diag(Γ_end) K in three bf16 terms and V exact;
// E summed in fp32, written as two terms; P = (Q Kᵀ) ⊙ Γ ⊙ Λ as two terms; fp32 inputs by FMA in fp64.
//
// Workspace (stream-ordered, chunk_launch.cuh): per (head, chunk) D_c, B_c, A_c and the σ_c^(m), e.g.
// 2.2 GB at B = 1, H = 16, K = V = 128, T = 65,536.
#include <string>

#include "chunk_launch.cuh"
#include "chunk_operands.cuh"
#include "delta_rule_fused.cuh"  // delta_rule::TokenRows, rows_of
#include "families.h"
#include "log_linear_chunk_levels.cuh"
#include "log_linear_inputs.h"

namespace larc::gpu::detail {

namespace {

using namespace chunk_operands;
using namespace chunk_launch;
using namespace log_linear_levels;
using delta_rule::rows_of;
using delta_rule::TokenRows;

constexpr int kChunk = kLogLinearChunk;
constexpr int kThreads = kBlockThreads;
constexpr int kLevelTileV = 16;  // value columns per level_pass block
constexpr int kLevelPitch = kLevelTileV + 1;  // words a row of level_pass's levels
constexpr int kOutTileV = 64;    // value columns per chunk_output block
constexpr int kSumTileV = 64;    // value columns per product pass of chunk_summary
constexpr int kSummaryTerms = 3;  // K̃ (fp32) in chunk_summary
constexpr int kReadTerms = 2;     // E and P in chunk_output (o is rounded to the input dtype)
constexpr std::int64_t kMaxT = std::int64_t{1} << 23;
constexpr int kMaxTokenLevels = 24;  // fenwick_level_count(kMaxT)
constexpr int kMaxChunkLevels = kMaxTokenLevels - 1 - kChunkBits;  // chunk levels of ⌈kMaxT / 64⌉ chunks

template <class T>
struct Params {
  Strided<const T> q, k, v, g, level_scales;
  Strided<T> o;
  float* summaries = nullptr;  // D_c [H][B·chunks][KP][V]
  float* chunk_decay = nullptr;  // A_c [H][B·chunks]
  float* cascades = nullptr;  // B_c [H][B·chunks][out_tiles] operand images (kImageWords; c = 0: unused)
  float* level_scale = nullptr;  // σ_c^(m) [H][B·chunks][chunk_levels]
  std::int64_t tokens = 0, chunks = 0, B = 0;
  int H = 0, K = 0, V = 0;
  int token_levels = 0;  // level_count(T): the level_scales read
  int chunk_levels = 0;  // chunk levels m = 1..chunk_levels that chunks < chunks reach
  int level_tiles = 0, out_tiles = 0;
};

// B_c of a record as chunk_output's B operand, one image per output tile: its kOutTileV columns as
// rows, reduction over the KP rows of B_c, in kReadTerms bf16 planes (fp32 inputs: floats).
template <class T, int KP>
constexpr int kImageWords = operand_words<T, kReadTerms>(kOutTileV, KP);
template <class T, int KP>
__device__ __forceinline__ Operand<T, kReadTerms, KP> cascade_image(const Params<T>& p, std::int64_t record, int out_tile) {
  return operand_at<T, kReadTerms, KP>(p.cascades + (record * p.out_tiles + out_tile) * kImageWords<T, KP>, kOutTileV);
}

// ---- chunk_summary ---------------------------------------------------------------------------------
// Shared memory (words): ChunkDecays, g and Γ_{n−1,·} [64], K̃ᵀ [KP rows][64] (kSummaryTerms), a Vᵀ tile
// [kSumTileV rows][64] (input terms).
template <class T, int KP>
struct SummaryLayout {
  static constexpr int kKt = operand_words<T, kSummaryTerms>(KP, kChunk);
  static constexpr int kVt = operand_words<T, kInputTerms<T>>(kSumTileV, kChunk);
  static constexpr int kWords = ChunkDecays::kWords + 2 * kChunk + kKt + kVt;
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads) chunk_summary(const Params<T> p) {
  using L = SummaryLayout<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const ChunkDecays decays(words);
  float* const gate_s = words + ChunkDecays::kWords;
  float* const to_end_s = gate_s + kChunk;
  const auto kt_op = operand_at<T, kSummaryTerms, kChunk>(to_end_s + kChunk, KP);
  const auto vt_op = operand_at<T, kInputTerms<T>, kChunk>(to_end_s + kChunk + L::kKt, kSumTileV);

  const std::int64_t slot = blockIdx.x % (p.B * p.chunks);
  const int h = static_cast<int>(blockIdx.x / (p.B * p.chunks));
  const std::int64_t b = slot / p.chunks, t0 = slot % p.chunks * kChunk;
  const int n = static_cast<int>(p.tokens - t0 < kChunk ? p.tokens - t0 : kChunk);
  const int K = p.K, V = p.V;
  const TokenRows<const T> k = rows_of(p.k, b, 0), v = rows_of(p.v, b, h), gate = rows_of(p.g, b, h);
  if (threadIdx.x < kChunk) gate_s[threadIdx.x] = static_cast<int>(threadIdx.x) < n ? to_float(gate(t0 + threadIdx.x)) : 0.f;
  __syncthreads();
  if (threadIdx.x == 0) decays.form([&](int i) { return gate_s[i]; }, n);
  __syncthreads();
  if (threadIdx.x < kChunk) to_end_s[threadIdx.x] = decays.ratio(n - 1, threadIdx.x, n);
  if (threadIdx.x == 0) p.chunk_decay[h * p.B * p.chunks + slot] = decays.from_start(n - 1, n);
  __syncthreads();
  fill(kt_op, KP, [&](int d, int s) { return s < n && d < K ? to_end_s[s] * to_float(k(t0 + s, d)) : 0.f; });

  float* const summary = p.summaries + (h * p.B * p.chunks + slot) * std::int64_t{KP} * V;
  for (int v0 = 0; v0 < V; v0 += kSumTileV) {
    fill_transposed<kSumTileV>(vt_op, [&](int s, int c) {
      return s < n && v0 + c < V ? to_float(v(t0 + s, v0 + c)) : 0.f;
    });
    __syncthreads();
    for_each_strip<KP, kSumTileV, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, kChunk>(acc, kt_op, vt_op, m0, n0);
      for_each_element(acc, m0, n0, [&](int d, int col, float y) {
        if (v0 + col < V) summary[std::int64_t{d} * V + v0 + col] = y;
      });
    });
    __syncthreads();  // the Vᵀ tile is read no more
  }
}

// ---- level_pass ------------------------------------------------------------------------------------
// E^(0..chunk_levels) [KP][kLevelTileV] fp32 in shared memory (rows padded to kLevelPitch), each with
// a scale: the level is scale_m · E^(m), so that decaying every level by A_c is one multiply a level,
// folded into E only when the level is cascaded. Per chunk: cascade and write its sum B_c (the block's
// rows of chunk_output's operand image, header), write the levels' scales (tile 0), decay the scales,
// write D_c at level 0. Thread e owns elements e, e + kThreads, … (row e / kLevelTileV, column
// e % kLevelTileV) of every level in the cascade and the write of level 0.
template <class T, int KP>
__global__ void __launch_bounds__(kThreads) level_pass(const Params<T> p) {
  constexpr int tile = KP * kLevelTileV, tile_words = KP * kLevelPitch, per = tile / kThreads;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const scale = reinterpret_cast<float*>(smem_vec);  // [32]
  float* const E = scale + 32;                                // [chunk_levels + 1][KP][kLevelPitch]
  const auto slot = [](int e) { return e / kLevelTileV * kLevelPitch + e % kLevelTileV; };
  const int col0 = static_cast<int>(blockIdx.x % p.level_tiles) * kLevelTileV;
  const int h = static_cast<int>(blockIdx.x / p.level_tiles % p.H);
  const std::int64_t b = blockIdx.x / p.level_tiles / p.H;
  const int V = p.V;
  for (int e = threadIdx.x; e < (p.chunk_levels + 1) * tile_words; e += kThreads) E[e] = 0.f;
  if (threadIdx.x < 32) scale[threadIdx.x] = 1.f;

  const std::int64_t first = h * p.B * p.chunks + b * p.chunks;  // (head, slot) of chunk 0
  // This thread's elements of chunk c's summary (columns ≥ V as zeros).
  const auto load_summary = [&](std::int64_t c, float (&x)[per]) {
    const float* const summary = p.summaries + (first + c) * std::int64_t{KP} * V;
#pragma unroll
    for (int i = 0; i < per; ++i) {
      const int e = threadIdx.x + i * kThreads, d = e / kLevelTileV, col = col0 + e % kLevelTileV;
      x[i] = col < V ? summary[std::int64_t{d} * V + col] : 0.f;
    }
  };
  float next[per];
  if (p.chunks > 0) load_summary(0, next);
  for (std::int64_t c = 0; c < p.chunks; ++c) {
    float current[per];
#pragma unroll
    for (int i = 0; i < per; ++i) current[i] = next[i];
    if (c + 1 < p.chunks) load_summary(c + 1, next);  // in flight while chunk c is handled
    __syncthreads();  // the previous chunk's scales and level 0 are written
    if (c > 0) {  // cascade: E^(j+1) = E^(0) + … + E^(j) (scaled), levels 0..j emptied
      const int j = __ffsll(static_cast<long long>(c)) - 1;
#pragma unroll
      for (int i = 0; i < per; ++i) {
        const int e = slot(threadIdx.x + i * kThreads);
        float run = scale[0] * E[e];
        E[e] = 0.f;
        for (int m = 1; m <= j; ++m) {
          run += scale[m] * E[m * tile_words + e];
          E[m * tile_words + e] = 0.f;
        }
        E[(j + 1) * tile_words + e] = run;
      }
      __syncthreads();  // every thread has read the scales of levels 0..j and written its sums
      if (static_cast<int>(threadIdx.x) <= j + 1) scale[threadIdx.x] = 1.f;
      // B_c = E^(j+1): the block's kLevelTileV rows of its output tile's operand image, each row's pair
      // words by consecutive threads (coalesced; rows of E padded, so the column reads do not conflict).
      const float* const sum = E + (j + 1) * tile_words;
      const auto image = cascade_image<T, KP>(p, first + c, col0 / kOutTileV);
      for (int e = threadIdx.x; e < kLevelTileV * (KP / 2); e += kThreads) {
        const int col = e / (KP / 2), d = e % (KP / 2) * 2;
        store_pair(image, col0 % kOutTileV + col, d, sum[d * kLevelPitch + col], sum[(d + 1) * kLevelPitch + col]);
      }
      // The last block also zeroes the image rows past every block's columns (V not a multiple of 64),
      // which chunk_output copies with the rest.
      if (col0 + kLevelTileV >= V)
        for (int e = threadIdx.x; e < (kOutTileV - col0 % kOutTileV - kLevelTileV) * (KP / 2); e += kThreads)
          store_pair(image, col0 % kOutTileV + kLevelTileV + e / (KP / 2), e % (KP / 2) * 2, 0.f, 0.f);
      __syncthreads();  // the reset scales are visible
    }
    if (col0 == 0 && threadIdx.x >= 1 && static_cast<int>(threadIdx.x) <= p.chunk_levels)
      p.level_scale[(first + c) * p.chunk_levels + threadIdx.x - 1] = scale[threadIdx.x];
    // Decay every level to the end of chunk c (thread m its own scale), then D_c at level 0 (each thread
    // its own elements, which only it reads in the cascade).
    if (threadIdx.x >= 1 && static_cast<int>(threadIdx.x) <= p.chunk_levels) scale[threadIdx.x] *= p.chunk_decay[first + c];
#pragma unroll
    for (int i = 0; i < per; ++i) E[slot(threadIdx.x + i * kThreads)] = current[i];
  }
}

// ---- chunk_output ----------------------------------------------------------------------------------
// Shared memory (words): ChunkDecays, γ [64], Q and K [64 rows][KP] (input terms), Vᵀ [kOutTileV
// rows][64] (input terms), P [64 rows][64] and one E^(m) [kOutTileV rows][KP] (kReadTerms), λ
// [64][token_levels] (dynamic tail). The live levels' images are copied in by cp.async, each while the
// level before it is multiplied: into E, and, once the in-chunk part is formed, over K, Vᵀ and P.
template <class T, int KP>
struct OutputLayout {
  static constexpr int kQ = operand_words<T, kInputTerms<T>>(kChunk, KP);
  static constexpr int kVt = operand_words<T, kInputTerms<T>>(kOutTileV, kChunk);
  static constexpr int kP = operand_words<T, kReadTerms>(kChunk, kChunk);
  static constexpr int kE = operand_words<T, kReadTerms>(kOutTileV, KP);
  static constexpr int kFixedWords = ChunkDecays::kWords + kChunk + 2 * kQ + kVt + kP + kE;
  static_assert(kImageWords<T, KP> == kE && kE <= kQ + kVt + kP, "a level's image fits E and the words of K, Vᵀ, P");
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads) chunk_output(const Params<T> p) {
  using L = OutputLayout<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const ChunkDecays decays(words);
  float* const gamma_s = words + ChunkDecays::kWords;
  float* const q_words = gamma_s + kChunk;
  const auto q_op = operand_at<T, kInputTerms<T>, KP>(q_words, kChunk);
  const auto k_op = operand_at<T, kInputTerms<T>, KP>(q_words + L::kQ, kChunk);
  const auto vt_op = operand_at<T, kInputTerms<T>, kChunk>(q_words + 2 * L::kQ, kOutTileV);
  const auto p_op = operand_at<T, kReadTerms, kChunk>(q_words + 2 * L::kQ + L::kVt, kChunk);
  const auto e_op = operand_at<T, kReadTerms, KP>(q_words + 2 * L::kQ + L::kVt + L::kP, kOutTileV);
  float* const lambda_s = words + L::kFixedWords;  // [64][token_levels]

  const int tile = static_cast<int>(blockIdx.x % p.out_tiles);
  const std::int64_t slot = blockIdx.x / p.out_tiles % (p.B * p.chunks);
  const int h = static_cast<int>(blockIdx.x / p.out_tiles / (p.B * p.chunks));
  const std::int64_t b = slot / p.chunks, c = slot % p.chunks, t0 = c * kChunk;
  const int n = static_cast<int>(p.tokens - t0 < kChunk ? p.tokens - t0 : kChunk);
  const int K = p.K, V = p.V, v0 = tile * kOutTileV, levels = p.token_levels;
  const TokenRows<const T> q = rows_of(p.q, b, 0), k = rows_of(p.k, b, 0), v = rows_of(p.v, b, h);
  const TokenRows<const T> gate = rows_of(p.g, b, h);

  // The live levels m are the set bits m − 1 of c; E_c^(m) = σ_c^(m) B_c', c' = c with its m − 1 low bits
  // cleared (header). The first one's image is copied into E at once.
  const std::int64_t chunk0 = h * p.B * p.chunks + b * p.chunks;  // (head, slot) of the sequence's chunk 0
  const auto level_record = [&](int m) { return chunk0 + (c & ~((std::int64_t{1} << (m - 1)) - 1)); };
  std::int64_t live = c;
  int m = __ffsll(static_cast<long long>(live));
  if (m > 0) copy_operand_async(e_op, cascade_image<T, KP>(p, level_record(m), tile));
  commit_async();

  fill(q_op, kChunk, [&](int i, int d) { return i < n && d < K ? to_float(q(t0 + i, d)) : 0.f; });
  fill(k_op, kChunk, [&](int i, int d) { return i < n && d < K ? to_float(k(t0 + i, d)) : 0.f; });
  fill_transposed<kOutTileV>(vt_op, [&](int s, int c) {
    return s < n && v0 + c < V ? to_float(v(t0 + s, v0 + c)) : 0.f;
  });
  for (int e = threadIdx.x; e < kChunk * levels; e += kThreads) {
    const int i = e / levels, l = e % levels;
    lambda_s[e] = i < n ? to_float(*p.level_scales.at(b, t0 + i, h, l)) : 0.f;
  }
  if (threadIdx.x == 0) decays.form([&](int i) { return i < n ? to_float(gate(t0 + i)) : 0.f; }, n);
  __syncthreads();
  if (threadIdx.x < kChunk) gamma_s[threadIdx.x] = decays.from_start(threadIdx.x, n);

  // P = (Q Kᵀ) ⊙ Γ ⊙ Λ, Λ_ts = λ_t^(ℓ(t,s)) (lower, diagonal included).
  for_each_strip<kChunk, kChunk, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, KP>(acc, q_op, k_op, m0, n0);
    const auto weight = [&](int t, int s) {
      // Rows t ≥ n are padding: their level may exceed the levels T reaches, so λ is not read there.
      return s <= t && t < n ? decays.ratio(t, s, n) * lambda_s[t * levels + in_chunk_level(t, s)] : 0.f;
    };
    for_each_pair(acc, m0, n0, [&](int t, int s, float x0, float x1) {
      store_pair(p_op, t, s, x0 * weight(t, s), x1 * weight(t, s + 1));
    });
  });
  __syncthreads();

  // Each warp's two strips of the 64 × kOutTileV output: the intra-chunk part, then each live level.
  constexpr int strips = 4 * (kOutTileV / 16);
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4;
  float acc[2][2][4];
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int strip = warp + 8 * s, m0 = strip % 4 * 16, n0 = strip / 4 * 16;
    zero(acc[s]);
    warp_product<T, kChunk>(acc[s], p_op, vt_op, m0, n0);
  }
  static_assert(strips == 16);
  const float* const scales = p.level_scale + (chunk0 + c) * p.chunk_levels;
  const decltype(e_op) buffers[2] = {e_op, operand_at<T, kReadTerms, KP>(q_words + L::kQ, kOutTileV)};
  int buffer = 0;
  while (m > 0) {
    live &= live - 1;
    const int next = __ffsll(static_cast<long long>(live));
    __syncthreads();  // the other buffer (K, Vᵀ, P, or the level before) is read no more
    if (next > 0) copy_operand_async(buffers[buffer ^ 1], cascade_image<T, KP>(p, level_record(next), tile));
    commit_async();
    wait_async<1>();  // this thread's part of level m
    __syncthreads();  // every thread's
    const float sigma = scales[m - 1];
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int strip = warp + 8 * s, m0 = strip % 4 * 16, n0 = strip / 4 * 16;
      float read[2][4];
      zero(read);
      warp_product<T, KP>(read, q_op, buffers[buffer], m0, n0);
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int t = m0 + g + 8 * (r / 2);
        const float w = gamma_s[t] * lambda_s[t * levels + kChunkBits + m] * sigma;
#pragma unroll
        for (int j = 0; j < 2; ++j) acc[s][j][r] = fmaf(w, read[j][r], acc[s][j][r]);
      }
    }
    buffer ^= 1;
    m = next;
  }
  const TokenRows<T> o = rows_of(p.o, b, h);
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int strip = warp + 8 * s, m0 = strip % 4 * 16, n0 = strip / 4 * 16;
    for_each_element(acc[s], m0, n0, [&](int i, int col, float y) {
      if (i < n && v0 + col < V) o(t0 + i, v0 + col) = from_float<T>(y);
    });
  }
}

// ---- launcher ---------------------------------------------------------------------------------------
template <class T, int KP>
Status enqueue(Params<T> p, cudaStream_t stream, const std::string& name) {
  const auto summary = chunk_summary<T, KP>;
  const auto pass = level_pass<T, KP>;
  const auto output = chunk_output<T, KP>;
  const std::size_t summary_smem = sizeof(float) * SummaryLayout<T, KP>::kWords;
  // Shared memory grows with the levels; each kernel is opted in to its largest size, which concurrent
  // launches of other lengths (larc gate --jobs) then never lower under one another.
  const auto pass_smem_for = [](int chunk_levels) { return sizeof(float) * (32 + (chunk_levels + 1) * KP * kLevelPitch); };
  const auto output_smem_for = [](int token_levels) {
    return sizeof(float) * (OutputLayout<T, KP>::kFixedWords + kChunk * token_levels);
  };
  const std::size_t pass_smem = pass_smem_for(p.chunk_levels), output_smem = output_smem_for(p.token_levels);
  cudaError_t e = allow_smem(summary, summary_smem);
  if (e == cudaSuccess) e = allow_smem(pass, pass_smem_for(kMaxChunkLevels));
  if (e == cudaSuccess) e = allow_smem(output, output_smem_for(kMaxTokenLevels));
  if (e != cudaSuccess) return cuda_failure(name, "shared-memory opt-in", e);

  const std::int64_t records = p.H * p.B * p.chunks;
  const std::int64_t summary_floats = records * KP * p.V;
  const std::int64_t decay_floats = (records + 3) / 4 * 4;
  const std::int64_t cascade_floats = records * p.out_tiles * kImageWords<T, KP>;
  const std::int64_t scale_floats = records * p.chunk_levels;
  const std::size_t bytes =
      sizeof(float) * static_cast<std::size_t>(summary_floats + decay_floats + cascade_floats + scale_floats);
  if (const Status st = allocate_workspace(name, bytes, stream, &p.summaries); !st) return st;
  p.chunk_decay = p.summaries + summary_floats;
  p.cascades = p.chunk_decay + decay_floats;
  p.level_scale = p.cascades + cascade_floats;

  launch_kernel(summary, static_cast<unsigned>(records), kThreads, summary_smem, stream, p);
  launch_kernel(pass, static_cast<unsigned>(p.B * p.H * p.level_tiles), kThreads, pass_smem, stream, p);
  launch_kernel(output, static_cast<unsigned>(records * p.out_tiles), kThreads, output_smem, stream, p);
  return finish(name, p.summaries, stream);
}

Status launch(const LaunchArgs& args) {
  const std::string name = "log-linear-chunked";
  Validator v(name, args);
  const LogLinearInputs in = validate_log_linear(v, args, false, kMaxT);
  const std::int64_t B = v.size('B'), T_len = v.size('T'), H = v.size('H');
  const LogLinearChunking chunking = chunking_of(v, kLevelTileV, kOutTileV);
  const std::int64_t chunks = chunking.chunks;
  if (!v.ok()) return v.status();
  if (T_len == 0 || B * H == 0) return Status::success();  // o is empty: nothing to write

  return dispatch_float(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    p.q = strided<const T>(in.q);
    p.k = strided<const T>(in.k);
    p.v = strided<const T>(in.v);
    p.g = strided<const T>(in.g);
    p.level_scales = strided<const T>(in.level_scales);
    p.o = strided<T>(in.o);
    p.tokens = T_len;
    p.chunks = chunks;
    p.B = B;
    p.H = static_cast<int>(H);
    p.K = static_cast<int>(v.size('K'));
    p.V = static_cast<int>(v.size('V'));
    p.token_levels = in.levels;
    p.chunk_levels = chunking.chunk_levels;
    p.level_tiles = static_cast<int>(chunking.level_tiles);
    p.out_tiles = static_cast<int>(chunking.out_tiles);
    if (p.K <= 64) return enqueue<T, 64>(p, stream_of(args), name);
    return enqueue<T, 128>(p, stream_of(args), name);
  });
}

}  // namespace

void append_log_linear_chunked_kernels(std::vector<Kernel>& out) {
  out.push_back(log_linear_entry("log-linear-chunked", "log-linear",
                                 "log-linear attention, Mamba-2 decay, chunked (C = 64): chunk summaries in "
                                 "parallel, the Fenwick levels of chunks in one elementwise pass, then the output "
                                 "per chunk in parallel; bf16/fp16 products on tensor cores, fp32 by FMA in fp64",
                                 kMaxT, [](const LaunchArgs& args) { return launch(args); }, kLogLinearChunk));
}

}  // namespace larc::gpu::detail
