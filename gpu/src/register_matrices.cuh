// Matrices held in the registers of one block of kBlockThreads threads, shared by the VLA and CCQ
// kernels (vla_fused.cu, ccq_fused.cu; docs/gpu-kernels/vla.md, ccq.md):
//
//   SquareRows<KMAX>     a KMAX×KMAX fp32 matrix (VLA's penalty A, CCQ's key Gram C): thread t owns row
//                        t / kParts and, of its columns, the runs of 4 numbered t % kParts (run r holds
//                        columns 4r..4r+3 and runs are dealt round-robin to the kParts lanes of the row,
//                        adjacent lanes of one warp).
//   StateColumns<KMAX>   a KMAX×kTileV tile of a K×V state (VLA's memory Sᵀ, the backbone's S): thread t
//                        owns column t / kRowGroups of the tile and, of its rows, the runs of 4 numbered
//                        t % kRowGroups (runs dealt round-robin to the kRowGroups lanes of the column).
//
// Runs of 4 let a thread read the 4 entries of a shared vector it needs with one 16-byte load; the
// lanes of a warp then read adjacent 16-byte pieces (no bank conflicts). Every product is an
// in-thread sum in a fixed order (four accumulators, one per position in the run) followed by a
// butterfly (__shfl_xor_sync) over the lanes that share a row or a column; the butterfly leaves the
// same bits in every lane, so the results are deterministic and identical in every lane that needs
// them. Vectors the products take live in 16-byte-aligned shared memory with KMAX entries, entries
// K..KMAX−1 zero; rows and columns ≥ K of a matrix stay exactly zero, so padding adds nothing to any
// sum. KMAX is 32, 64 or 128 (any K ≤ 128).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernel_common.cuh"

namespace larc::gpu::detail::onchip {

constexpr int kBlockThreads = 256;
constexpr int kWarps = kBlockThreads / 32;
constexpr int kMaxK = 128;
constexpr int kL2AheadTokens = 8;  // inputs are hinted into L2 this many tokens before they are loaded

// The sum of x over aligned groups of `width` adjacent lanes (a power of two ≤ 32), in every lane of
// the group. Every lane of the warp must call it.
template <int width>
__device__ __forceinline__ float group_sum(float x) {
#pragma unroll
  for (int offset = width / 2; offset > 0; offset /= 2) x += __shfl_xor_sync(0xffffffffu, x, offset);
  return x;
}

// The 4 floats of shared memory at p (16-byte aligned).
__device__ __forceinline__ float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// The sum of four accumulators in a fixed order.
__device__ __forceinline__ float sum4(const float (&acc)[4]) { return (acc[0] + acc[1]) + (acc[2] + acc[3]); }

// acc[i] += a[first + i] · x.i for i < 4 (x's components in order).
template <int N>
__device__ __forceinline__ void fma4(float (&acc)[4], const float (&a)[N], int first, float4 x) {
  acc[0] = fmaf(a[first], x.x, acc[0]);
  acc[1] = fmaf(a[first + 1], x.y, acc[1]);
  acc[2] = fmaf(a[first + 2], x.z, acc[2]);
  acc[3] = fmaf(a[first + 3], x.w, acc[3]);
}

// a[first + i] += scale · x.i for i < 4.
template <int N>
__device__ __forceinline__ void axpy4(float (&a)[N], int first, float scale, float4 x) {
  a[first] = fmaf(scale, x.x, a[first]);
  a[first + 1] = fmaf(scale, x.y, a[first + 1]);
  a[first + 2] = fmaf(scale, x.z, a[first + 2]);
  a[first + 3] = fmaf(scale, x.w, a[first + 3]);
}

// x · y over KMAX entries in shared memory, computed by one whole warp (lane i sums entries
// i, i + 32, ...); every lane of every warp that calls it gets the same bits.
template <int KMAX>
__device__ __forceinline__ float warp_dot(const float* x, const float* y) {
  const int lane = threadIdx.x % 32;
  float s = 0.f;
#pragma unroll
  for (int c = 0; c < KMAX / 32; ++c) s += x[lane + 32 * c] * y[lane + 32 * c];
  return group_sum<32>(s);
}

template <int KMAX>
struct SquareRows {
  static_assert(KMAX == 32 || KMAX == 64 || KMAX == 128);
  static constexpr int kParts = kBlockThreads / KMAX;  // lanes per row
  static constexpr int kCols = KMAX / kParts;          // entries per thread, kCols / 4 runs
  float a[kCols];
  int row = threadIdx.x / kParts, part = threadIdx.x % kParts;

  // The first column of the thread's run r, and the column of its entry c.
  __device__ __forceinline__ int run(int r) const { return 4 * (r * kParts + part); }
  __device__ __forceinline__ int col(int c) const { return run(c / 4) + c % 4; }

  // diagonal·I on the K×K block, zero elsewhere.
  __device__ __forceinline__ void set_diagonal(float diagonal, int K) {
#pragma unroll
    for (int c = 0; c < kCols; ++c) a[c] = row < K && col(c) == row ? diagonal : 0.f;
  }

  // (M x)_row for x in shared memory; the same bits in the kParts lanes of the row.
  __device__ __forceinline__ float row_times(const float* x) const {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int r = 0; r < kCols / 4; ++r) fma4(acc, a, 4 * r, load4(x + run(r)));
    return group_sum<kParts>(sum4(acc));
  }

  // M ← M + left_row · rightᵀ (rank one), right in shared memory, left_row = left[row].
  __device__ __forceinline__ void add_outer(float left_row, const float* right) {
#pragma unroll
    for (int r = 0; r < kCols / 4; ++r) axpy4(a, 4 * r, left_row, load4(right + run(r)));
  }

  // dst(i, j) = M(i, j) for i, j < K (dst a [B,H,K,K] view at head (b, h)).
  __device__ __forceinline__ void store(const Strided<float>& dst, std::int64_t b, std::int64_t h, int K) const {
    if (row >= K) return;
#pragma unroll
    for (int c = 0; c < kCols; ++c)
      if (col(c) < K) *dst.at(b, h, row, col(c)) = a[c];
  }
};

template <int KMAX>
struct StateColumns {
  static_assert(KMAX == 32 || KMAX == 64 || KMAX == 128);
  static constexpr int kRowGroups = 8;                         // lanes per column
  static constexpr int kTileV = kBlockThreads / kRowGroups;    // columns per block
  static constexpr int kRows = KMAX / kRowGroups;              // entries per thread, kRows / 4 runs
  float x[kRows] = {};
  int group = threadIdx.x % kRowGroups, column = threadIdx.x / kRowGroups;

  // The first row of the thread's run r, and the row of its entry i.
  __device__ __forceinline__ int run(int r) const { return 4 * (r * kRowGroups + group); }
  __device__ __forceinline__ int row(int i) const { return run(i / 4) + i % 4; }
  // One lane per column stores the column's outputs.
  __device__ __forceinline__ bool stores_column() const { return group == 0; }

  // (Xᵀ y)_column for y in shared memory; the same bits in the kRowGroups lanes of the column.
  __device__ __forceinline__ float column_dot(const float* y) const {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int r = 0; r < kRows / 4; ++r) fma4(acc, x, 4 * r, load4(y + run(r)));
    return group_sum<kRowGroups>(sum4(acc));
  }

  // X ← X + left · (value of this column)ᵀ: X(i, column) += left[i] · value, left in shared memory.
  __device__ __forceinline__ void add_outer(const float* left, float value) {
#pragma unroll
    for (int r = 0; r < kRows / 4; ++r) axpy4(x, 4 * r, value, load4(left + run(r)));
  }

  // X ← α X.
  __device__ __forceinline__ void scale(float alpha) {
#pragma unroll
    for (int i = 0; i < kRows; ++i) x[i] *= alpha;
  }

  // X ← Diag(d) X, d in shared memory.
  __device__ __forceinline__ void scale_rows(const float* d) {
#pragma unroll
    for (int r = 0; r < kRows / 4; ++r) {
      const float4 dr = load4(d + run(r));
      x[4 * r] *= dr.x;
      x[4 * r + 1] *= dr.y;
      x[4 * r + 2] *= dr.z;
      x[4 * r + 3] *= dr.w;
    }
  }

  // dst(i, j) = X(i, column) for i < K, j = the column's index in V when < V (dst a [B,H,K,V] view).
  __device__ __forceinline__ void store(const Strided<float>& dst, std::int64_t b, std::int64_t h, int K,
                                        std::int64_t j, std::int64_t V) const {
    if (j >= V) return;
#pragma unroll
    for (int i = 0; i < kRows; ++i)
      if (row(i) < K) *dst.at(b, h, row(i), j) = x[i];
  }
};

// Zeroes `count` floats of shared memory with the whole block (call before the first __syncthreads).
__device__ __forceinline__ void zero_shared(float* p, int count) {
  for (int i = threadIdx.x; i < count; i += kBlockThreads) p[i] = 0.f;
}

// Calls f(std::integral_constant<int, KMAX>{}) with the smallest KMAX ∈ {32, 64, 128} holding K.
template <typename F>
void dispatch_key_capacity(std::int64_t K, F&& f) {
  if (K <= 32) f(std::integral_constant<int, 32>{});
  else if (K <= 64) f(std::integral_constant<int, 64>{});
  else f(std::integral_constant<int, 128>{});
}

// The block index of (head bh, value tile) is bh · tiles + tile; heads in gridDim.x (may exceed 65,535).
struct BlockHead {
  std::int64_t b;
  int h, tile;
};
__device__ __forceinline__ BlockHead block_head(int H, int tiles) {
  const std::int64_t block = blockIdx.x;
  return {block / tiles / H, static_cast<int>(block / tiles % H), static_cast<int>(block % tiles)};
}

// The launch geometry: one block per (b, h, tile of StateColumns' kTileV value columns).
struct ColumnTiles {
  std::int64_t tiles = 0;   // per head
  std::int64_t blocks = 0;  // B · H · tiles, in gridDim.x
};

// Validates 1 ≤ K ≤ max_k and V ≥ 1 and the grid against gridDim.x.
inline ColumnTiles require_column_tiles(Validator& v, std::int64_t max_k) {
  v.require_size('K', 1, max_k);
  v.require_size('V', 1, 0);
  constexpr std::int64_t tile = StateColumns<32>::kTileV;
  ColumnTiles g;
  g.tiles = (v.size('V') + tile - 1) / tile;
  g.blocks = v.size('B') * v.size('H') * g.tiles;
  v.require_grid(g.blocks);
  return g;
}

}  // namespace larc::gpu::detail::onchip
