// The fused recurrent kernel of the delta-rule / linear-attention family (docs/gpu-kernels/delta-rule.md,
// "Delta-rule family"): one templated kernel, a small compile-time policy per mechanism.
//
// Per head and token t (SPEC "Baselines"; the order of reference State::step, which is FLA's):
//   decay   none | S ← α_t S, α_t = e^{g_t} (GDN, KLA) | S ← Diag(e^{gk_t}) S (GLA)
//   write   additive: S ← S + φ(k_t) v_t^T (LA, GLA), z ← z + φ(k_t) (ratio LA)
//           delta:    u = β_t (v_t − S^T k_t); S ← S + k_t u^T (DeltaNet, GDN), with
//                     β_t = η_t / (‖k_t‖² + ε) computed here from k_t for KLA (SPEC §3)
//   read    o_t = S^T (scale q_t) | scale · S^T q_t (LA) | S^T φ(q_t) / (z^T φ(q_t) + ε) (ratio LA)
//
// Mapping. One block of kWarps warps per (sequence, head, tile of Geometry::tile_v value columns),
// the big index in gridDim.x. Each warp owns cols_per_warp columns; lane = row_group ·
// cols_per_warp + column, so the row_groups lanes of one column split K into contiguous runs and
// hold that K×1 slice of the fp32 state in registers. Prefill uses 8 row groups (tiles of 16
// columns: many blocks for few heads); decode (CHUNK = 1) uses 4 (tiles of 32 columns: a warp reads
// whole 32-byte sectors of a state row and a block whole 128-byte lines).
//
// Sums over K (k^T S, q^T S, z^T q, ‖k‖²) always follow one tree, whatever the mapping: K is cut into
// kLeafRuns runs of KMAX/8 rows, each summed with four accumulators in a fixed order, and the run
// sums are combined pairwise as a butterfly (runs g and g^1, then g^2, then g^4) — in registers
// where a lane holds both runs, by __shfl_xor_sync across lanes otherwise. Every lane of a column
// ends with the same bits, prefill and decode kernels give the same bits, no atomics.
//
// Inputs are staged per chunk of CHUNK tokens into shared memory as fp32 (features, decays and the
// query scale applied there, off the per-token dependency chain), double-buffered: the global loads
// of chunk c+1 are issued into registers before chunk c is computed and written to the other buffer
// after it. Rows K..KMAX−1 and columns V.. are staged as zeros, so the padded state stays exactly
// zero and adds nothing to any sum; only the state and o accesses are guarded.
#pragma once

#include <cstdint>

#include "kernel_common.cuh"

namespace larc::gpu::detail::delta_rule {

enum class Decay { none, scalar, channel };
enum class Write { additive, delta, delta_key_normalised };
enum class Read { scaled_query, scaled_output, ratio };

template <Decay D, Write W, Read R>
struct Policy {
  static constexpr Decay decay = D;
  static constexpr Write write = W;
  static constexpr Read read = R;
  static constexpr bool delta = W != Write::additive;
  static constexpr bool ratio = R == Read::ratio;  // ratio LA: φ = ELU + 1 features and the normaliser z
};

using LinearAttention = Policy<Decay::none, Write::additive, Read::scaled_output>;
using RatioLinearAttention = Policy<Decay::none, Write::additive, Read::ratio>;
using DeltaNet = Policy<Decay::none, Write::delta, Read::scaled_query>;
using GatedDeltaNet = Policy<Decay::scalar, Write::delta, Read::scaled_query>;
using KaczmarzLinearAttention = Policy<Decay::scalar, Write::delta_key_normalised, Read::scaled_query>;
using GatedLinearAttention = Policy<Decay::channel, Write::additive, Read::scaled_query>;

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kLeafRuns = 8;  // K is summed as 8 runs of KMAX/8 rows

// Sizes for keys of at most KMAX rows (64, 128 or 256) split over ROW_GROUPS lanes per column.
template <int KMAX, int ROW_GROUPS>
struct Geometry {
  static constexpr int cols_per_warp = 32 / ROW_GROUPS;
  static constexpr int tile_v = kWarps * cols_per_warp;  // value columns per block
  static constexpr int run = KMAX / kLeafRuns;           // rows per leaf run
  static constexpr int runs_per_lane = kLeafRuns / ROW_GROUPS;
  static constexpr int rows = run * runs_per_lane;  // state rows per lane
  // Shared-memory floats between two runs: ≡ 4 (mod 8), so the runs a quarter-warp reads with one
  // 16-byte load fall in different banks.
  static constexpr int run_stride = run + 4;
  static constexpr int key_pitch = kLeafRuns * run_stride;  // floats per staged token of k, q, gk
  static_assert(run % 8 == 0 && ROW_GROUPS * cols_per_warp == 32 && runs_per_lane * ROW_GROUPS == kLeafRuns);
};

template <int KMAX>
constexpr int kPrefillChunk = 2048 / KMAX;  // tokens staged per chunk over sequences

template <int KMAX, int CHUNK>
using GeometryFor = Geometry<KMAX, CHUNK == 1 ? 4 : 8>;

// How a launch is ordered after the work before it on its stream. `stream`: the ordinary full
// dependency. `programmatic`: the kernel may be a programmatic dependent launch (PDL) of the launch
// before it — a decode step of a graph of steps on one state (delta_rule_decode_graph.cu) — and start
// while that step is still running: it signals its own dependents at once
// (cudaTriggerProgrammaticLaunchCompletion, which only lets them be scheduled; they still wait for
// this grid's completion and memory flush before reading what it writes), loads its token's inputs,
// and only then waits (cudaGridDependencySynchronize: every prerequisite grid completed and its writes
// visible) before its first read of a state and its first global write of any kind. Launched without
// the PDL attribute, the wait returns at once. A caller must keep the inputs (q, k, v, gates,
// cu_seqlens) apart from every step's outputs: they are the only memory read before the wait.
enum class Dependency { stream, programmatic };

template <class T>
struct Params {
  Strided<const T> q, k, v;
  Strided<const T> gate;  // g [B,T,H] (scalar decay) or gk [B,T,H,K] (per-channel decay)
  Strided<const T> step;  // beta, or eta for KLA, [B,T,H]
  Strided<T> o;
  Strided<const float> initial_state, initial_normalizer;  // optional (data == nullptr when absent)
  Strided<float> final_state, final_normalizer;            // optional
  const void* cu_seqlens = nullptr;                        // varlen: [N+1] int32 or int64; B = 1
  bool cu_seqlens_int64 = false;
  std::int64_t tokens = 0;  // T: tokens per batch entry (varlen: all packed tokens)
  int H = 0, K = 0, V = 0;  // H: the value heads (v, gates, states, o)
  int group = 1;             // value heads per query/key head (FLA's GVA): head h reads q, k of head h / group
  int tiles = 0;     // ceil(V / tile_v)
  int capacity = 0;  // tokens per staged chunk (≤ CHUNK, ≤ T)
  float scale = 1, eps = 0;
};

// One (batch entry, head) of a [B,T,H,D] or [B,T,H] tensor: element (t, d) at data[t·token_stride + d]
// (the innermost stride is 1 wherever D > 1). Base pointers and strides are formed once per block;
// indexing a Strided per element in the loops costs 64-bit multiplies the compiler cannot hoist.
template <class T>
struct TokenRows {
  T* data = nullptr;
  std::int64_t token_stride = 0;
  __device__ __forceinline__ T& operator()(std::int64_t t, int d = 0) const { return data[t * token_stride + d]; }
};

template <class T>
__device__ __forceinline__ TokenRows<T> rows_of(const Strided<T>& s, std::int64_t b, int h) {
  return {s.data + b * s.s0 + h * s.s2, s.s1};
}

// Offset i of FLA's cu_seqlens ([N+1] int32 or int64) of a kernel's parameters p.
template <class P>
__device__ __forceinline__ std::int64_t sequence_offset(const P& p, std::int64_t i) {
  return p.cu_seqlens_int64 ? static_cast<const std::int64_t*>(p.cu_seqlens)[i]
                            : static_cast<const std::int32_t*>(p.cu_seqlens)[i];
}

// Sequence n's tokens [bos, eos) of batch entry b (varlen: entry 0, bounds from cu_seqlens); false when
// cu_seqlens is corrupt there.
template <class P>
__device__ __forceinline__ bool sequence_bounds(const P& p, std::int64_t n, std::int64_t& b, std::int64_t& bos,
                                                std::int64_t& eos) {
  b = n;
  bos = 0;
  eos = p.tokens;
  if (p.cu_seqlens == nullptr) return true;
  b = 0;
  bos = sequence_offset(p, n);
  eos = sequence_offset(p, n + 1);
  return 0 <= bos && bos <= eos && eos <= p.tokens;
}

// The inputs of one sequence and head.
template <class T>
struct SequenceInputs {
  TokenRows<const T> q, k, v, gate, step;
  int K, V;
};

// Floats of one staging buffer holding `capacity` tokens, a multiple of 4 (16-byte aligned buffers).
template <class Pol, class G>
__host__ __device__ constexpr int staging_floats(int capacity) {
  const int per_token = (Pol::decay == Decay::channel ? 3 : 2) * G::key_pitch + G::tile_v + 2;
  return (capacity * per_token + 3) / 4 * 4;
}

// One staging buffer: fp32 tokens of a chunk.
struct Staged {
  float* k;
  float* q;
  float* decay;  // gk as e^{gk}, per row (channel decay only)
  float* v;      // tile_v columns of this block's tile
  float* alpha;  // e^{g} (scalar decay)
  float* step;   // beta or eta
};

template <class Pol, class G>
__device__ __forceinline__ Staged staged_at(float* base, int capacity) {
  Staged s;
  s.k = base;
  s.q = s.k + capacity * G::key_pitch;
  s.decay = s.q + capacity * G::key_pitch;
  s.v = s.decay + (Pol::decay == Decay::channel ? capacity * G::key_pitch : 0);
  s.alpha = s.v + capacity * G::tile_v;
  s.step = s.alpha + capacity;
  return s;
}

// Shared-memory slot of key row r within a token.
template <class G>
__device__ __forceinline__ int key_slot(int r) {
  return (r / G::run) * G::run_stride + r % G::run;
}

// One tile's tile_v value columns of a chunk (≤ CHUNK tokens) of a [T, V] row set (v, or the backward's
// do), held in registers between the global loads and the shared stores: element e = (token, column)
// goes to thread e % kThreads; columns ≥ V load as zeros, tokens past the chunk are neither loaded nor
// stored.
template <class T, class G, int CHUNK>
struct ColumnTileLoader {
  static constexpr int kLoads = (CHUNK * G::tile_v + kThreads - 1) / kThreads;
  T x[kLoads];

  __device__ __forceinline__ void load(const TokenRows<const T>& rows, std::int64_t t0, int n, int tile, int V) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int e = threadIdx.x + i * kThreads, t = e / G::tile_v, col = tile * G::tile_v + e % G::tile_v;
      x[i] = t < n && col < V ? rows(t0 + t, col) : T{};
    }
  }
  // As fp32 into dst [token][tile_v], tokens [0, n).
  __device__ __forceinline__ void store(float* dst, int n) const {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int e = threadIdx.x + i * kThreads;
      if (e / G::tile_v < n) dst[e] = to_float(x[i]);
    }
  }
};

// The raw inputs of one chunk (≤ CHUNK tokens) held in registers between the global loads and the
// shared stores. Element e of a chunk goes to thread e % kThreads; elements past the chunk's tokens
// are neither loaded nor stored.
template <class Pol, class T, int KMAX, int CHUNK>
struct ChunkLoader {
  using G = GeometryFor<KMAX, CHUNK>;
  static constexpr int kKeyLoads = (CHUNK * KMAX + kThreads - 1) / kThreads;  // k, q (and gk) per thread
  static_assert(CHUNK <= kThreads, "one thread loads each token's gates");

  T k[kKeyLoads], q[kKeyLoads], gk[Pol::decay == Decay::channel ? kKeyLoads : 1];
  ColumnTileLoader<T, G, CHUNK> v;
  T gate{}, step{};

  // Tokens [t0, t0 + n) of the sequence, n ≤ capacity; t0 is the absolute token index.
  __device__ __forceinline__ void load(const SequenceInputs<T>& in, std::int64_t t0, int n, int tile) {
#pragma unroll
    for (int i = 0; i < kKeyLoads; ++i) {
      const int e = threadIdx.x + i * kThreads, t = e / KMAX, r = e % KMAX;
      const bool loaded = t < n && r < in.K;
      k[i] = loaded ? in.k(t0 + t, r) : T{};
      q[i] = loaded ? in.q(t0 + t, r) : T{};
      if constexpr (Pol::decay == Decay::channel) gk[i] = loaded ? in.gate(t0 + t, r) : T{};
    }
    v.load(in.v, t0, n, tile, in.V);
    const int t = threadIdx.x;
    if constexpr (Pol::decay == Decay::scalar) gate = t < n ? in.gate(t0 + t) : T{};
    if constexpr (Pol::delta) step = t < n ? in.step(t0 + t) : T{};
  }

  // Converts to fp32 and stores tokens [0, n) into `s`: features, e^{g}, e^{gk} and the query scale
  // applied; rows ≥ K and columns ≥ V as zeros.
  __device__ __forceinline__ void store(const Staged& s, int K, float scale, int n) const {
#pragma unroll
    for (int i = 0; i < kKeyLoads; ++i) {
      const int e = threadIdx.x + i * kThreads, t = e / KMAX, r = e % KMAX;
      if (t >= n) continue;
      const bool in = r < K;
      float kf = to_float(k[i]), qf = to_float(q[i]);
      if constexpr (Pol::ratio) {
        kf = elu_plus_one(kf);
        qf = elu_plus_one(qf);
      }
      if constexpr (Pol::read == Read::scaled_query) qf = scale * qf;
      const int slot = t * G::key_pitch + key_slot<G>(r);
      s.k[slot] = in ? kf : 0.f;
      s.q[slot] = in ? qf : 0.f;
      if constexpr (Pol::decay == Decay::channel) s.decay[slot] = in ? exp_rounded_once(to_float(gk[i])) : 0.f;
    }
    v.store(s.v, n);
    const int t = threadIdx.x;
    if (t < n) {
      if constexpr (Pol::decay == Decay::scalar) s.alpha[t] = exp_rounded_once(to_float(gate));
      if constexpr (Pol::delta) s.step[t] = to_float(step);
    }
  }
};

// This lane's rows of a staged token: its runs_per_lane consecutive runs.
template <class G>
__device__ __forceinline__ void load_rows(float (&dst)[G::rows], const float* token, int first_run) {
#pragma unroll
  for (int s = 0; s < G::runs_per_lane; ++s)
#pragma unroll
    for (int j = 0; j < G::run; j += 4) {
      const float4 x = *reinterpret_cast<const float4*>(token + (first_run + s) * G::run_stride + j);
      dst[s * G::run + j] = x.x;
      dst[s * G::run + j + 1] = x.y;
      dst[s * G::run + j + 2] = x.z;
      dst[s * G::run + j + 3] = x.w;
    }
}

// Σ_r a_r b_r over the column's K rows by the fixed tree of the header comment; every lane of the
// column gets the same bits.
template <class G>
__device__ __forceinline__ float column_dot(const float (&a)[G::rows], const float (&b)[G::rows]) {
  float run_sum[G::runs_per_lane];
#pragma unroll
  for (int s = 0; s < G::runs_per_lane; ++s) {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int j = 0; j < G::run; ++j) acc[j % 4] = fmaf(a[s * G::run + j], b[s * G::run + j], acc[j % 4]);
    run_sum[s] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  }
#pragma unroll
  for (int w = 1; w < G::runs_per_lane; w *= 2)  // butterfly levels within the lane
#pragma unroll
    for (int s = 0; s < G::runs_per_lane; s += 2 * w) run_sum[s] = run_sum[s] + run_sum[s + w];
  float x = run_sum[0];
#pragma unroll
  for (int m = G::cols_per_warp; m < 32; m *= 2) x += __shfl_xor_sync(0xffffffffu, x, m);  // across lanes
  return x;
}

// A lane's slice of a state column: rows j < rows_in at column[j · row_stride], the rest zeros (a
// running pointer: no 64-bit multiply per row). A null column reads as zeros.
template <int R>
__device__ __forceinline__ void load_column(float (&S)[R], const float* column, std::int64_t row_stride, int rows_in) {
#pragma unroll
  for (int j = 0; j < R; ++j) {
    S[j] = column != nullptr && j < rows_in ? *column : 0.f;
    column += row_stride;
  }
}

// Stores S (NaN where S is null) to rows j < rows_in of the column.
template <int R>
__device__ __forceinline__ void store_column(float* column, std::int64_t row_stride, int rows_in, const float* S) {
#pragma unroll
  for (int j = 0; j < R; ++j) {
    if (j < rows_in) *column = S != nullptr ? S[j] : __int_as_float(0x7fc00000);
    column += row_stride;
  }
}

// Blocks an SM the kernel is compiled for: a programmatic decode step at KMAX ≤ 128 fits 4 (at most 128
// registers a thread, which only KLA's step exceeds otherwise), so that 132 heads × 4 value tiles are
// one wave on the H200's 132 SMs and no step waits for a second one. Registers do not change the
// arithmetic: the bits are the same either way.
template <int KMAX, Dependency DEP>
constexpr int kMinBlocksPerSm = DEP == Dependency::programmatic && KMAX <= 128 ? 4 : 1;

template <class Pol, class T, int KMAX, int CHUNK, Dependency DEP = Dependency::stream>
__global__ void __launch_bounds__(kThreads, (kMinBlocksPerSm<KMAX, DEP>)) fused_recurrent(const Params<T> p) {
  using G = GeometryFor<KMAX, CHUNK>;
  constexpr int R = G::rows;
  constexpr bool programmatic = DEP == Dependency::programmatic;
  static_assert(!programmatic || CHUNK == 1, "programmatic launches are decode steps");
  float4* const smem_vec = dynamic_shared<float4>();
  float* const smem = reinterpret_cast<float*>(smem_vec);
  if constexpr (programmatic) cudaTriggerProgrammaticLaunchCompletion();  // scheduling only: see Dependency

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int group = lane / G::cols_per_warp;  // row group: rows row0 .. row0 + R − 1
  const int first_run = group * G::runs_per_lane, row0 = group * R;
  const int col_in_tile = warp * G::cols_per_warp + lane % G::cols_per_warp;
  const int K = p.K, V = p.V;
  const std::int64_t block = blockIdx.x;
  const int tile = static_cast<int>(block % p.tiles);
  const int h = static_cast<int>(block / p.tiles % p.H);
  const std::int64_t n = block / p.tiles / p.H;  // sequence (= batch entry unless varlen)
  const int col = tile * G::tile_v + col_in_tile;
  const bool col_in = col < V;
  const int rows_in = col_in && K > row0 ? K - row0 : 0;  // this lane's state rows in bounds (j < rows_in)
  // Column col of sequence n's states from row row0: element j at [j · row_stride].
  float* const final_col = p.final_state.data == nullptr ? nullptr
                                                         : p.final_state.data + n * p.final_state.s0 +
                                                               h * p.final_state.s1 + row0 * p.final_state.s2 + col;

  std::int64_t b, bos, eos;
  if (!sequence_bounds(p, n, b, bos, eos)) {  // a corrupt cu_seqlens: flag it, touch nothing else
    if constexpr (programmatic) cudaGridDependencySynchronize();  // before the first write
    if (final_col != nullptr) store_column<R>(final_col, p.final_state.s2, rows_in, nullptr);
    return;
  }

  const SequenceInputs<T> in{rows_of(p.q, b, h / p.group), rows_of(p.k, b, h / p.group), rows_of(p.v, b, h), rows_of(p.gate, b, h),
                             rows_of(p.step, b, h), K, V};
  const TokenRows<T> out_rows = rows_of(p.o, b, h);
  const int capacity = p.capacity;
  const float scale = p.scale, eps = p.eps;
  const std::int64_t length = eos - bos;
  const int buffer_floats = staging_floats<Pol, G>(capacity);
  const int first = static_cast<int>(length < capacity ? length : capacity);  // tokens of the first chunk
  ChunkLoader<Pol, T, KMAX, CHUNK> loader;
  if constexpr (programmatic) {
    // The token's inputs are never written by a step, so their loads may overlap the step before;
    // the state (read just below) and every output only after it has completed.
    if (length > 0) loader.load(in, bos, first, tile);
    cudaGridDependencySynchronize();
  }

  float S[R];  // rows row0 .. row0 + R − 1 of column col
  {
    const float* const initial_col = p.initial_state.data == nullptr
                                         ? nullptr
                                         : p.initial_state.data + n * p.initial_state.s0 + h * p.initial_state.s1 +
                                               row0 * p.initial_state.s2 + col;
    load_column<R>(S, initial_col, p.initial_state.s2, rows_in);
  }
  float z[Pol::ratio ? R : 1];  // the normaliser's rows (ratio LA), the same in every column's lanes
  if constexpr (Pol::ratio) {
    const float* const initial_z = p.initial_normalizer.data == nullptr
                                       ? nullptr
                                       : p.initial_normalizer.data + n * p.initial_normalizer.s0 +
                                             h * p.initial_normalizer.s1;
#pragma unroll
    for (int j = 0; j < R; ++j) z[j] = initial_z != nullptr && row0 + j < K ? initial_z[row0 + j] : 0.f;
  }

  if (length > 0) {
    if constexpr (!programmatic) loader.load(in, bos, first, tile);
    loader.store(staged_at<Pol, G>(smem, capacity), K, scale, first);
    __syncthreads();
  }
  int buffer = 0;
  for (std::int64_t c0 = 0; c0 < length; c0 += capacity) {
    const int count = static_cast<int>(length - c0 < capacity ? length - c0 : capacity);
    const std::int64_t next = c0 + count;
    const int next_count = static_cast<int>(length - next < capacity ? length - next : capacity);
    if (next_count > 0) loader.load(in, bos + next, next_count, tile);  // in flight during this chunk

    const Staged s = staged_at<Pol, G>(smem + buffer * buffer_floats, capacity);
    for (int t = 0; t < count; ++t) {
      float k[R], q[R];
      load_rows<G>(k, s.k + t * G::key_pitch, first_run);
      load_rows<G>(q, s.q + t * G::key_pitch, first_run);
      if constexpr (Pol::decay == Decay::scalar) {
        const float alpha = s.alpha[t];
#pragma unroll
        for (int j = 0; j < R; ++j) S[j] *= alpha;
      } else if constexpr (Pol::decay == Decay::channel) {
        float a[R];
        load_rows<G>(a, s.decay + t * G::key_pitch, first_run);
#pragma unroll
        for (int j = 0; j < R; ++j) S[j] *= a[j];
      }
      float u = s.v[t * G::tile_v + col_in_tile];
      if constexpr (Pol::delta) {
        const float projection = column_dot<G>(S, k);  // (S^T k)_col
        float beta = s.step[t];
        if constexpr (Pol::write == Write::delta_key_normalised) beta = beta / (column_dot<G>(k, k) + eps);
        u = beta * (u - projection);
      }
#pragma unroll
      for (int j = 0; j < R; ++j) S[j] = fmaf(k[j], u, S[j]);
      float o = column_dot<G>(S, q);
      if constexpr (Pol::ratio) {
#pragma unroll
        for (int j = 0; j < R; ++j) z[j] += k[j];
        o = o / (column_dot<G>(z, q) + eps);
      }
      if constexpr (Pol::read == Read::scaled_output) o = scale * o;
      if (group == 0 && col_in) out_rows(bos + c0 + t, col) = from_float<T>(o);
    }

    if (next_count > 0) loader.store(staged_at<Pol, G>(smem + (buffer ^ 1) * buffer_floats, capacity), K, scale, next_count);
    buffer ^= 1;
    __syncthreads();  // the next buffer is written; nobody reads this one any more
  }

  if (final_col != nullptr) store_column<R>(final_col, p.final_state.s2, rows_in, S);
  if constexpr (Pol::ratio) {
    if (p.final_normalizer.data != nullptr && tile == 0 && warp == 0 && lane % G::cols_per_warp == 0) {
      float* const final_z = p.final_normalizer.data + n * p.final_normalizer.s0 + h * p.final_normalizer.s1;
#pragma unroll
      for (int j = 0; j < R; ++j)
        if (row0 + j < K) final_z[row0 + j] = z[j];
    }
  }
}

}  // namespace larc::gpu::detail::delta_rule
