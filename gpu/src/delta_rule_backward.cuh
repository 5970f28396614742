// The fused recurrent backward of the delta-rule / linear-attention family (docs/gpu-kernels/delta-rule.md,
// "Fused recurrent backward"): the reverse-mode adjoint of the forward kernel's recurrence
// (delta_rule_fused.cuh) for L = Σ⟨do, o⟩ + ⟨dht, S_T⟩, in fp32, the direct form of docs/gradients.md.
//
// Per token t, reading the forward step as S̃ = decay_t(S_{t−1}), r = v_t − S̃^T k_t, u = β_t r (delta;
// u = v_t when additive), S_t = S̃ + k_t u^T, o_t = S_t^T q̂_t with q̂ = scale·q, the reverse step takes
// dS = ∂L/∂S_t from the later tokens and
//   dq_t  = scale · S_t do_t                dS += q̂_t do_t^T
//   delta:    du = dS^T k_t, β̄ = β_t du:   dv_t = β̄, dβ_t = ⟨du, r⟩, dk_t = dS u − S̃ β̄, dS −= k_t β̄^T
//   additive: dv_t = dS^T k_t,              dk_t = dS v_t
//   scalar decay (S̃ = α S):   dg_t = ⟨S̃, dS⟩ (= α ⟨S_{t−1}, dS⟩), dS ← α dS
//   channel decay (S̃ = Diag(a) S): dgk_t = rowsum(S̃ ∘ dS),        dS ← Diag(a) dS
// and dh0 = dS after token 0. KLA's β = η/(‖k‖² + ε) adds dη = dβ/(‖k‖² + ε) and
// dk −= 2β dβ/(‖k‖² + ε) · k, applied where dβ is complete (finalize_gradients).
//
// Mapping: the forward kernel's (one block per sequence, value head and tile of 16 value columns;
// the 8 lanes of a column hold its K rows, Geometry<KMAX, 8>). The state and its adjoint are column-local,
// so each block runs the whole reverse recurrence of its columns; what sums over the columns (dq, dk,
// dgk rows; dβ, dg scalars) is written per tile to a workspace and summed over tiles and grouped value
// heads in a fixed order by finalize_gradients: no atomics, every run gives the same bits.
//
// States are recomputed, not stored: a forward pass writes the state entering every chunk of kChunk
// tokens to the workspace; the reverse pass, chunk by chunk from the last, recomputes the chunk's states
// from its checkpoint into shared memory (each lane its own slots) with the forward's arithmetic, then
// walks the chunk backwards. Both passes stage inputs as the forward kernel does (its ChunkLoader, double
// buffers): the global loads of the next chunk — and in the reverse pass its do and, by cp.async, its
// checkpoint — are in flight while the current chunk runs.
#pragma once

#include <cstdint>

#include "delta_rule_fused.cuh"

namespace larc::gpu::detail::delta_rule_backward {

using delta_rule::Decay;
using delta_rule::kThreads;
using delta_rule::kWarps;
using delta_rule::TokenRows;
using delta_rule::Write;

template <int KMAX>
using Geo = delta_rule::Geometry<KMAX, 8>;

// Tokens recomputed per chunk: a chunk's states (KMAX × 16 floats a token) take 64 KB of shared memory.
template <int KMAX>
constexpr int kChunk = 1024 / KMAX;

template <class Pol>
constexpr int kRowQuantities = Pol::decay == Decay::channel ? 3 : 2;  // dq, dk (, dgk): rows summed over columns
template <class Pol>
constexpr int kScalarQuantities = (Pol::delta ? 1 : 0) + (Pol::decay == Decay::scalar ? 1 : 0);  // dβ, dg
constexpr int kStepSlot = 0;  // scalar quantity slots: dβ first (delta rules), then dg (scalar decay)
template <class Pol>
constexpr int kDecaySlot = Pol::delta ? 1 : 0;

template <class T>
struct Params {
  Strided<const T> q, k, v, gate, step, d_o;    // gate: g [B,T,H] or gk [B,T,H,K]; step: beta or eta
  Strided<const float> initial_state, d_final;  // optional [B|N, H, K, V]
  Strided<T> dq, dk, dv, dgate, dstep;          // dq, dk per query/key head; the rest per value head
  Strided<float> d_initial;                     // optional
  const void* cu_seqlens = nullptr;             // varlen: [N+1] int32 or int64; B = 1
  bool cu_seqlens_int64 = false;
  std::int64_t tokens = 0;     // T per batch entry (varlen: all packed tokens)
  std::int64_t sequences = 0;  // B, or N when varlen
  int H = 0, group = 1, K = 0, V = 0, tiles = 0;  // H: value heads; q/k head of value head h: h / group
  float scale = 1, eps = 0;
  // Workspace: the checkpoints, `slots` per (value head, tile), KMAX × 16 floats each; per-tile partial
  // rows [quantity][tile][packed token][H][K] and scalars [quantity][tile][packed token][H].
  float* checkpoints = nullptr;
  std::int64_t slots = 0;
  float* rows = nullptr;
  float* scalars = nullptr;
};

// Checkpoint slots a (value head, tile) needs: sequence n's chunks start at slot ⌊bos_n / C⌋ + n, which
// never reaches sequence n + 1's first slot; packed_tokens = B·T (varlen: T).
template <int KMAX>
__host__ __device__ constexpr std::int64_t checkpoint_slots(std::int64_t packed_tokens, std::int64_t sequences) {
  return packed_tokens / kChunk<KMAX> + sequences + 1;
}

// Tokens of all sequences as one packed axis: B·T, or T when varlen.
template <class T>
__host__ __device__ std::int64_t packed_token_count(const Params<T>& p) {
  return p.cu_seqlens != nullptr ? p.tokens : p.sequences * p.tokens;
}

// The inputs as the backward stages them: q̂ = scale·q whatever the forward's read, since dS += q̂ doᵀ.
template <class Pol>
using Staging = delta_rule::Policy<Pol::decay, Pol::write, delta_rule::Read::scaled_query>;

// Shared memory of one block, in floats: two staging buffers of a chunk's inputs and two of its do
// columns (the chunk being run and the next), two checkpoint buffers ([j][thread], filled by cp.async),
// the chunk's recomputed decayed states S̃, written values, residuals and (KLA) step sizes (lane-private
// slots), and the per-warp sums over columns before they are summed over warps.
template <class Pol, int KMAX>
struct Layout {
  using G = Geo<KMAX>;
  static constexpr int C = kChunk<KMAX>;
  static constexpr int buffer = delta_rule::staging_floats<Staging<Pol>, G>(C);  // one staging buffer
  static constexpr int staging = 0;
  static constexpr int d_o = staging + 2 * buffer;                     // [t][tile_v] a buffer
  static constexpr int checkpoint = d_o + 2 * C * G::tile_v;           // [j][thread] a buffer
  static constexpr int states = checkpoint + 2 * G::rows * kThreads;  // S̃_t: [t][j][thread]
  static constexpr int written = states + C * G::rows * kThreads;      // u_t per lane: [t][thread]
  static constexpr int residual = written + C * kThreads;              // r_t per lane
  static constexpr int step = residual + C * kThreads;                 // KLA's β_t per lane
  static constexpr int step_floats = Pol::write == Write::delta_key_normalised ? C * kThreads : 0;
  static constexpr int row_sums = step + step_floats;                  // [quantity][t][warp][KMAX]
  static constexpr int scalar_sums = row_sums + kRowQuantities<Pol> * C * kWarps * KMAX;  // [quantity][t][warp]
  static constexpr int floats = scalar_sums + kScalarQuantities<Pol> * C * kWarps;
  static_assert(buffer % 4 == 0 && (C * G::tile_v) % 4 == 0, "cp.async needs 16-byte aligned checkpoint buffers");
};

struct FormedStep {
  float beta;
};

// This lane's rows of staged token t's k (and a), and its column's α, β and v; KLA's β = η / (‖k‖² + ε)
// with ‖k‖² summed as the forward kernel sums it, so the recomputed states are its states bit for bit.
template <class Pol, int KMAX>
struct TokenOperands {
  using G = Geo<KMAX>;
  float k[G::rows], a[Pol::decay == Decay::channel ? G::rows : 1];
  float alpha = 1.f, beta = 1.f, v = 0.f;

  __device__ __forceinline__ TokenOperands(const delta_rule::Staged& s, int t, int first_run, int col_in_tile, float eps) {
    load(s, t, first_run, col_in_tile);
    if constexpr (Pol::delta) beta = s.step[t];
    if constexpr (Pol::write == Write::delta_key_normalised) beta = beta / (delta_rule::column_dot<G>(k, k) + eps);
  }
  // With the step size already formed (KLA's β, kept from the recompute: no second ‖k‖²).
  __device__ __forceinline__ TokenOperands(const delta_rule::Staged& s, int t, int first_run, int col_in_tile, FormedStep step) {
    load(s, t, first_run, col_in_tile);
    beta = step.beta;
  }
  __device__ __forceinline__ void load(const delta_rule::Staged& s, int t, int first_run, int col_in_tile) {
    delta_rule::load_rows<G>(k, s.k + t * G::key_pitch, first_run);
    if constexpr (Pol::decay == Decay::channel) delta_rule::load_rows<G>(a, s.decay + t * G::key_pitch, first_run);
    if constexpr (Pol::decay == Decay::scalar) alpha = s.alpha[t];
    v = s.v[t * G::tile_v + col_in_tile];
  }

  // S ← decay(S), in place.
  __device__ __forceinline__ void decay(float (&S)[G::rows]) const {
#pragma unroll
    for (int j = 0; j < G::rows; ++j) {
      if constexpr (Pol::decay == Decay::scalar) S[j] *= alpha;
      if constexpr (Pol::decay == Decay::channel) S[j] *= a[j];
    }
  }
};

// One forward step on this lane's rows after the decay (S = S̃ on entry), the forward kernel's arithmetic:
// r = v − S^T k; u = β r (additive: u = v); S ← S + k u^T. Returns u; `residual` gets r.
template <class Pol, int KMAX>
__device__ __forceinline__ float decayed_step(float (&S)[Geo<KMAX>::rows], const TokenOperands<Pol, KMAX>& x, float& residual) {
  float u = x.v;
  residual = u;
  if constexpr (Pol::delta) {
    residual = u - delta_rule::column_dot<Geo<KMAX>>(S, x.k);
    u = x.beta * residual;
  }
#pragma unroll
  for (int j = 0; j < Geo<KMAX>::rows; ++j) S[j] = fmaf(x.k[j], u, S[j]);
  return u;
}

// The whole forward step: S ← decay(S), then decayed_step.
template <class Pol, int KMAX>
__device__ __forceinline__ float forward_step(float (&S)[Geo<KMAX>::rows], const TokenOperands<Pol, KMAX>& x, float& residual) {
  x.decay(S);
  return decayed_step<Pol, KMAX>(S, x, residual);
}

// One step of sum_over_columns: lanes differing in bit M of the lane index exchange halves of x[0, 2·HALF)
// and each keeps the sum of the half its bit selects, in x[0, HALF).
template <int M, int HALF, int R>
__device__ __forceinline__ void exchange_halves(float (&x)[R]) {
  const bool upper = (threadIdx.x & M) != 0;
#pragma unroll
  for (int i = 0; i < HALF; ++i) {
    const float keep = upper ? x[i + HALF] : x[i], send = upper ? x[i] : x[i + HALF];
    x[i] = keep + __shfl_xor_sync(0xffffffffu, send, M);
  }
}

// Sums x over the 4 columns of a warp's row group (lanes differing in bits 0 and 1) and leaves this lane
// with rows [c·R/4, (c+1)·R/4) of the sums in x[0, R/4), c = lane % 4: a reduce-scatter, 3R/4 shuffles
// where a full reduction takes 2R. Both lanes of a pair add the same two numbers, so every run gives the
// same bits.
template <int R>
__device__ __forceinline__ void sum_over_columns(float (&x)[R]) {
  static_assert(R % 4 == 0);
  exchange_halves<2, R / 2>(x);
  exchange_halves<1, R / 4>(x);
}

__device__ __forceinline__ float sum_over_warp_columns(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

template <class Pol, class T, int KMAX>
__global__ void __launch_bounds__(kThreads) reverse_recurrence(const Params<T> p) {
  using G = Geo<KMAX>;
  using L = Layout<Pol, KMAX>;
  static_assert(!Pol::ratio, "ratio LA's normaliser has no adjoint here");
  constexpr int R = G::rows, C = L::C;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const smem = reinterpret_cast<float*>(smem_vec);

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int group = lane / G::cols_per_warp;
  const int first_run = group * G::runs_per_lane, row0 = group * R;
  const int col_in_tile = warp * G::cols_per_warp + lane % G::cols_per_warp;
  const int K = p.K, V = p.V;
  const std::int64_t block = blockIdx.x;
  const int tile = static_cast<int>(block % p.tiles);
  const int h = static_cast<int>(block / p.tiles % p.H);
  const std::int64_t n = block / p.tiles / p.H;
  const int col = tile * G::tile_v + col_in_tile;
  const bool col_in = col < V;
  const int rows_in = col_in && K > row0 ? K - row0 : 0;
  const auto state_column = [&](const auto& s) {  // column col of sequence n's [K,V] state from row row0
    return s.data == nullptr ? nullptr : s.data + n * s.s0 + h * s.s1 + row0 * s.s2 + col;
  };
  float* const d_initial_col = state_column(p.d_initial);

  std::int64_t b, bos, eos;
  if (!delta_rule::sequence_bounds(p, n, b, bos, eos)) {  // a corrupt cu_seqlens: flag it in dh0, touch nothing else
    if (d_initial_col != nullptr) delta_rule::store_column<R>(d_initial_col, p.d_initial.s2, rows_in, nullptr);
    return;
  }
  const std::int64_t length = eos - bos;
  const std::int64_t packed0 = b * p.tokens + bos;  // packed index of the sequence's first token
  float* const checkpoints =
      p.checkpoints + ((static_cast<std::int64_t>(h) * p.tiles + tile) * p.slots + packed0 / C + n) * (R * kThreads);
  const TokenRows<T> dv_rows = delta_rule::rows_of(p.dv, b, h);
  const delta_rule::SequenceInputs<T> in{delta_rule::rows_of(p.q, b, h / p.group), delta_rule::rows_of(p.k, b, h / p.group),
                                         delta_rule::rows_of(p.v, b, h), delta_rule::rows_of(p.gate, b, h),
                                         delta_rule::rows_of(p.step, b, h), K, V};
  const TokenRows<const T> d_o_rows = delta_rule::rows_of(p.d_o, b, h);
  delta_rule::ChunkLoader<Staging<Pol>, T, KMAX, C> inputs{};  // {}: every path loads before it stores; GCC cannot see it
  delta_rule::ColumnTileLoader<T, G, C> d_o_columns{};
  const auto staged = [&](int buffer) {
    return delta_rule::staged_at<Staging<Pol>, G>(smem + L::staging + buffer * L::buffer, C);
  };
  const auto staged_d_o = [&](int buffer) { return smem + L::d_o + buffer * C * G::tile_v; };
  const auto checkpoint_buffer = [&](int buffer) { return smem + L::checkpoint + buffer * (R * kThreads); };
  const auto prefetch_checkpoint = [&](std::int64_t c, int buffer) {  // chunk c's checkpoint, by the whole block
    copy_words_async<kThreads>(checkpoint_buffer(buffer), checkpoints + c * (R * kThreads), R * kThreads);
    commit_async();
  };
  const auto tokens_from = [&](std::int64_t c0) { return static_cast<int>(length - c0 < C ? length - c0 : C); };

  // Forward: the state entering every chunk, to its checkpoint slot; chunk c + 1's inputs load while chunk
  // c runs, and the last chunk's stay staged for the reverse pass.
  float S[R];
  delta_rule::load_column<R>(S, state_column(p.initial_state), p.initial_state.s2, rows_in);
  int buffer = 0;
  if (length > 0) {
    inputs.load(in, bos, tokens_from(0), tile);
    inputs.store(staged(buffer), K, p.scale, tokens_from(0));
    __syncthreads();
  }
  for (std::int64_t c0 = 0; c0 < length; c0 += C) {
    const int count = tokens_from(c0);
    const bool more = c0 + C < length;
    if (more) inputs.load(in, bos + c0 + C, tokens_from(c0 + C), tile);  // in flight during this chunk
    float* const slot = checkpoints + (c0 / C) * (R * kThreads) + threadIdx.x;
#pragma unroll
    for (int j = 0; j < R; ++j) slot[j * kThreads] = S[j];
    const delta_rule::Staged s = staged(buffer);
    for (int t = 0; t < count; ++t) {
      float residual;
      forward_step<Pol, KMAX>(S, TokenOperands<Pol, KMAX>(s, t, first_run, col_in_tile, p.eps), residual);
    }
    if (more) {
      inputs.store(staged(buffer ^ 1), K, p.scale, tokens_from(c0 + C));
      buffer ^= 1;
    }
    __syncthreads();  // the next buffer is written (and the checkpoints, read back by other threads below)
  }

  // Reverse, chunk by chunk from the last: chunk c − 1's inputs, do and checkpoint load while chunk c runs.
  float dS[R];
  delta_rule::load_column<R>(dS, state_column(p.d_final), p.d_final.s2, rows_in);
  const std::int64_t chunks = (length + C - 1) / C;
  if (chunks > 0) {
    const std::int64_t last0 = (chunks - 1) * C;
    prefetch_checkpoint(chunks - 1, buffer);
    d_o_columns.load(d_o_rows, bos + last0, tokens_from(last0), tile, V);
    d_o_columns.store(staged_d_o(buffer), tokens_from(last0));
    wait_async<0>();
    __syncthreads();
  }
  for (std::int64_t c = chunks - 1; c >= 0; --c) {
    const std::int64_t c0 = c * C;
    const int count = tokens_from(c0);
    if (c > 0) {  // chunk c − 1 is whole: C tokens
      inputs.load(in, bos + c0 - C, C, tile);
      d_o_columns.load(d_o_rows, bos + c0 - C, C, tile, V);
    }
    const delta_rule::Staged s = staged(buffer);
    const float* const staged_do = staged_d_o(buffer);
    {  // recompute the chunk's states: S_{t−1} of every token, and its u and r
      const float* const entering = checkpoint_buffer(buffer) + threadIdx.x;
#pragma unroll
      for (int j = 0; j < R; ++j) S[j] = entering[j * kThreads];
    }
    if (c > 0) prefetch_checkpoint(c - 1, buffer ^ 1);
    for (int t = 0; t < count; ++t) {
      const TokenOperands<Pol, KMAX> x(s, t, first_run, col_in_tile, p.eps);
      x.decay(S);
#pragma unroll
      for (int j = 0; j < R; ++j) smem[L::states + (t * R + j) * kThreads + threadIdx.x] = S[j];
      if constexpr (L::step_floats > 0) smem[L::step + t * kThreads + threadIdx.x] = x.beta;
      float residual;
      smem[L::written + t * kThreads + threadIdx.x] = decayed_step<Pol, KMAX>(S, x, residual);
      smem[L::residual + t * kThreads + threadIdx.x] = residual;
    }
    for (int t = count - 1; t >= 0; --t) {
      const TokenOperands<Pol, KMAX> x = [&] {
        if constexpr (L::step_floats > 0)
          return TokenOperands<Pol, KMAX>(s, t, first_run, col_in_tile, FormedStep{smem[L::step + t * kThreads + threadIdx.x]});
        else
          return TokenOperands<Pol, KMAX>(s, t, first_run, col_in_tile, p.eps);
      }();
      float q[R], decayed[R], dq[R], dk[R];  // decayed: S̃ as the recompute left it
      delta_rule::load_rows<G>(q, s.q + t * G::key_pitch, first_run);
#pragma unroll
      for (int j = 0; j < R; ++j) decayed[j] = smem[L::states + (t * R + j) * kThreads + threadIdx.x];
      const float u = smem[L::written + t * kThreads + threadIdx.x];
      const float d_o = staged_do[t * G::tile_v + col_in_tile];
#pragma unroll
      for (int j = 0; j < R; ++j) {
        dq[j] = fmaf(x.k[j], u, decayed[j]) * d_o;  // S_t do, this column's term
        dS[j] = fmaf(q[j], d_o, dS[j]);
      }
      float dv, d_step = 0.f;
      if constexpr (Pol::delta) {
        const float du = delta_rule::column_dot<G>(dS, x.k), scaled = x.beta * du;
        dv = scaled;
        d_step = du * smem[L::residual + t * kThreads + threadIdx.x];
#pragma unroll
        for (int j = 0; j < R; ++j) {
          dk[j] = fmaf(dS[j], u, -decayed[j] * scaled);
          dS[j] = fmaf(-x.k[j], scaled, dS[j]);
        }
      } else {
        dv = delta_rule::column_dot<G>(dS, x.k);
#pragma unroll
        for (int j = 0; j < R; ++j) dk[j] = dS[j] * x.v;
      }
      if (group == 0 && col_in) dv_rows(bos + c0 + t, col) = from_float<T>(dv);
      float d_decay = 0.f, dgk[Pol::decay == Decay::channel ? R : 1];
      if constexpr (Pol::decay == Decay::scalar) {
        d_decay = delta_rule::column_dot<G>(decayed, dS);
#pragma unroll
        for (int j = 0; j < R; ++j) dS[j] *= x.alpha;
      } else if constexpr (Pol::decay == Decay::channel) {
#pragma unroll
        for (int j = 0; j < R; ++j) {
          dgk[j] = decayed[j] * dS[j];
          dS[j] *= x.a[j];
        }
      }
      // Sums over this warp's columns, to shared memory per warp.
      float* const row_sums = smem + L::row_sums + (t * kWarps + warp) * KMAX + row0 + (lane % G::cols_per_warp) * (R / 4);
      constexpr int quantity_stride = C * kWarps * KMAX;
      sum_over_columns<R>(dq);
      sum_over_columns<R>(dk);
#pragma unroll
      for (int i = 0; i < R / 4; ++i) {
        row_sums[i] = dq[i];
        row_sums[quantity_stride + i] = dk[i];
      }
      if constexpr (Pol::decay == Decay::channel) {
        sum_over_columns<R>(dgk);
#pragma unroll
        for (int i = 0; i < R / 4; ++i) row_sums[2 * quantity_stride + i] = dgk[i];
      }
      // column_dot leaves every row group of a column with the same value: row group 0's lanes add them.
      float* const scalar_sums = smem + L::scalar_sums + t * kWarps + warp;
      if constexpr (Pol::delta) {
        const float s = sum_over_warp_columns(d_step);
        if (lane == 0) scalar_sums[kStepSlot * C * kWarps] = s;
      }
      if constexpr (Pol::decay == Decay::scalar) {
        const float s = sum_over_warp_columns(d_decay);
        if (lane == 0) scalar_sums[kDecaySlot<Pol> * C * kWarps] = s;
      }
    }
    __syncthreads();
    // The chunk's sums over the tile's warps, to the tile's partials.
    const std::int64_t packed_chunk = packed0 + c0, packed_tokens = packed_token_count(p);
    for (int e = threadIdx.x; e < kRowQuantities<Pol> * count * K; e += kThreads) {
      const int quantity = e / (count * K), t = e / K % count, r = e % K;
      const float* const w = smem + L::row_sums + ((quantity * C + t) * kWarps) * KMAX + r;
      const float sum = ((w[0] + w[KMAX]) + (w[2 * KMAX] + w[3 * KMAX]));
      p.rows[(((quantity * static_cast<std::int64_t>(p.tiles) + tile) * packed_tokens + packed_chunk + t) * p.H + h) * K + r] = sum;
    }
    for (int e = threadIdx.x; e < kScalarQuantities<Pol> * count; e += kThreads) {
      const int quantity = e / count, t = e % count;
      const float* const w = smem + L::scalar_sums + (quantity * C + t) * kWarps;
      p.scalars[((quantity * static_cast<std::int64_t>(p.tiles) + tile) * packed_tokens + packed_chunk + t) * p.H + h] =
          (w[0] + w[1]) + (w[2] + w[3]);
    }
    if (c > 0) {
      inputs.store(staged(buffer ^ 1), K, p.scale, C);
      d_o_columns.store(staged_d_o(buffer ^ 1), C);
      wait_async<0>();
      buffer ^= 1;
    }
    __syncthreads();  // chunk c − 1 is staged; the sums above may be overwritten
  }
  if (d_initial_col != nullptr) delta_rule::store_column<R>(d_initial_col, p.d_initial.s2, rows_in, dS);
}

// One block per (packed token, query/key head), K threads (at most 256): dβ (dη) and dg of the group's
// value heads and dgk, dq, dk summed over tiles then over the group in a fixed order, converted to the
// gradients' dtype. Tokens before the first cu_seqlens offset or from the last on belong to no sequence:
// every gradient there is written as zero.
template <class Pol, class T>
__global__ void finalize_gradients(const Params<T> p) {
  float* const key_norm_gain = dynamic_shared<float>();  // per value head of the group: KLA's −2β dβ/(‖k‖² + ε)
  const std::int64_t packed_tokens = packed_token_count(p);
  const int Hq = p.H / p.group;
  const std::int64_t packed = blockIdx.x / Hq;
  const int hq = static_cast<int>(blockIdx.x % Hq);
  const std::int64_t b = p.cu_seqlens != nullptr ? 0 : packed / p.tokens, t = p.cu_seqlens != nullptr ? packed : packed % p.tokens;
  bool tail = false;  // outside every sequence: before the first offset or from the last on
  if (p.cu_seqlens != nullptr)
    tail = t < delta_rule::sequence_offset(p, 0) || t >= delta_rule::sequence_offset(p, p.sequences);
  const auto scalar_sum = [&](int quantity, int h) {
    float s = 0.f;
    for (int tile = 0; tile < p.tiles; ++tile)
      s += p.scalars[((quantity * static_cast<std::int64_t>(p.tiles) + tile) * packed_tokens + packed) * p.H + h];
    return tail ? 0.f : s;
  };
  const auto row_sum = [&](int quantity, int h, int r) {
    float s = 0.f;
    for (int tile = 0; tile < p.tiles; ++tile)
      s += p.rows[(((quantity * static_cast<std::int64_t>(p.tiles) + tile) * packed_tokens + packed) * p.H + h) * p.K + r];
    return tail ? 0.f : s;
  };
  const TokenRows<const T> k = delta_rule::rows_of(p.k, b, hq);
  if (static_cast<int>(threadIdx.x) < p.group) {
    const int h = hq * p.group + static_cast<int>(threadIdx.x);
    float gain = 0.f;
    if constexpr (Pol::delta) {
      float d_step = scalar_sum(kStepSlot, h);
      if constexpr (Pol::write == Write::delta_key_normalised) {
        float norm = 0.f;
        for (int r = 0; r < p.K; ++r) {
          const float x = to_float(k(t, r));
          norm = fmaf(x, x, norm);
        }
        const float beta = to_float(delta_rule::rows_of(p.step, b, h)(t)) / (norm + p.eps);
        gain = -2.f * beta * d_step / (norm + p.eps);
        d_step = d_step / (norm + p.eps);  // dη
      }
      delta_rule::rows_of(p.dstep, b, h)(t) = from_float<T>(d_step);
    }
    if constexpr (Pol::decay == Decay::scalar) delta_rule::rows_of(p.dgate, b, h)(t) = from_float<T>(scalar_sum(kDecaySlot<Pol>, h));
    key_norm_gain[threadIdx.x] = tail ? 0.f : gain;
  }
  __syncthreads();
  const int r = static_cast<int>(threadIdx.x);
  if (r < p.K) {
    float dq = 0.f, dk = 0.f, gain = 0.f;
    for (int j = 0; j < p.group; ++j) {
      const int h = hq * p.group + j;
      dq += row_sum(0, h, r);
      dk += row_sum(1, h, r);
      gain += key_norm_gain[j];
      if constexpr (Pol::decay == Decay::channel) delta_rule::rows_of(p.dgate, b, h)(t, r) = from_float<T>(row_sum(2, h, r));
    }
    if constexpr (Pol::write == Write::delta_key_normalised) dk = fmaf(gain, to_float(k(t, r)), dk);
    delta_rule::rows_of(p.dq, b, hq)(t, r) = from_float<T>(p.scale * dq);
    delta_rule::rows_of(p.dk, b, hq)(t, r) = from_float<T>(dk);
  }
  if (tail)  // dv is written by the recurrence for tokens of a sequence only
    for (int j = 0; j < p.group; ++j)
      for (int c = static_cast<int>(threadIdx.x); c < p.V; c += blockDim.x)
        delta_rule::rows_of(p.dv, b, hq * p.group + j)(t, c) = from_float<T>(0.f);
}

}  // namespace larc::gpu::detail::delta_rule_backward
