// Shared-memory operands and warp-level products of the chunked kernels (delta_rule_chunked.cuh,
// log_linear_chunked.cu): every operand is split once into bf16 planes laid out for the m16n8k16
// fragments (bf16/fp16 inputs, tensor cores) or kept in fp32 (fp32 inputs: FMA in fp64, rounded once —
// never TF32), and a product reads its fragments with one 32-bit shared load a register.
//
// An fp32 value enters as bf16 terms x = hi + 2^-8 mid + 2^-16 lo (each the bf16 rounding of what is left,
// stored scaled up by 2^8 a term so that it is as large as hi: 24 significant bits, all of fp32's, for every
// fp32 value up to bf16's largest, 3.39e38 — unscaled, a term below 2^-126 would round to bf16's subnormal
// spacing 2^-133 and the split would carry all 24 bits only for |x| ≥ 2^-110), as hi + 2^-8 lo (16 bits),
// or, for an input, exactly: bf16 in one term, fp16 (11 significant bits) in two. A product takes the term
// pairs (i, j) with i + j ≤ 2 (the rest is below 2^-24 relative): 6 MMAs for two 3-term operands.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernel_common.cuh"

namespace larc::gpu::detail::chunk_operands {

constexpr int kBlockThreads = 256;  // every chunked kernel's block: the helpers below share its work

// Tensor cores for bf16/fp16 inputs; FP32 FMA for fp32 inputs.
template <class T>
constexpr bool kMma = !std::is_same_v<T, float>;

// bf16 terms of an input operand (q, k, v): bf16 is exact in one, fp16 (11 significant bits) in two.
template <class T>
constexpr int kInputTerms = std::is_same_v<T, __nv_bfloat16> ? 1 : 2;

// An operand of warp_product, in shared or global memory: `rows` rows (an A operand's M rows, or a B
// operand's N columns) by KD reduction indices. Tensor cores: TERMS planes of bf16 pairs, the pair
// (2w, 2w + 1) of row r at word r·pitch + w of each plane; FMA (fp32 inputs): one plane of floats,
// index k of row r at r·pitch + k. pitch ≡ 4 (mod 32) words, so a fragment's 32 words (rows g, words t)
// fall in 32 distinct banks.
template <class T>
__host__ __device__ constexpr int pitch_for(int kd) {
  return (kMma<T> ? kd / 2 : kd) + 4;
}
template <class T, int TERMS>
constexpr int kPlanes = kMma<T> ? TERMS : 1;
template <class T, int TERMS>
__host__ __device__ constexpr int operand_words(int rows, int kd) {
  return kPlanes<T, TERMS> * rows * pitch_for<T>(kd);
}

template <class T, int TERMS, int KD>
struct Operand {
  using Word = std::conditional_t<kMma<T>, std::uint32_t, float>;
  static constexpr int kPitch = pitch_for<T>(KD);
  static constexpr int kDataWords = kMma<T> ? KD / 2 : KD;  // the rest of a row is padding, never written
  Word* words;
  int rows;  // plane stride = rows · kPitch
  __device__ Word& at(int plane, int row, int w) const { return words[(plane * rows + row) * kPitch + w]; }
};
template <class T, int TERMS, int KD>
__device__ __forceinline__ Operand<T, TERMS, KD> operand_at(void* words, int rows) {
  return {static_cast<typename Operand<T, TERMS, KD>::Word*>(words), rows};
}


// ---- Warp-level products in the m16n8k16 fragment layout ------------------------------------------
// A warp computes a 16 × 8·NT strip C[m0.., n0..] += A[m0.., 0..KD) · B[0..KD, n0..] from Operands (A's
// rows are M rows, B's rows its N columns). Lane (g = lane / 4, t = lane % 4) holds acc[j][r] at row
// m0 + g + 8·(r / 2), column n0 + 8j + 2t + r % 2 — the mma.sync accumulator layout, used by the
// FMA path too so that the surrounding code is the same for every dtype.

__device__ __forceinline__ std::uint32_t bits_of(__nv_bfloat162 x) { return *reinterpret_cast<std::uint32_t*>(&x); }

// Term n of a split value is stored as 2^(8n) × its share: one bf16 significand up a term.
constexpr float kTermScale = 256.f, kTermUnscale = 1.f / 256.f;

// (first, second) as N bf16 pairs, first in the low half: term n is the bf16 rounding of 2^(8n) × what
// terms 0..n−1 left (the remainder and its scaling exact in fp32: it is at most half an ulp of the term
// before, so it is never scaled past that term's size), so N = 3 carries all 24 bits of any fp32 value up
// to bf16's largest, (2 − 2^-7)·2^127 (above it hi rounds to infinity).
template <int N>
__device__ __forceinline__ void split_pair(float first, float second, std::uint32_t (&terms)[N]) {
#pragma unroll
  for (int n = 0; n < N; ++n) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(first, second);
    const float2 hf = __bfloat1622float2(h);
    terms[n] = bits_of(h);
    first = (first - hf.x) * kTermScale;
    second = (second - hf.y) * kTermScale;
  }
}

// acc += A · B for one m16n8k16 block from bf16 term fragments: the term pairs (i, j) with i + j ≤ 2
// (the rest is below 2^-24 relative; a pair's product carries 2^(8(i+j))) into two zeroed fragments —
// hi·hi alone; the corrections smallest first: the pairs of order 2, brought to order 1's scale by an exact
// 2^-8, then order 1's — unscaled and added to acc in fp32 (round to nearest): the tensor cores' own
// accumulation truncates, so a sum kept to one block of exact hi·hi products (a single product: exact)
// and corrections 2^-8 smaller errs like one rounding.
template <int TA, int TB>
__device__ __forceinline__ void mma_terms(float (&acc)[4], const std::uint32_t (&fa)[TA][4], const std::uint32_t (&fb)[TB][2]) {
  float hi[4] = {0.f, 0.f, 0.f, 0.f};
  mma_bf16(hi, fa[0], fb[0][0], fb[0][1]);
  if constexpr (TA > 1 || TB > 1) {
    float lo[4] = {0.f, 0.f, 0.f, 0.f};
    if constexpr (TA + TB >= 4) {  // a pair of order 2 exists
#pragma unroll
      for (int ta = 0; ta < TA && ta <= 2; ++ta)
        if (const int tb = 2 - ta; tb < TB) mma_bf16(lo, fa[ta], fb[tb][0], fb[tb][1]);
#pragma unroll
      for (int r = 0; r < 4; ++r) lo[r] *= kTermUnscale;
    }
#pragma unroll
    for (int ta = 0; ta < TA && ta <= 1; ++ta)
      if (const int tb = 1 - ta; tb < TB) mma_bf16(lo, fa[ta], fb[tb][0], fb[tb][1]);
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[r] += fmaf(lo[r], kTermUnscale, hi[r]);
  } else {
#pragma unroll
    for (int r = 0; r < 4; ++r) acc[r] += hi[r];
  }
}

// acc[j] += A · B over one k-step for the NT n-tiles of a strip, B from an Operand: fa holds the A
// fragment's terms; b is this lane's first B word (plane 0, the strip's row g, the k-step's word t);
// n-tile j lies 8j rows (8j · pitch words) further, plane n n · plane words further.
template <int NT, int TA, int TB>
__device__ __forceinline__ void mma_tiles(float (&acc)[NT][4], const std::uint32_t (&fa)[TA][4], const std::uint32_t* b,
                                          int pitch, int plane) {
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    std::uint32_t fb[TB][2];
#pragma unroll
    for (int n = 0; n < TB; ++n) fb[n][0] = b[n * plane + 8 * j * pitch], fb[n][1] = b[n * plane + 8 * j * pitch + 4];
    mma_terms(acc[j], fa, fb);
  }
}

// An m16k16 A fragment held in fp32 registers — the element pairs (g, 2t), (g + 8, 2t), (g, 2t + 8),
// (g + 8, 2t + 8) of the lane — split into N bf16 term fragments. The m16n8 accumulators of the n-tiles
// 2k and 2k + 1 are, pair for pair, the A fragment of k-step k: fragment_terms(left, right) turns a
// product's result into the next product's A operand without leaving the registers.
template <int N>
__device__ __forceinline__ void fragment_terms(float2 p0, float2 p1, float2 p2, float2 p3, std::uint32_t (&fa)[N][4]) {
  const float2 pairs[4] = {p0, p1, p2, p3};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    std::uint32_t terms[N];
    split_pair(pairs[i].x, pairs[i].y, terms);
#pragma unroll
    for (int n = 0; n < N; ++n) fa[n][i] = terms[n];
  }
}
template <int N>
__device__ __forceinline__ void fragment_terms(const float (&left)[4], const float (&right)[4], std::uint32_t (&fa)[N][4]) {
  fragment_terms(make_float2(left[0], left[1]), make_float2(left[2], left[3]), make_float2(right[0], right[1]),
                 make_float2(right[2], right[3]), fa);
}

// Tensor cores: mma_terms per 16 reduction indices. FMA (fp32 inputs): k in order, in fp64. Fragment
// addresses are formed once; the unrolled blocks load at fixed offsets.
template <class T, int KD, int NT, int TA, int TB>
__device__ __forceinline__ void warp_product(float (&acc)[NT][4], const Operand<T, TA, KD>& A,
                                             const Operand<T, TB, KD>& B, int m0, int n0) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  constexpr int pitch = Operand<T, TA, KD>::kPitch;
  if constexpr (kMma<T>) {
    const std::uint32_t* a = &A.at(0, m0 + g, t);
    const int a_plane = A.rows * pitch, b_plane = B.rows * pitch;
    const std::uint32_t* b[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) b[j] = &B.at(0, n0 + 8 * j + g, t);
#pragma unroll
    for (int w = 0; w < KD / 2; w += 8) {
      std::uint32_t fa[TA][4];
#pragma unroll
      for (int n = 0; n < TA; ++n) {
        const std::uint32_t* an = a + n * a_plane + w;
        fa[n][0] = an[0];
        fa[n][1] = an[8 * pitch];
        fa[n][2] = an[4];
        fa[n][3] = an[8 * pitch + 4];
      }
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        std::uint32_t fb[TB][2];
#pragma unroll
        for (int n = 0; n < TB; ++n) fb[n][0] = b[j][n * b_plane + w], fb[n][1] = b[j][n * b_plane + w + 4];
        mma_terms(acc[j], fa, fb);
      }
    }
  } else {
    // fp32 inputs: products accumulated in fp64 and rounded once (H200: the FP64 rate is the FP32 rate).
    const float* a0 = &A.at(0, m0 + g, 0);
    const float* b[NT];
#pragma unroll
    for (int j = 0; j < NT; ++j) b[j] = &B.at(0, n0 + 8 * j + 2 * t, 0);
    double sum[NT][4];
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) sum[j][r] = acc[j][r];
#pragma unroll 4
    for (int k = 0; k < KD; ++k) {
      const double x0 = a0[k], x1 = a0[8 * pitch + k];
#pragma unroll
      for (int j = 0; j < NT; ++j) {
        const double y0 = b[j][k], y1 = b[j][pitch + k];
        sum[j][0] = fma(x0, y0, sum[j][0]);
        sum[j][1] = fma(x0, y1, sum[j][1]);
        sum[j][2] = fma(x1, y0, sum[j][2]);
        sum[j][3] = fma(x1, y1, sum[j][3]);
      }
    }
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int r = 0; r < 4; ++r) acc[j][r] = static_cast<float>(sum[j][r]);
  }
}

// op's element pair (row, k), (row, k + 1), k even.
template <class T, int TERMS, int KD>
__device__ __forceinline__ void store_pair(const Operand<T, TERMS, KD>& op, int row, int k, float x0, float x1) {
  if constexpr (kMma<T>) {
    std::uint32_t terms[TERMS];
    split_pair(x0, x1, terms);
#pragma unroll
    for (int n = 0; n < TERMS; ++n) op.at(n, row, k / 2) = terms[n];
  } else {
    op.at(0, row, k) = x0;
    op.at(0, row, k + 1) = x1;
  }
}

// Writes op's element pair (row, 2w), (row, 2w + 1) = f(row, 2w), f(row, 2w + 1) for rows < rows and
// every pair of KD, split into the operand's planes; threads share the work (pairs, row-major). Unrolled
// by 4 so that four pairs' input loads are in flight at once (the gain: docs/perf-notes.md, "Chunked HLA
// second order and AHLA" row 2).
template <class T, int TERMS, int KD, class F>
__device__ __forceinline__ void fill(const Operand<T, TERMS, KD>& op, int rows, F f) {
#pragma unroll 4
  for (int e = threadIdx.x; e < rows * (KD / 2); e += kBlockThreads) {
    const int r = e / (KD / 2), k = e % (KD / 2) * 2;
    store_pair(op, r, k, f(r, k), f(r, k + 1));
  }
}

// The state pass's fp32 tile x (rows = op's KD reduction indices, TILE columns, row pitch `pitch`) into
// op transposed (op's TILE rows are x's columns) and, for the columns with col0 + col < V, into out (an
// operand of V rows, e.g. a workspace read by chunk_output); threads share the pairs.
template <int TILE, class T, int TERMS, int OUT_TERMS, int KD>
__device__ __forceinline__ void store_columns(const Operand<T, TERMS, KD>& op, const Operand<T, OUT_TERMS, KD>& out,
                                              const float* x, int pitch, int col0, int V) {
  for (int e = threadIdx.x; e < TILE * (KD / 2); e += kBlockThreads) {
    const int col = e / (KD / 2), d = e % (KD / 2) * 2;
    const float x0 = x[d * pitch + col], x1 = x[(d + 1) * pitch + col];
    store_pair(op, col, d, x0, x1);
    if (col0 + col < V) store_pair(out, col0 + col, d, x0, x1);
  }
}

// Element (row, k) of op, the sum of its terms, each unscaled (split_pair).
template <class T, int TERMS, int KD>
__device__ __forceinline__ float element(const Operand<T, TERMS, KD>& op, int row, int k) {
  if constexpr (kMma<T>) {
    float x = 0.f, unit = 1.f;
#pragma unroll
    for (int n = 0; n < TERMS; ++n) {
      const std::uint32_t w = op.at(n, row, k / 2);
      x = fmaf(__uint_as_float(k % 2 == 0 ? w << 16 : w & 0xffff0000u), unit, x);
      unit *= kTermUnscale;
    }
    return x;
  } else {
    return op.at(0, row, k);
  }
}

// The transpose of a token-major tile into op (op's ROWS rows are the tile's columns, its reduction the
// tile's tokens): x(s, c) for tokens s < KD and columns c < ROWS, read as pairs of tokens of one column
// with consecutive threads on consecutive columns (a token's row is read coalesced).
template <int ROWS, class T, int TERMS, int KD, class X>
__device__ __forceinline__ void fill_transposed(const Operand<T, TERMS, KD>& op, X x) {
#pragma unroll 4
  for (int e = threadIdx.x; e < ROWS * (KD / 2); e += kBlockThreads) {
    const int c = e % ROWS, s = e / ROWS * 2;
    store_pair(op, c, s, x(s, c), x(s + 1, c));
  }
}

// The accumulator's element pairs (row, col), (row, col + 1), col even: e(row, col, x0, x1).
template <int NT, class E>
__device__ __forceinline__ void for_each_pair(const float (&acc)[NT][4], int m0, int n0, E e) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int j = 0; j < NT; ++j) {
    e(m0 + g, n0 + 8 * j + 2 * t, acc[j][0], acc[j][1]);
    e(m0 + g + 8, n0 + 8 * j + 2 * t, acc[j][2], acc[j][3]);
  }
}

// The 16 × 8·NT strips of an M × N output, dealt to the block's warps round-robin: f(m0, n0).
template <int M, int N, int NT, class F>
__device__ __forceinline__ void for_each_strip(F f) {
  static_assert(M % 16 == 0 && N % (8 * NT) == 0);
  constexpr int m_tiles = M / 16, strips = m_tiles * (N / (8 * NT));
  for (int s = threadIdx.x / 32; s < strips; s += kBlockThreads / 32) f(s % m_tiles * 16, s / m_tiles * 8 * NT);
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

// U = T V for one chunk, fp32 into u_out [64][V] (row stride V): T the A operand t_op [64 rows][64],
// v(j, c) value column c of token j < n (tokens past n are zero), TILE value columns at a time through
// vt_op, the Vᵀ tile [TILE rows][64]. Called by the whole block; vt_op is free again when it returns.
template <int TILE, class T, int TT, int TV, class Values>
__device__ __forceinline__ void write_value_solve(const Operand<T, TT, 64>& t_op, const Operand<T, TV, 64>& vt_op, int n,
                                                  int V, float* u_out, Values v) {
  for (int v0 = 0; v0 < V; v0 += TILE) {
    fill_transposed<TILE>(vt_op, [&](int j, int c) { return j < n && v0 + c < V ? v(j, v0 + c) : 0.f; });
    __syncthreads();
    for_each_strip<64, TILE, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, 64>(acc, t_op, vt_op, m0, n0);
      for_each_element(acc, m0, n0, [&](int i, int c, float y) {
        if (v0 + c < V) u_out[std::int64_t{i} * V + v0 + c] = y;
      });
    });
    __syncthreads();  // the Vᵀ tile is read no more
  }
}

// Rows [row0, row0 + dst.rows) of every plane of src (src_rows rows a plane) into dst, data words only;
// rows past src_rows as zeros. 16-byte copies: pitches and operand bases are multiples of 4 words.
template <class T, int TERMS, int KD>
__device__ __forceinline__ void copy_rows(const Operand<T, TERMS, KD>& dst, const Operand<T, TERMS, KD>& src, int row0,
                                          int src_rows) {
  constexpr int quads = Operand<T, TERMS, KD>::kDataWords / 4;
  for (int e = threadIdx.x; e < kPlanes<T, TERMS> * dst.rows * quads; e += kBlockThreads) {
    const int plane = e / (dst.rows * quads), r = e / quads % dst.rows, w = e % quads * 4;
    *reinterpret_cast<float4*>(&dst.at(plane, r, w)) =
        row0 + r < src_rows ? *reinterpret_cast<const float4*>(&src.at(plane, row0 + r, w)) : make_float4(0.f, 0.f, 0.f, 0.f);
  }
}

// Columns [col0, col0 + COLS) of the fp32 matrix src [ROWS][V] into dst [ROWS][pitch] (zero past V):
// by cp.async when V % 4 == 0 (16-byte rows), else by plain loads. COLS % 4 == 0.
template <int THREADS, int ROWS, int COLS>
__device__ __forceinline__ void copy_column_tile_async(float* dst, int pitch, const float* src, int V, int col0) {
  if (V % 4 == 0) {
    for (int e = threadIdx.x; e < ROWS * COLS / 4; e += THREADS) {
      const int i = e / (COLS / 4), c4 = e % (COLS / 4) * 4;
      if (col0 + c4 < V)
        copy_async16(dst + i * pitch + c4, src + std::int64_t{i} * V + col0 + c4);
      else
        *reinterpret_cast<float4*>(dst + i * pitch + c4) = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  } else {
    for (int e = threadIdx.x; e < ROWS * COLS; e += THREADS) {
      const int i = e / COLS, col = col0 + e % COLS;
      dst[i * pitch + e % COLS] = col < V ? src[std::int64_t{i} * V + col] : 0.f;
    }
  }
}
// Every row of every plane of src into dst (the same shape) by cp.async, data words only.
template <int THREADS = kBlockThreads, class T, int TERMS, int KD>
__device__ __forceinline__ void copy_operand_async(const Operand<T, TERMS, KD>& dst, const Operand<T, TERMS, KD>& src) {
  constexpr int quads = Operand<T, TERMS, KD>::kDataWords / 4, pitch = Operand<T, TERMS, KD>::kPitch;
  for (int e = threadIdx.x; e < kPlanes<T, TERMS> * dst.rows * quads; e += THREADS) {
    const int row = e / quads, w = e % quads * 4;  // row: over the planes' rows
    copy_async16(dst.words + row * pitch + w, src.words + row * pitch + w);
  }
}

// ---- Decays within a chunk (n ≤ 64 tokens, a_r = e^{g_r}) ------------------------------------------
// G'_i = Σ g_r over r ≤ i since the last r with g_r = −∞ (fp64), and that r (−1: none), in shared
// memory (3 · 64 words, 8-byte aligned); formed by one thread, then read by all.
struct ChunkDecays {
  static constexpr int kWords = 3 * 64;
  double* log_decay;
  int* reset;
  __device__ explicit ChunkDecays(float* words)
      : log_decay(reinterpret_cast<double*>(words)), reset(reinterpret_cast<int*>(words + 2 * 64)) {}
  // By one thread: gate(i) = g of token i < n.
  template <class G>
  __device__ void form(G gate, int n) const {
    double sum = 0;
    int last = -1;
    for (int i = 0; i < 64; ++i) {
      if (i < n) {
        const float g = gate(i);
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
  // Γ_ij = Π_{r=j+1..i} a_r for j ≤ i < n: e^{G'_i − G'_j} when no a_r = 0 lies in (j, i], else 0; each
  // rounded once from the fp64 difference (exp_rounded_once of the fp64 exponent), never as a ratio of e^{G}.
  __device__ float ratio(int i, int j, int n) const {
    return j <= i && i < n && reset[i] <= j ? exp_rounded_once(log_decay[i] - log_decay[j]) : 0.f;
  }
  // Γ into out [64][pitch] (row i, column j; zero above the diagonal and past n), by the whole block.
  __device__ void fill_ratios(float* out, int pitch, int n) const {
    for (int e = threadIdx.x; e < 64 * 64; e += kBlockThreads) out[e / 64 * pitch + e % 64] = ratio(e / 64, e % 64, n);
  }
  // γ_i = Π_{r≤i} a_r (0 past n).
  __device__ float from_start(int i, int n) const {
    return i < n && reset[i] < 0 ? exp_rounded_once(log_decay[i]) : 0.f;
  }
};

}  // namespace larc::gpu::detail::chunk_operands
