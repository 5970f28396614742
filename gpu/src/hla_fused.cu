// Fused recurrent kernels of the HLA family (SPEC §5; harness mechanisms "hla", "hla-normalized",
// "ahla", harness/src/mechanisms_hla.cpp), no decay (γ = 1): one launch per forward, the streaming
// state on chip in fp32, o_t computed per token as reference/hla_second.h's SecondOrderState::step
// and reference/hla_ahla.h's AhlaState::step compute it.
//
// Second order, masked (HLA-C1; the normalised read HLA-C2), per token t:
//   G ← G + k (kᵀ C_{t−1})        (the *previous* C)
//   S^K ← S^K + k kᵀ,  C ← C + q wᵀ
//   raw = (qᵀ S^K) C − qᵀ G,  o = raw, or raw[:V] / (raw[V] + ε) normalised
// AHLA (HLA-C6): P ← P + k wᵀ,  E ← E + k (qᵀ P_t),  raw = qᵀ E,  o = raw.
// w = v, or [v; 1] for the normalised read: the normaliser rides as one more value column (m in C,
// h in G; reference/hla_common.h), so a block computes its own denominator.
//
// Geometry: one block of kWarps warps per (b, h, tile of kColumns state columns: value columns plus
// the normaliser column when normalised). The state lives in registers: warp w owns the rows
// [w·RW, (w+1)·RW) of every K-row matrix (RW = KMAX / kWarps), lane l owns column l of C and G (or P
// and E) and the columns l + 32·m of S^K (the second order carries all of S^K in every tile). KMAX ∈
// {32, 64, 128} is K rounded up; q and k are zero past K, so rows and columns past K stay zero and
// add exact zeros. Every sum over the K rows is each warp's partial over its own rows (in row order)
// followed by a fixed pairwise tree over the kWarps partials, through shared memory: a fixed order, so
// results are bitwise deterministic, and a column's arithmetic depends neither on the tile it sits in
// nor on B, H or V (batch invariance). Inputs of token t + 1 are loaded while token t is computed.
#include <cstdint>

#include "families.h"
#include "hla_inputs.h"
#include "kernel_common.cuh"

namespace larc::gpu::detail {

namespace {

constexpr int kWarps = 16;
constexpr int kThreads = kWarps * 32;
constexpr int kColumns = 32;  // state columns per block: one per lane

// The block's (b, h, tile): blockIdx.x = (b·H + h)·tiles + tile; the tile holds the value columns
// [v0, v0 + n_values) and, when normalised, the normaliser as column n_values.
struct Tile {
  std::int64_t b, h;
  int v0, n_values, columns;
};

__device__ inline Tile tile_of(std::int64_t H, int V, int tiles, int values_per_tile, bool normalized) {
  const std::int64_t block = blockIdx.x;
  Tile tile;
  tile.h = block / tiles % H;
  tile.b = block / tiles / H;
  tile.v0 = static_cast<int>(block % tiles) * values_per_tile;
  tile.n_values = min(values_per_tile, V - tile.v0);
  tile.columns = tile.n_values + (normalized ? 1 : 0);
  return tile;
}

// q_t, k_t and the tile's v_t in their dtype, loaded one token ahead and stored to shared memory as
// fp32 at the start of the token, so that nothing waits for the load before the token begins.
template <typename T>
struct TokenPrefetch {
  T q{}, k{}, v{};

  __device__ void load(const Strided<const T>& qs, const Strided<const T>& ks, const Strided<const T>& vs,
                       const Tile& tile, std::int64_t t, int K) {
    const int tid = threadIdx.x;
    if (tid < K) {
      q = *qs.at(tile.b, t, tile.h, tid);
      k = *ks.at(tile.b, t, tile.h, tid);
    }
    if (tid < tile.n_values) v = *vs.at(tile.b, t, tile.h, tile.v0 + tid);
  }
  // w = v, or [v; 1]; entries past K and past the tile's columns keep their zeros.
  __device__ void store(float* q_s, float* k_s, float* w_s, const Tile& tile, int K) const {
    const int tid = threadIdx.x;
    if (tid < K) {
      q_s[tid] = to_float(q);
      k_s[tid] = to_float(k);
    }
    if (tid < tile.columns) w_s[tid] = tid < tile.n_values ? to_float(v) : 1.0f;
  }
};

// Σ over the warps' partials partials[w * stride + index], as a fixed pairwise tree.
__device__ __forceinline__ float sum_partials(const float* partials, int stride, int index) {
  float x[kWarps];
#pragma unroll
  for (int w = 0; w < kWarps; ++w) x[w] = partials[w * stride + index];
  static_assert(kWarps == 16, "the tree below has four levels");
#pragma unroll
  for (int w = 0; w < 8; ++w) x[w] += x[w + 8];
#pragma unroll
  for (int w = 0; w < 4; ++w) x[w] += x[w + 4];
  x[0] += x[2], x[1] += x[3];
  return x[0] + x[1];
}

// raw_j = Σ read − Σ cross (cross = nullptr: raw_j = Σ read), written as o_t, or o_t = raw_j /
// (raw_normaliser + ε); each writing thread sums the normaliser's partials itself.
template <typename T>
__device__ __forceinline__ void write_output(const Strided<T>& o, const Tile& tile, std::int64_t t, const float* read,
                                             const float* cross, bool normalized, float eps) {
  const int j = threadIdx.x;
  if (j >= tile.n_values) return;
  auto raw = [&](int col) {
    const float r = sum_partials(read, kColumns, col);
    return cross == nullptr ? r : r - sum_partials(cross, kColumns, col);
  };
  const float out = normalized ? raw(j) / (raw(tile.n_values) + eps) : raw(j);
  *o.at(tile.b, t, tile.h, tile.v0 + j) = from_float<T>(out);
}

template <typename T>
struct KernelArgs {
  Strided<const T> q, k, v;
  Strided<T> o;
  std::int64_t T_len, H;
  int K, V, tiles, values_per_tile;
  bool normalized;
  float eps;
};

// Second-order masked HLA (HLA-C1, HLA-C2). Per token, with r over the warp's rows, j = lane, and
// c = lane + 32·m over the lane's columns of S^K:
//   1. S^K[r, c] += k_r k_c; partials of (qᵀ S^K_t)_c and a_j = (kᵀ C_{t−1})_j
//   2. u = qᵀ S^K_t and a summed over the warps
//   3. G[r, j] += k_r a_j;  C[r, j] += q_r w_j; partials of (uᵀ C_t)_j and (qᵀ G_t)_j
//   4. o_t from their sums.
template <typename T, int KMAX>
__global__ void __launch_bounds__(kThreads, 1) hla_second_order_fused_recurrent(KernelArgs<T> p) {
  constexpr int RW = KMAX / kWarps, CL = KMAX / 32;
  __shared__ float q_s[KMAX], k_s[KMAX], u_s[KMAX], w_s[kColumns], a_s[kColumns];
  __shared__ float part_u[kWarps * KMAX], part_a[kWarps * kColumns], part_read[kWarps * kColumns],
      part_cross[kWarps * kColumns];
  const Tile tile = tile_of(p.H, p.V, p.tiles, p.values_per_tile, p.normalized);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, row0 = warp * RW;

  if (tid < KMAX) q_s[tid] = k_s[tid] = 0.0f;  // padding past K stays zero
  if (tid < kColumns) w_s[tid] = 0.0f;
  __syncthreads();

  float sk[RW][CL] = {}, c[RW] = {}, g[RW] = {};  // the reference's states start empty
  TokenPrefetch<T> next;
  if (p.T_len > 0) next.load(p.q, p.k, p.v, tile, 0, p.K);
  for (std::int64_t t = 0; t < p.T_len; ++t) {
    next.store(q_s, k_s, w_s, tile, p.K);
    if (t + 1 < p.T_len) next.load(p.q, p.k, p.v, tile, t + 1, p.K);
    __syncthreads();

    float kr[RW], qr[RW], kc[CL];
#pragma unroll
    for (int r = 0; r < RW; ++r) kr[r] = k_s[row0 + r], qr[r] = q_s[row0 + r];
#pragma unroll
    for (int m = 0; m < CL; ++m) kc[m] = k_s[lane + 32 * m];
    const float w = w_s[lane];
    float a = 0.0f;  // (kᵀ C_{t−1})_j over the warp's rows: G's update reads the previous C
#pragma unroll
    for (int r = 0; r < RW; ++r) a = fmaf(kr[r], c[r], a);
#pragma unroll
    for (int m = 0; m < CL; ++m) {
      float u = 0.0f;  // (qᵀ S^K_t)_c over the warp's rows
#pragma unroll
      for (int r = 0; r < RW; ++r) {
        sk[r][m] = fmaf(kr[r], kc[m], sk[r][m]);
        u = fmaf(qr[r], sk[r][m], u);
      }
      part_u[warp * KMAX + lane + 32 * m] = u;
    }
    part_a[warp * kColumns + lane] = a;
    __syncthreads();

    if (tid < KMAX) u_s[tid] = sum_partials(part_u, KMAX, tid);
    else if (tid < KMAX + kColumns) a_s[tid - KMAX] = sum_partials(part_a, kColumns, tid - KMAX);
    __syncthreads();

    const float a_j = a_s[lane];
    float read = 0.0f, cross = 0.0f;  // (uᵀ C_t)_j and (qᵀ G_t)_j over the warp's rows
#pragma unroll
    for (int r = 0; r < RW; ++r) {
      g[r] = fmaf(kr[r], a_j, g[r]);
      c[r] = fmaf(qr[r], w, c[r]);
      read = fmaf(u_s[row0 + r], c[r], read);
      cross = fmaf(qr[r], g[r], cross);
    }
    part_read[warp * kColumns + lane] = read;
    part_cross[warp * kColumns + lane] = cross;
    __syncthreads();

    write_output(p.o, tile, t, part_read, part_cross, p.normalized, p.eps);
  }
}

// AHLA (HLA-C6). Per token, with r over the warp's rows and j = lane:
//   1. P[r, j] += k_r w_j; partial of b_j = (qᵀ P_t)_j
//   2. b summed over the warps
//   3. E[r, j] += k_r b_j; partial of (qᵀ E_t)_j
//   4. o_t from its sum.
template <typename T, int KMAX>
__global__ void __launch_bounds__(kThreads, 1) ahla_fused_recurrent(KernelArgs<T> p) {
  constexpr int RW = KMAX / kWarps;
  __shared__ float q_s[KMAX], k_s[KMAX], w_s[kColumns], b_s[kColumns];
  __shared__ float part_b[kWarps * kColumns], part_read[kWarps * kColumns];
  const Tile tile = tile_of(p.H, p.V, p.tiles, p.values_per_tile, p.normalized);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, row0 = warp * RW;

  if (tid < KMAX) q_s[tid] = k_s[tid] = 0.0f;  // padding past K stays zero
  if (tid < kColumns) w_s[tid] = 0.0f;
  __syncthreads();

  float pm[RW] = {}, e[RW] = {};  // P and E, empty at the start
  TokenPrefetch<T> next;
  if (p.T_len > 0) next.load(p.q, p.k, p.v, tile, 0, p.K);
  for (std::int64_t t = 0; t < p.T_len; ++t) {
    next.store(q_s, k_s, w_s, tile, p.K);
    if (t + 1 < p.T_len) next.load(p.q, p.k, p.v, tile, t + 1, p.K);
    __syncthreads();

    float kr[RW], qr[RW];
#pragma unroll
    for (int r = 0; r < RW; ++r) kr[r] = k_s[row0 + r], qr[r] = q_s[row0 + r];
    const float w = w_s[lane];
    float b = 0.0f;  // (qᵀ P_t)_j over the warp's rows: E's update reads P with this token included
#pragma unroll
    for (int r = 0; r < RW; ++r) {
      pm[r] = fmaf(kr[r], w, pm[r]);
      b = fmaf(qr[r], pm[r], b);
    }
    part_b[warp * kColumns + lane] = b;
    __syncthreads();

    if (tid < kColumns) b_s[tid] = sum_partials(part_b, kColumns, tid);
    __syncthreads();

    const float b_j = b_s[lane];
    float read = 0.0f;  // (qᵀ E_t)_j over the warp's rows
#pragma unroll
    for (int r = 0; r < RW; ++r) {
      e[r] = fmaf(kr[r], b_j, e[r]);
      read = fmaf(qr[r], e[r], read);
    }
    part_read[warp * kColumns + lane] = read;
    __syncthreads();

    write_output(p.o, tile, t, part_read, nullptr, p.normalized, p.eps);
  }
}

enum class HlaRecurrence { second_order, ahla };

template <typename T, int KMAX>
void enqueue(HlaRecurrence r, const KernelArgs<T>& p, unsigned blocks, cudaStream_t stream) {
  if (r == HlaRecurrence::second_order) launch_kernel(hla_second_order_fused_recurrent<T, KMAX>, blocks, kThreads, 0, stream, p);
  else launch_kernel(ahla_fused_recurrent<T, KMAX>, blocks, kThreads, 0, stream, p);
}

Status launch_hla(const LaunchArgs& args, const char* name, HlaRecurrence r, bool normalized) {
  Validator val(name, args);
  const HlaInputs in = validate_hla(val);
  const Dtype dt = in.dtype;
  const int values_per_tile = kColumns - (normalized ? 1 : 0);
  const std::int64_t B = val.size('B'), T = val.size('T'), H = val.size('H');
  const int K = static_cast<int>(val.size('K')), V = static_cast<int>(val.size('V'));
  if (val.ok() && (T == 0 || B == 0 || H == 0)) return Status::success();  // o is empty: nothing to write
  const int tiles = val.ok() ? (V + values_per_tile - 1) / values_per_tile : 0;
  const std::int64_t blocks = B * H * tiles;  // B·T·H·V elements of o exist, so no overflow
  val.require_grid(blocks);
  if (!val.ok()) return val.status();

  dispatch_float(dt, [&](auto tag) {
    using E = decltype(tag);
    const KernelArgs<E> p{strided<const E>(in.q), strided<const E>(in.k), strided<const E>(in.v), strided<E>(in.o), T, H,
                          K, V, tiles, values_per_tile, normalized, normalized ? kHlaNormalizedEps : 0.0f};
    const auto n = static_cast<unsigned>(blocks);
    if (K <= 32) enqueue<E, 32>(r, p, n, stream_of(args));
    else if (K <= 64) enqueue<E, 64>(r, p, n, stream_of(args));
    else enqueue<E, 128>(r, p, n, stream_of(args));
  });
  return launch_status(name);
}

Kernel hla_kernel(const char* name, const char* mechanism, const char* description, HlaRecurrence r, bool normalized) {
  return hla_entry(name, mechanism, description,
                   [name, r, normalized](const LaunchArgs& args) { return launch_hla(args, name, r, normalized); });
}

}  // namespace

void append_hla_kernels(std::vector<Kernel>& out) {
  out.push_back(hla_kernel("hla-fused-recurrent", "hla", "second-order masked HLA, S^K, C and G in registers (HLA-C1)",
                           HlaRecurrence::second_order, false));
  out.push_back(hla_kernel("hla-normalized-fused-recurrent", "hla-normalized",
                           "second-order masked HLA over its normaliser + 1e-6, in registers (HLA-C2)",
                           HlaRecurrence::second_order, true));
  out.push_back(hla_kernel("ahla-fused-recurrent", "ahla", "asymmetric HLA, P and E in registers (HLA-C6)",
                           HlaRecurrence::ahla, false));
}

}  // namespace larc::gpu::detail
