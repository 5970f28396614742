// Fused recurrent backward of log-linear attention (SPEC §4), both variants: the gradient twins
// (harness/src/mechanisms_log_linear.cpp, log_linear_gradients) of the forward kernels in
// log_linear_fused.cu, for L = Σ⟨do, o⟩:
//
//   "log-linear-fused-recurrent-backward"     mechanism "log-linear-backward" (Mamba-2 decay; q, k
//                                             [B,T,1,K] shared by the heads, so dq, dk sum over them)
//   "log-linear-gdn-fused-recurrent-backward" mechanism "log-linear-gdn-backward" (q, k [B,T,H,K], beta)
//
// inputs the forward's plus do [B,T,H,V]; outputs dq, dk, dv, dg (= dα·α, α = e^g), dlevel_scales, dbeta
// (GDN) in the inputs' dtype, and the optional fp32 dinitial_level_states, written as zeros (no start is
// taken, so no slot holds a carried bucket). The math is reference/log_linear_backward.h's `backward`, the
// adjoint of State::step, per token from the last with D^(ℓ) = ∂L/∂S^(ℓ) per level (one value column c):
//
//   read     r^ℓ = S^ℓᵀq (S^ℓ after the token), dλ^ℓ += do_c r^ℓ, dq += λ^ℓ do_c S^ℓ, D^ℓ += λ^ℓ do_c q
//   write    (level 0 = k (w v)ᵀ, w = β or 1) dv_c = w D^0ᵀk, dk += w v_c D^0, dβ += v_c D^0ᵀk (GDN)
//   transit  each live ℓ ≥ 1 from P (the level as the cascade left it), S^ℓ = M_t P:
//            Mamba-2 dα += ⟨P, D⟩, D ← α D;
//            GDN (delta_rule's adjoint with a zero value), p = Pᵀk, d = Dᵀk: dα += ⟨P, D⟩ − β p d,
//            dβ −= α p d, dk −= αβ (D p + P d), D ← α (D − β k d)
//   cascade  levels 0..j merged into j+1 (j = ctz(t)): D^ℓ = D^(j+1) for ℓ ≤ j.
//
// Mapping: the forward's, one warp per (b, h, value column c), every level's column in registers (lane l
// rows l + 32 i), here 8 warps a block holding 8 consecutive columns of one (b, h): a tile.
//   pass 1 (forward): the recurrence from an empty stack, the whole stack (levels 0..levels−1, dead ones
//          included, so every checkpoint word is written) stored every kChunk tokens;
//   pass 2 (reverse): chunks from the last; each restores its checkpoint and runs the forward over its
//          tokens with the forward's arithmetic (log_linear_fused.cuh), recording P of every live level
//          ℓ ≥ 1 per token into the column's scratch; then walks the chunk backwards with D in registers,
//          S^ℓ after the token recomputed from P (Mamba-2 α P; GDN α P + k (−β α Pᵀk)). D goes through the
//          scratch between chunks, so the recompute's stack and D are never both in registers.
// Sums over the columns (dq, dk rows; dλ per level; dα, dβ) are per warp, written per token to shared
// memory, added over the tile's warps in warp order every kFlush tokens and written per tile to the
// workspace; finalize_gradients adds the tiles (and, Mamba-2, the heads) in a fixed order and converts to
// the output dtype. No atomics: two runs give the same bits.
//
// Workspace (stream-ordered, chunk_launch.cuh), floats, KP = 32·⌈K/32⌉, levels = ⌈log2 T⌉ + 1,
// tiles = ⌈V/8⌉, slots = B·H·tiles·8 (one per warp):
//   checkpoints  slots · ⌈T/kChunk⌉ · levels · KP
//   scratch      slots · (min(kChunk, T) + 1) · levels · KP
//   partials     tiles · B · T · H · (2K + levels + 2)
// (docs/gpu-kernels/log-linear.md, "Fused recurrent backward", for the bytes at a typical size.)
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "chunk_launch.cuh"
#include "families.h"
#include "log_linear_fused.cuh"
#include "log_linear_inputs.h"

namespace larc::gpu::detail {

namespace {

using namespace log_linear_fused;
using namespace chunk_launch;

constexpr int kWarps = 8;     // value columns a block (a tile): their sums meet in shared memory
constexpr int kChunk = 128;   // tokens between checkpoints, recomputed at once in the reverse pass
constexpr int kFlush = 8;     // tokens whose per-warp sums are added over the tile at once
static_assert(kChunk % kFlush == 0, "a flush group never straddles a chunk");
constexpr int kThreads = kWarps * 32;
constexpr int kFinalizeThreads = 256;

// A warp's per-token sums in shared memory: dq rows [0, KP), dk rows [KP, 2 KP), dλ per level (one lane
// each) [2 KP, 2 KP + 32), dα, dβ.
template <int kRows>
constexpr int kRecord = 2 * 32 * kRows + 32 + 2;

template <typename T>
struct Params {
  Inputs<T> in;
  Strided<const T> d_o;
  Strided<T> dq, dk, dv, dg, dlevel_scales, dbeta;  // dbeta: GDN only
  std::int64_t B = 0, tiles = 0, chunks = 0, chunk_tokens = 0;
  std::int64_t level_columns = 0;  // L of level_scales (≥ levels; the extra ones get zero gradients)
  std::int64_t record = 0;         // floats of one partial row: 2K + levels + 2
  float* checkpoints = nullptr;
  float* scratch = nullptr;
  float* partials = nullptr;  // [tile][b][t][h][record]
};

// Levels [0, levels) of a stack, rows lane + 32 i, to / from memory laid out [level][i][lane] (`at` is
// already offset by the lane); levels ≥ `levels` are never live and load as zero.
template <int kLevels, int kRows>
__device__ __forceinline__ void store_stack(const float (&S)[kLevels][kRows], float* at, int levels) {
#pragma unroll
  for (int l = 0; l < kLevels; ++l) {
    if (l >= levels) break;
#pragma unroll
    for (int i = 0; i < kRows; ++i) at[(l * kRows + i) * 32] = S[l][i];
  }
}

template <int kLevels, int kRows>
__device__ __forceinline__ void load_stack(float (&S)[kLevels][kRows], const float* at, int levels) {
#pragma unroll
  for (int l = 0; l < kLevels; ++l)
#pragma unroll
    for (int i = 0; i < kRows; ++i) S[l][i] = l < levels ? at[(l * kRows + i) * 32] : 0.f;
}

template <typename T, Variant variant, int kRows, int kLevels>
__global__ void __launch_bounds__(kThreads, 1) reverse_recurrence(const Params<T> p) {
  float* const sums = dynamic_shared<float>();  // [kFlush][kWarps][kRecord]
  constexpr int KP = 32 * kRows, R = kRecord<kRows>;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const Inputs<T>& in = p.in;
  const std::int64_t block = blockIdx.x, tile = block % p.tiles, bh = block / p.tiles, h = bh % in.H, b = bh / in.H;
  const std::int64_t c = tile * kWarps + warp;
  // A warp past the last column runs on column V − 1's inputs with v = do = 0 (every sum it forms is
  // zero) so that it meets the block's barriers; its sums are left out and it writes no dv.
  const bool active = c < in.V;
  const std::int64_t c_in = active ? c : in.V - 1;
  const int active_warps = in.V - tile * kWarps < kWarps ? static_cast<int>(in.V - tile * kWarps) : kWarps;
  const int levels = in.levels;
  const std::int64_t stack = static_cast<std::int64_t>(levels) * KP, slot = block * kWarps + warp;
  float* const checkpoints = p.checkpoints + slot * p.chunks * stack + lane;
  float* const recorded = p.scratch + slot * (p.chunk_tokens + 1) * stack + lane;  // [token of chunk][level][i]
  float* const carried = recorded + p.chunk_tokens * stack;                        // D between chunks
  const auto token = [&](std::int64_t t) {
    Token<kRows> x = load_token<T, variant, kRows>(in, b, h, c_in, t, lane);
    if (!active) x.v = 0.f;
    return x;
  };

  {  // Pass 1: the forward recurrence, the stack stored at every chunk's first token.
    float S[kLevels][kRows];
#pragma unroll
    for (int l = 0; l < kLevels; ++l)
#pragma unroll
      for (int i = 0; i < kRows; ++i) S[l][i] = 0.f;
    Token<kRows> x = token(0);
    for (std::int64_t t = 0; t < in.T_len; ++t) {
      Token<kRows> next;
      if (t + 1 < in.T_len) next = token(t + 1);
      if (t % kChunk == 0) store_stack(S, checkpoints + t / kChunk * stack, levels);
      cascade(S, t);
      transition<variant>(S, t, x, [](int, const float(&)[kRows]) {});
      write_token<variant>(S, x);
      x = next;
    }
  }
  {  // D = 0 after the last token.
    float D[kLevels][kRows];
#pragma unroll
    for (int l = 0; l < kLevels; ++l)
#pragma unroll
      for (int i = 0; i < kRows; ++i) D[l][i] = 0.f;
    store_stack(D, carried, levels);
  }

  // Pass 2: chunks from the last.
  for (std::int64_t chunk = p.chunks - 1; chunk >= 0; --chunk) {
    const std::int64_t t0 = chunk * kChunk;
    const int n = in.T_len - t0 < kChunk ? static_cast<int>(in.T_len - t0) : kChunk;
    {  // The chunk's forward from its checkpoint, recording P (each live level ℓ ≥ 1 before its transition).
      float S[kLevels][kRows];
      load_stack(S, checkpoints + chunk * stack, levels);
      Token<kRows> x = token(t0);
      for (int s = 0; s < n; ++s) {
        Token<kRows> next;
        if (s + 1 < n) next = token(t0 + s + 1);
        const std::int64_t t = t0 + s;
        cascade(S, t);
        transition<variant>(S, t, x, [&](int l, const float(&P)[kRows]) {
          float* const at = recorded + (static_cast<std::int64_t>(s) * levels + l) * KP;
#pragma unroll
          for (int i = 0; i < kRows; ++i) at[32 * i] = P[i];
        });
        write_token<variant>(S, x);
        x = next;
      }
    }

    float D[kLevels][kRows];  // ∂L/∂S^(ℓ) after token t: only live levels are read or written
    load_stack(D, carried, levels);
    Token<kRows> x = token(t0 + n - 1);
    for (int s = n - 1; s >= 0; --s) {
      const std::int64_t t = t0 + s;
      Token<kRows> next;
      if (s > 0) next = token(t - 1);
      const float d_o = active ? to_float(*p.d_o.at(b, t, h, c)) : 0.f;
      const float a = exp_rounded_once(x.g);
      const float w = write_weight<variant>(x), beta = variant == Variant::gdn ? x.beta : 1.f;
      const int highest = highest_level(t);
      float dq[kRows], dk[kRows];
      float d_lambda = 0.f;           // dλ^(lane)
      float d_alpha_rows = 0.f;       // this lane's rows of Σ_ℓ ⟨P, D⟩
      float d_alpha = 0.f, d_beta = 0.f;  // warp-uniform terms

      {  // Level 0: read, then the write's adjoint.
        const float lambda = __shfl_sync(kFullMask, x.lambda, 0) * d_o;
        float read = 0.f;
#pragma unroll
        for (int i = 0; i < kRows; ++i) read += x.k[i] * w * x.q[i];
        read = warp_sum(read);
        if (lane == 0) d_lambda = d_o * read;
        float dk_dot = 0.f;
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          dq[i] = lambda * (x.k[i] * w);
          D[0][i] = fmaf(lambda, x.q[i], D[0][i]);
          dk_dot += D[0][i] * x.k[i];
          dk[i] = w * D[0][i];
        }
        dk_dot = warp_sum(dk_dot);  // D^0ᵀk
        if (lane == 0 && active) *p.dv.at(b, t, h, c) = from_float<T>(beta * dk_dot);
        if constexpr (variant == Variant::gdn) d_beta = x.v * dk_dot;
      }
      // Levels ℓ ≥ 1 live after the token: read, then the transition's adjoint.
#pragma unroll
      for (int l = 1; l < kLevels; ++l) {
        if (l > highest) break;
        if (!live(t, l)) continue;
        float P[kRows], S[kRows];
        const float* const at = recorded + (static_cast<std::int64_t>(s) * levels + l) * KP;
#pragma unroll
        for (int i = 0; i < kRows; ++i) P[i] = at[32 * i];
        float pk = 0.f;
        if constexpr (variant == Variant::gdn) {
#pragma unroll
          for (int i = 0; i < kRows; ++i) pk += P[i] * x.k[i];
          pk = warp_sum(pk);
        }
        const float u = variant == Variant::gdn ? x.beta * (0.f - a * pk) : 0.f;
        float read = 0.f;
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          S[i] = variant == Variant::gdn ? fmaf(x.k[i], u, a * P[i]) : a * P[i];
          read += S[i] * x.q[i];
        }
        read = warp_sum(read);
        if (lane == l) d_lambda = d_o * read;
        const float lambda = __shfl_sync(kFullMask, x.lambda, l) * d_o;
        float dk_dot = 0.f;
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          dq[i] = fmaf(lambda, S[i], dq[i]);
          D[l][i] = fmaf(lambda, x.q[i], D[l][i]);
          d_alpha_rows = fmaf(P[i], D[l][i], d_alpha_rows);
          dk_dot += D[l][i] * x.k[i];
        }
        if constexpr (variant == Variant::mamba2) {
#pragma unroll
          for (int i = 0; i < kRows; ++i) D[l][i] *= a;
        } else {
          dk_dot = warp_sum(dk_dot);  // Dᵀk
          const float overlap = pk * dk_dot;
          d_alpha -= x.beta * overlap;
          d_beta -= a * overlap;
          const float ab = a * x.beta;
#pragma unroll
          for (int i = 0; i < kRows; ++i) {
            dk[i] -= ab * (D[l][i] * pk + P[i] * dk_dot);
            D[l][i] = a * fmaf(-x.beta * dk_dot, x.k[i], D[l][i]);
          }
        }
      }
      // The cascade's adjoint: every merged level 0..j gets D^(j+1), copied down level by level.
      if (t > 0) {
        const int j = __ffsll(t) - 1;
#pragma unroll
        for (int l = kLevels - 2; l >= 0; --l)
          if (l <= j)
#pragma unroll
            for (int i = 0; i < kRows; ++i) D[l][i] = D[l + 1][i];
      }

      // This warp's sums, to shared memory; every kFlush tokens, over the tile's warps to the workspace.
      float* const record = sums + ((s % kFlush) * kWarps + warp) * R;
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        record[32 * i + lane] = dq[i];
        record[KP + 32 * i + lane] = dk[i];
      }
      record[2 * KP + lane] = d_lambda;
      d_alpha += warp_sum(d_alpha_rows);
      if (lane == 0) {
        record[2 * KP + 32] = d_alpha;
        record[2 * KP + 33] = d_beta;
      }
      if (s % kFlush == 0) {
        __syncthreads();
        const int count = n - s < kFlush ? n - s : kFlush;
        const std::int64_t K = in.K, row = p.record;
        for (std::int64_t e = threadIdx.x; e < count * row; e += kThreads) {
          const int f = static_cast<int>(e / row);
          const std::int64_t q = e % row;
          const std::int64_t at = q < K                  ? q
                                  : q < 2 * K            ? KP + (q - K)
                                  : q < 2 * K + levels   ? 2 * KP + (q - 2 * K)
                                                         : 2 * KP + 32 + (q - 2 * K - levels);
          float sum = 0.f;
          for (int v = 0; v < active_warps; ++v) sum += sums[(f * kWarps + v) * R + at];
          p.partials[(((tile * p.B + b) * in.T_len + t + f) * in.H + h) * row + q] = sum;
        }
        __syncthreads();  // the next group's records overwrite these
      }
      x = next;
    }
    store_stack(D, carried, levels);
  }
}

// One block per (b, t): the tiles' partial sums added in tile order (Mamba-2's dq, dk also over the heads,
// head by head), converted to the gradients' dtype; dg = α Σ dα.
template <typename T, Variant variant>
__global__ void __launch_bounds__(kFinalizeThreads) finalize_gradients(const Params<T> p) {
  const Inputs<T>& in = p.in;
  const std::int64_t b = blockIdx.x / in.T_len, t = blockIdx.x % in.T_len, K = in.K, H = in.H;
  const auto partial = [&](std::int64_t tile, std::int64_t h, std::int64_t q) {
    return p.partials[(((tile * p.B + b) * in.T_len + t) * H + h) * p.record + q];
  };
  const auto tile_sum = [&](std::int64_t h, std::int64_t q) {
    float s = 0.f;
    for (std::int64_t tile = 0; tile < p.tiles; ++tile) s += partial(tile, h, q);
    return s;
  };
  constexpr bool shared_qk = variant == Variant::mamba2;
  const std::int64_t qk_heads = shared_qk ? 1 : H;
  for (std::int64_t e = threadIdx.x; e < qk_heads * K; e += kFinalizeThreads) {
    const std::int64_t hq = e / K, r = e % K;
    float dq = 0.f, dk = 0.f;
    for (std::int64_t h = shared_qk ? 0 : hq; h < (shared_qk ? H : hq + 1); ++h) {
      dq += tile_sum(h, r);
      dk += tile_sum(h, K + r);
    }
    *p.dq.at(b, t, hq, r) = from_float<T>(dq);
    *p.dk.at(b, t, hq, r) = from_float<T>(dk);
  }
  for (std::int64_t e = threadIdx.x; e < H * p.level_columns; e += kFinalizeThreads) {
    const std::int64_t h = e / p.level_columns, l = e % p.level_columns;
    *p.dlevel_scales.at(b, t, h, l) = from_float<T>(l < in.levels ? tile_sum(h, 2 * K + l) : 0.f);
  }
  for (std::int64_t h = threadIdx.x; h < H; h += kFinalizeThreads) {
    const float alpha = exp_rounded_once(to_float(*in.g.at(b, t, h)));
    *p.dg.at(b, t, h) = from_float<T>(alpha * tile_sum(h, 2 * K + in.levels));
    if constexpr (variant == Variant::gdn) *p.dbeta.at(b, t, h) = from_float<T>(tile_sum(h, 2 * K + in.levels + 1));
  }
}

// dinitial_level_states [B,H,L,K,V] (any strides): zero everywhere.
struct LevelStatesView {
  float* data = nullptr;
  std::int64_t shape[5] = {}, strides[5] = {}, count = 0;
};

__global__ void zero_level_states(const LevelStatesView z) {
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < z.count;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t rest = e, offset = 0;
    for (int d = 4; d >= 0; --d) {
      offset += rest % z.shape[d] * z.strides[d];
      rest /= z.shape[d];
    }
    z.data[offset] = 0.f;
  }
}

template <typename T, Variant variant, int kRows, int kLevels>
Status enqueue(Params<T> p, const std::string& name, cudaStream_t stream) {
  constexpr int KP = 32 * kRows;
  const std::int64_t slots = p.B * p.in.H * p.tiles * kWarps, stack = static_cast<std::int64_t>(p.in.levels) * KP;
  const std::int64_t checkpoint_floats = slots * p.chunks * stack;
  const std::int64_t scratch_floats = slots * (p.chunk_tokens + 1) * stack;
  const std::int64_t partial_floats = p.tiles * p.B * p.in.T_len * p.in.H * p.record;
  const auto recurrence = reverse_recurrence<T, variant, kRows, kLevels>;
  constexpr std::size_t smem = sizeof(float) * kFlush * kWarps * kRecord<kRows>;
  if (const cudaError_t e = allow_smem(recurrence, smem); e != cudaSuccess) return cuda_failure(name, "shared-memory opt-in", e);
  float* workspace = nullptr;
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(checkpoint_floats + scratch_floats + partial_floats);
  if (const Status st = allocate_workspace(name, bytes, stream, &workspace); !st) return st;
  p.checkpoints = workspace;
  p.scratch = workspace + checkpoint_floats;
  p.partials = p.scratch + scratch_floats;
  launch_kernel(recurrence, static_cast<unsigned>(p.B * p.in.H * p.tiles), kThreads, smem, stream, p);
  launch_kernel(finalize_gradients<T, variant>, static_cast<unsigned>(p.B * p.in.T_len), kFinalizeThreads, 0, stream, p);
  return finish(name, workspace, stream);
}

template <typename T, Variant variant, int kRows>
Status enqueue_levels(const Params<T>& p, const std::string& name, cudaStream_t stream) {
  if (p.in.levels <= kFewLevels) return enqueue<T, variant, kRows, kFewLevels>(p, name, stream);
  return enqueue<T, variant, kRows, kMaxLevels>(p, name, stream);
}

template <Variant variant>
Status launch(const LaunchArgs& args) {
  constexpr bool gdn = variant == Variant::gdn;
  const std::string name = gdn ? "log-linear-gdn-fused-recurrent-backward" : "log-linear-fused-recurrent-backward";
  Validator v(name, args);
  const LogLinearInputs in = validate_log_linear(v, args, gdn, kMaxT, LogLinearPass::gradients);
  const std::int64_t B = v.size('B'), T_len = v.size('T'), H = v.size('H'), V = v.size('V');
  const std::int64_t tiles = (V + kWarps - 1) / kWarps;
  v.require_grid(B * H * tiles);
  v.require_grid(B * T_len);  // finalize_gradients
  if (!v.ok()) return v.status();
  const cudaStream_t stream = stream_of(args);

  if (const TensorView* z = in.dinitial_level_states; z != nullptr && z->numel() > 0) {
    LevelStatesView view;
    view.data = static_cast<float*>(z->data);
    view.count = z->numel();
    const std::vector<std::int64_t> strides = z->effective_strides();
    for (int d = 0; d < 5; ++d) {
      view.shape[d] = z->shape[static_cast<std::size_t>(d)];
      view.strides[d] = strides[static_cast<std::size_t>(d)];
    }
    const std::int64_t blocks = std::min<std::int64_t>((view.count + 255) / 256, 4096);
    launch_kernel(zero_level_states, static_cast<unsigned>(blocks), 256, 0, stream, view);
    if (const Status st = launch_status(name); !st) return st;
  }
  if (T_len == 0 || B * H == 0) return Status::success();  // no token: every gradient is empty

  return dispatch_float(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    p.in = inputs_of<T>(in, T_len, H, v.size('K'), V);
    p.d_o = strided<const T>(in.d_o);
    p.dq = strided<T>(in.dq);
    p.dk = strided<T>(in.dk);
    p.dv = strided<T>(in.dv);
    p.dg = strided<T>(in.dg);
    p.dlevel_scales = strided<T>(in.dlevel_scales);
    p.dbeta = strided<T>(in.dbeta);
    p.B = B;
    p.tiles = tiles;
    p.chunks = (T_len + kChunk - 1) / kChunk;
    p.chunk_tokens = std::min<std::int64_t>(kChunk, T_len);
    p.level_columns = v.size('L');
    p.record = 2 * p.in.K + in.levels + 2;
    return with_lane_rows(p.in.K, [&]<int kRows>() { return enqueue_levels<T, variant, kRows>(p, name, stream); });
  });
}

}  // namespace

void append_log_linear_backward_kernels(std::vector<Kernel>& out) {
  out.push_back(log_linear_entry("log-linear-fused-recurrent-backward", "log-linear-backward",
                                 "log-linear attention's gradients (Mamba-2 decay): checkpointed Fenwick level stacks "
                                 "recomputed per chunk, one warp per value column",
                                 kMaxT, launch<Variant::mamba2>));
  out.push_back(log_linear_entry("log-linear-gdn-fused-recurrent-backward", "log-linear-gdn-backward",
                                 "log-linear Gated DeltaNet's gradients: checkpointed Fenwick level stacks recomputed "
                                 "per chunk, one warp per value column",
                                 kMaxT, launch<Variant::gdn>));
}

}  // namespace larc::gpu::detail
