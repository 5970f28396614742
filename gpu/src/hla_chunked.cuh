// Shared pieces of the chunked HLA kernels (hla_chunked.cu: second order; ahla_chunked.cu: AHLA; SPEC §5,
// Fig. 1(C) and 2(C), HLA-C10; docs/gpu-kernels/hla.md): the inputs and outputs of the fused recurrent kernels
// (hla_fused.cu: q, k [B,T,H,K], v, o [B,T,H,V], γ = 1, no state in or out, K ≤ 128), chunks of C = 64
// tokens, w = v or [v; 1] for the normalised read (dw = V + 1 columns: the normaliser is w's last).
//
// Both families carry a d × d or d × dw sum and a d × dw cross sum over the chunks before chunk c. Every
// product of a chunk is independent of the other chunks once those chunk-start sums are known, and the
// sums are exclusive prefix sums over chunks, elementwise. Five launches (run_stages):
//   1. summary  the chunk's own part of the first sum, per chunk, fp32 [records][KP][·]
//   2. prefix   the first sum at each chunk start, in place: sequential over chunks, elementwise
//               (chunk_prefix.cuh)
//   3. cross    the chunk's part X of the cross sum, from the first sum at its start, per chunk
//   4. prefix   the cross sum at each chunk start, in place
//   5. output   o per chunk from both chunk-start sums and the chunk's own tokens
// Records are [H][B][chunks] (the record of (h, b, c) is (h·B + b)·chunks + c, one block each).
// Arithmetic (chunk_operands.cuh): bf16/fp16 products on tensor cores, intermediates on the sums' path in
// three bf16 terms, those read only by o in two; fp32 inputs by FMA in fp64.
#pragma once

#include <cstdint>
#include <string>

#include "chunk_launch.cuh"
#include "chunk_prefix.cuh"
#include "chunk_operands.cuh"
#include "delta_rule_fused.cuh"  // delta_rule::TokenRows, rows_of
#include "hla_inputs.h"

namespace larc::gpu::detail::hla_chunked {

using namespace chunk_operands;
using delta_rule::rows_of;
using delta_rule::TokenRows;

constexpr int kChunk = 64;
constexpr int kTile = 64;  // value columns per product pass
constexpr int kThreads = kBlockThreads;
constexpr int kWarps = kThreads / 32;
constexpr int kSumTerms = 3;   // intermediates on the sums' path
constexpr int kReadTerms = 2;  // intermediates read only by o (rounded to the input dtype)

template <class T>
struct Params {
  Strided<const T> q, k, v;
  Strided<T> o;
  float* first_sum = nullptr;  // [records][KP][first_width]: S (second order) or P (AHLA)
  float* cross_sum = nullptr;  // [records][KP][dw]: F (second order) or E (AHLA)
  float* rows = nullptr;       // AHLA: Yᵀ [records][dw][64]
  std::int64_t tokens = 0, chunks = 0, B = 0;
  int H = 0, K = 0, V = 0, dw = 0;
  bool normalized = false;
};

// The block's chunk: its record, sequence b, head h, first token t0 and n ≤ 64 tokens.
struct Chunk {
  std::int64_t record, b, t0;
  int h, n;
};
template <class T>
__device__ __forceinline__ Chunk chunk_of(const Params<T>& p) {
  Chunk c;
  c.record = blockIdx.x;
  const std::int64_t per_head = p.B * p.chunks, slot = c.record % per_head;
  c.h = static_cast<int>(c.record / per_head);
  c.b = slot / p.chunks;
  c.t0 = slot % p.chunks * kChunk;
  c.n = static_cast<int>(p.tokens - c.t0 < kChunk ? p.tokens - c.t0 : kChunk);
  return c;
}

// The chunk's tokens as fp32, zero past n, past K and past dw.
template <class T>
struct ChunkInputs {
  TokenRows<const T> q, k, v;
  std::int64_t t0;
  int n, K, V;
  bool normalized;
  __device__ float query(int i, int d) const { return i < n && d < K ? to_float(q(t0 + i, d)) : 0.f; }
  __device__ float key(int i, int d) const { return i < n && d < K ? to_float(k(t0 + i, d)) : 0.f; }
  // w = v, or [v; 1]: column V is the normaliser's.
  __device__ float value(int i, int col) const {
    if (i >= n) return 0.f;
    if (col < V) return to_float(v(t0 + i, col));
    return normalized && col == V ? 1.f : 0.f;
  }
};
template <class T>
__device__ __forceinline__ ChunkInputs<T> inputs_of(const Params<T>& p, const Chunk& c) {
  return {rows_of(p.q, c.b, c.h), rows_of(p.k, c.b, c.h), rows_of(p.v, c.b, c.h), c.t0, c.n, p.K, p.V, p.normalized};
}

// A = L ⊙ (Q Kᵀ) (diagonal included) into a_op, from Q and K as token rows.
template <class T, int KP, int TI, int TA>
__device__ __forceinline__ void form_causal_scores(const Operand<T, TA, kChunk>& a_op, const Operand<T, TI, KP>& q_op,
                                                   const Operand<T, TI, KP>& k_op) {
  for_each_strip<kChunk, kChunk, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, KP>(acc, q_op, k_op, m0, n0);
    for_each_pair(acc, m0, n0, [&](int t, int i, float x0, float x1) {
      store_pair(a_op, t, i, i <= t ? x0 : 0.f, i + 1 <= t ? x1 : 0.f);
    });
  });
}

// Strip s ∈ {0, 1} of this warp in a 64 × 64 block: its first row and column.
__device__ __forceinline__ int strip_row(int s) { return (threadIdx.x / 32 + kWarps * s) % 4 * 16; }
__device__ __forceinline__ int strip_col(int s) { return (threadIdx.x / 32 + kWarps * s) / 4 * 16; }

// The output tiles in the order the output kernels visit them: the normaliser's tile first, so that
// its column (raw_V) is known when the other columns are divided by it.
__host__ __device__ __forceinline__ int output_tile_start(int i, int V, int dw, bool normalized) {
  const int tiles = (dw + kTile - 1) / kTile, first = normalized ? V / kTile : 0;
  return (first + i) % tiles * kTile;
}

// X[d][v0 + col] = (A B)[d][col] for the [KP][kTile] tile at columns v0 … of an fp32 [KP][dw] sum
// (columns < dw), A an operand of KP rows and B of kTile, both KD deep.
template <class T, int KP, int KD, int TA, int TB>
__device__ __forceinline__ void write_sum_tile(float* X, int dw, int v0, const Operand<T, TA, KD>& a,
                                               const Operand<T, TB, KD>& b) {
  for_each_strip<KP, kTile, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, KD>(acc, a, b, m0, n0);
    for_each_element(acc, m0, n0, [&](int d, int col, float y) {
      if (v0 + col < dw) X[std::int64_t{d} * dw + v0 + col] = y;
    });
  });
}

// o for the tile's columns v0 … = Q Sᵀ_tile + A B_tile (rows < n): raw, or raw_j / (raw_V + ε) normalised
// (hla_fused.cu's write_output); den (64 floats, shared) keeps raw_V across the tiles. Each warp's two
// strips of the 64 × kTile block.
template <class T, int KP, int TQ, int TS, int TA, int TB>
__device__ __forceinline__ void write_output_tile(const Params<T>& p, const Chunk& ch, int v0, float* den,
                                                  const Operand<T, TQ, KP>& q, const Operand<T, TS, KP>& sum,
                                                  const Operand<T, TA, kChunk>& a, const Operand<T, TB, kChunk>& b) {
  float acc[2][2][4];
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    zero(acc[s]);
    warp_product<T, KP>(acc[s], q, sum, strip_row(s), strip_col(s));
    warp_product<T, kChunk>(acc[s], a, b, strip_row(s), strip_col(s));
  }
  if (p.normalized && v0 <= p.V && p.V < v0 + kTile) {
#pragma unroll
    for (int s = 0; s < 2; ++s)
      for_each_element(acc[s], strip_row(s), strip_col(s), [&](int t, int col, float y) {
        if (v0 + col == p.V) den[t] = y;
      });
    __syncthreads();
  }
  const TokenRows<T> o = rows_of(p.o, ch.b, ch.h);
#pragma unroll
  for (int s = 0; s < 2; ++s)
    for_each_element(acc[s], strip_row(s), strip_col(s), [&](int t, int col, float y) {
      if (t < ch.n && v0 + col < p.V) o(ch.t0 + t, v0 + col) = from_float<T>(p.normalized ? y / (den[t] + kHlaNormalizedEps) : y);
    });
}

// One family's three per-chunk kernels, their shared memory and the width of its first sum.
template <class T>
struct Stages {
  void (*summary)(Params<T>), (*cross)(Params<T>), (*output)(Params<T>);
  std::size_t summary_smem, cross_smem, output_smem;
  int first_width;      // columns of the first sum: KP (S) or dw (P)
  bool rows_workspace;  // AHLA's Yᵀ
};

template <class T, int KP>
Status run_stages(Params<T> p, const Stages<T>& s, cudaStream_t stream, const std::string& name) {
  using namespace chunk_launch;
  cudaError_t e = allow_smem(s.summary, s.summary_smem);
  if (e == cudaSuccess) e = allow_smem(s.cross, s.cross_smem);
  if (e == cudaSuccess) e = allow_smem(s.output, s.output_smem);
  if (e != cudaSuccess) return cuda_failure(name, "shared-memory opt-in", e);

  const std::int64_t groups = p.H * p.B, records = groups * p.chunks;
  const std::int64_t first_words = std::int64_t{KP} * s.first_width, cross_words = std::int64_t{KP} * p.dw;
  const std::int64_t row_words = s.rows_workspace ? std::int64_t{kChunk} * p.dw : 0;
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(records * (first_words + cross_words + row_words));
  if (const Status st = allocate_workspace(name, bytes, stream, &p.first_sum); !st) return st;
  p.cross_sum = p.first_sum + records * first_words;
  p.rows = s.rows_workspace ? p.cross_sum + records * cross_words : nullptr;

  const auto blocks = static_cast<unsigned>(records);
  const auto prefix = [&](float* sums, std::int64_t words) {  // float4 records of words / 4, all summed
    chunk_prefix::enqueue(reinterpret_cast<float4*>(sums), p.chunks, words / 4, words / 4, groups, stream);
  };
  launch_kernel(s.summary, blocks, kThreads, s.summary_smem, stream, p);
  prefix(p.first_sum, first_words);
  launch_kernel(s.cross, blocks, kThreads, s.cross_smem, stream, p);
  prefix(p.cross_sum, cross_words);
  launch_kernel(s.output, blocks, kThreads, s.output_smem, stream, p);
  return finish(name, p.first_sum, stream);
}

// Validates and launches one family: stages_for<T, KP>() gives its kernels (KP = 64 for K ≤ 64, else 128).
template <template <class, int> class StagesFor>
Status launch(const LaunchArgs& args, const std::string& name, bool normalized) {
  Validator val(name, args);
  const HlaInputs in = validate_hla(val);
  const std::int64_t B = val.size('B'), T_len = val.size('T'), H = val.size('H');
  const std::int64_t chunks = (T_len + kChunk - 1) / kChunk;
  val.require_grid(H * B * chunks);
  if (!val.ok()) return val.status();
  if (T_len == 0 || B * H == 0) return Status::success();  // o is empty: nothing to write
  return dispatch_float(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    p.q = strided<const T>(in.q);
    p.k = strided<const T>(in.k);
    p.v = strided<const T>(in.v);
    p.o = strided<T>(in.o);
    p.tokens = T_len;
    p.chunks = chunks;
    p.B = B;
    p.H = static_cast<int>(H);
    p.K = static_cast<int>(val.size('K'));
    p.V = static_cast<int>(val.size('V'));
    p.normalized = normalized;
    p.dw = p.V + (normalized ? 1 : 0);
    if (p.K <= 64) return run_stages<T, 64>(p, StagesFor<T, 64>::get(p.dw), stream_of(args), name);
    return run_stages<T, 128>(p, StagesFor<T, 128>::get(p.dw), stream_of(args), name);
  });
}

}  // namespace larc::gpu::detail::hla_chunked
