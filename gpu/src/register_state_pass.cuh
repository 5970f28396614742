// The sequential state pass of the chunked delta rules (gdn/kla-chunked and vla-chunked,
// bf16/fp16 inputs), with the state held in registers (docs/perf-notes.md, "Chunked GDN / KLA" row 8).
//
// Per chunk c of a (sequence, head), the generalised delta rule in the UT/WY form, transposed so that the
// state X = Sᵀ [V][KP] is an A operand (its value columns are the mma rows):
//   V_newᵀ   = Uᵀ − X_c Wᵀ                  (W [64][KP]: the chunk's WY keys)
//   X_{c+1}  = d_c X_c + V_newᵀ B           (Bᵀ [KP][64]: GDN K̃ᵀ with d_c = γ_{n−1}; VLA Âᵀ with d_c = 1)
// One block per (sequence, head, 16 value columns); warp w holds X's 16 rows × the keys
// [w·KS, (w + 1)·KS), KS = KP / kWarps, as fp32 m16n8 accumulators. These are, pair for pair, the A
// fragments of X_c Wᵀ (fragment_terms), so X never leaves the registers: each warp forms the part of
// X_c Wᵀ over its keys, the parts meet in shared memory (summed in warp order), and warp w forms V_newᵀ
// for the tokens [16w, 16w + 16), split once into the update's A operand, read by every warp. Products take
// the operands as S bf16 terms: kStateTerms (24 bits) where the final state is judged as fp32, the input's
// terms where it is judged at io (gdn/kla-chunked-io: X rounded once per chunk, as FLA's h).
//
// The chunk's W and U (one cp.async group) and Bᵀ (another) are staged as in the records; W of chunk
// c + 1 loads while chunk c's update runs, Bᵀ of chunk c + 1 while its V_newᵀ is formed (KP > 128: one
// buffer for both, loaded in turn). X_c and V_new go to the caller's workspaces in O planes (kOutputTerms:
// read by an output kernel only, whose o is rounded). vla-chunked takes the default S and O.
#pragma once

#include <cstdint>

#include "chunk_operands.cuh"

namespace larc::gpu::detail::register_state_pass {

using namespace chunk_operands;

constexpr int kChunk = 64;
constexpr int kTileV = 16;                  // value columns per block: one m16 tile of X
constexpr int kWarps = 4;                   // key slices per block
constexpr int kThreads = 32 * kWarps;
constexpr int kStateTerms = 3;              // bf16 terms of an fp32 intermediate on the state's path (24 bits)
constexpr int kOutputTerms = 2;             // ... read by the output kernel only (16 bits; o is rounded)
constexpr int kPartPitch = kChunk + 8;      // fp32 [16][64] parts: a lane's float2 at 8g + 2t, conflict-free
constexpr int kUPitch = kTileV + 4;         // U [64][16]: Uᵀ's pairs at 8t + g, conflict-free
static_assert(2 * kWarps == kChunk / 8, "warp w forms V_newᵀ for the tokens of n-tiles 2w, 2w + 1");
template <int KP>
constexpr int kKeys = KP / kWarps;  // keys per warp
template <int KP>
using State = float[kKeys<KP> / 8][4];  // a warp's slice of X: n-tile j holds keys w·KS + 8j + 2t + r % 2

// One chunk's operands and outputs (global memory); S and O: run's term counts.
struct ChunkIo {
  float* w;            // W [64 rows][KP], S planes
  float* bt;           // Bᵀ [KP rows][64], S planes
  const float* u;      // U [64][V] fp32
  const float* decay;  // d_c (nullptr: 1)
  float* vn;           // V_new [V rows][64], O planes
  float* state;        // X_c [V rows][KP], O planes
  float* state_f32 = nullptr;  // optional: X_c [V rows][KP] fp32
  float* vn_f32 = nullptr;     // optional: V_new [64 tokens][V] fp32
};

// S: the bf16 terms of the state path's operands (W, Bᵀ, X, V_newᵀ).
template <class T, int KP, int S = kStateTerms>
struct Layout {
  static_assert(kKeys<KP> % 16 == 0, "each warp's keys are whole k-steps");
  static constexpr bool kShared = KP > 128;  // W and Bᵀ in one buffer, loaded in turn
  static constexpr int kW = operand_words<T, S>(kChunk, KP);
  static constexpr int kBt = operand_words<T, S>(KP, kChunk);
  static constexpr int kBuffers = kShared ? (kW > kBt ? kW : kBt) : kW + kBt;
  static constexpr int kU = kChunk * kUPitch;
  static constexpr int kPart = kTileV * kPartPitch;
  static constexpr int kVn = operand_words<T, S>(kTileV, kChunk);
  static constexpr int kWords = kBuffers + kU + kWarps * kPart + kVn;
};

// f(x, key, col) for each element of this lane's slice of X (col: the value column col0 + ...).
template <int KP, class F>
__device__ __forceinline__ void for_each_state(State<KP>& x, int col0, F f) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, w = threadIdx.x / 32;
#pragma unroll
  for (int j = 0; j < kKeys<KP> / 8; ++j)
#pragma unroll
    for (int r = 0; r < 4; ++r) f(x[j][r], w * kKeys<KP> + 8 * j + 2 * t + r % 2, col0 + g + 8 * (r / 2));
}

// The chunks [0, chunks) in order from the state x (this lane's slice; left holding X_chunks). io(c)
// gives chunk c's ChunkIo; V: the value columns (rows of U's and the outputs' operands). smem: Layout<T, KP, S>.
// S, O: the bf16 terms of the state path's operands and of the outputs X_c and V_new.
template <class T, int KP, int S = kStateTerms, int O = kOutputTerms, class Io>
__device__ __forceinline__ void run(State<KP>& x, std::int64_t chunks, int col0, int V, Io io, float* smem) {
  using L = Layout<T, KP, S>;
  constexpr int KS = kKeys<KP>;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, w = threadIdx.x / 32;
  float* const w_words = smem;
  float* const bt_words = L::kShared ? smem : smem + L::kW;
  float* const u_s = smem + L::kBuffers;     // U [64][kUPitch], this block's columns
  float* const part_s = u_s + L::kU;         // warp w's part of X_c Wᵀ: [16][kPartPitch] each
  const auto w_op = operand_at<T, S, KP>(w_words, kChunk);
  const auto bt_op = operand_at<T, S, kChunk>(bt_words, KP);
  const auto vn_op = operand_at<T, S, kChunk>(part_s + kWarps * L::kPart, kTileV);  // V_newᵀ, the update's A operand

  const auto stage_w = [&](const ChunkIo& c) {
    copy_operand_async<kThreads>(w_op, operand_at<T, S, KP>(c.w, kChunk));
    copy_column_tile_async<kThreads, kChunk, kTileV>(u_s, kUPitch, c.u, V, col0);
    commit_async();
  };
  const auto stage_bt = [&](const ChunkIo& c) {
    copy_operand_async<kThreads>(bt_op, operand_at<T, S, kChunk>(c.bt, KP));
    commit_async();
  };

  if (chunks > 0) {
    stage_w(io(0));
    if constexpr (!L::kShared) stage_bt(io(0));
  }
  for (std::int64_t c = 0; c < chunks; ++c) {
    const ChunkIo chunk = io(c);
    const float decay = chunk.decay != nullptr ? *chunk.decay : 1.f;
    if constexpr (L::kShared)
      wait_async<0>();
    else
      wait_async<1>();  // W and U of chunk c (its Bᵀ may still be in flight)
    __syncthreads();

    // X_c (O planes) for the output kernel.
    const auto state_out = operand_at<T, O, KP>(chunk.state, V);
#pragma unroll
    for (int j = 0; j < KS / 8; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half)
        if (const int row = col0 + g + 8 * half; row < V) {
          store_pair(state_out, row, w * KS + 8 * j + 2 * t, x[j][2 * half], x[j][2 * half + 1]);
          if (chunk.state_f32 != nullptr)
            *reinterpret_cast<float2*>(chunk.state_f32 + std::int64_t{row} * KP + w * KS + 8 * j + 2 * t) =
                make_float2(x[j][2 * half], x[j][2 * half + 1]);
        }

    // This warp's part of X_c Wᵀ (its keys), to part_s.
    {
      float y[kChunk / 8][4];
      zero(y);
      constexpr int pitch = Operand<T, S, KP>::kPitch, plane = kChunk * pitch;
#pragma unroll
      for (int kk = 0; kk < KS / 16; ++kk) {
        std::uint32_t fa[S][4];
        fragment_terms(x[2 * kk], x[2 * kk + 1], fa);
        mma_tiles<kChunk / 8, S, S>(y, fa, &w_op.at(0, g, (w * KS + 16 * kk) / 2 + t), pitch, plane);
      }
      float* const part = part_s + w * L::kPart;
#pragma unroll
      for (int j = 0; j < kChunk / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half)
          *reinterpret_cast<float2*>(part + (g + 8 * half) * kPartPitch + 8 * j + 2 * t) =
              make_float2(y[j][2 * half], y[j][2 * half + 1]);
    }
    __syncthreads();

    // V_newᵀ = Uᵀ − Σ_warps parts for the tokens [16w, 16w + 16), split once into vn_op and (O planes) to
    // V_new.
    {
      const auto vn_out = operand_at<T, O, kChunk>(chunk.vn, V);
#pragma unroll
      for (int jj = 0; jj < 2; ++jj)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = g + 8 * half, token = 8 * (2 * w + jj) + 2 * t;
          float2 sum = *reinterpret_cast<const float2*>(part_s + row * kPartPitch + token);
#pragma unroll
          for (int p = 1; p < kWarps; ++p) {
            const float2 y = *reinterpret_cast<const float2*>(part_s + p * L::kPart + row * kPartPitch + token);
            sum.x += y.x, sum.y += y.y;
          }
          const float vn0 = u_s[token * kUPitch + row] - sum.x, vn1 = u_s[(token + 1) * kUPitch + row] - sum.y;
          store_pair(vn_op, row, token, vn0, vn1);
          if (col0 + row < V) {
            store_pair(vn_out, col0 + row, token, vn0, vn1);
            if (chunk.vn_f32 != nullptr) {
              chunk.vn_f32[std::int64_t{token} * V + col0 + row] = vn0;
              chunk.vn_f32[std::int64_t{token + 1} * V + col0 + row] = vn1;
            }
          }
        }
    }
    __syncthreads();  // W, U and the parts are read no more
    if constexpr (L::kShared) {
      stage_bt(chunk);
      wait_async<0>();
    } else {
      if (c + 1 < chunks) stage_w(io(c + 1));
      else commit_async();  // an empty group keeps the count
      wait_async<1>();      // Bᵀ of chunk c
    }
    __syncthreads();

    // X_{c+1} = d_c X_c + V_newᵀ B over this warp's keys.
    {
      float acc[KS / 8][4];
      zero(acc);
      constexpr int a_pitch = Operand<T, S, kChunk>::kPitch, a_plane = kTileV * a_pitch, plane = KP * a_pitch;  // Bᵀ's pitch is V_newᵀ's
      const std::uint32_t* const a = &vn_op.at(0, g, t);
#pragma unroll
      for (int kk = 0; kk < kChunk / 16; ++kk) {
        std::uint32_t fa[S][4];
#pragma unroll
        for (int n = 0; n < S; ++n) {
          const std::uint32_t* const an = a + n * a_plane + 8 * kk;
          fa[n][0] = an[0], fa[n][1] = an[8 * a_pitch], fa[n][2] = an[4], fa[n][3] = an[8 * a_pitch + 4];
        }
        mma_tiles<KS / 8, S, S>(acc, fa, &bt_op.at(0, w * KS + g, 8 * kk + t), a_pitch, plane);
      }
#pragma unroll
      for (int j = 0; j < KS / 8; ++j)
#pragma unroll
        for (int r = 0; r < 4; ++r) x[j][r] = decay * x[j][r] + acc[j][r];
    }
    __syncthreads();  // Bᵀ and V_newᵀ are read no more
    if (c + 1 < chunks) {
      if constexpr (L::kShared)
        stage_w(io(c + 1));
      else
        stage_bt(io(c + 1));
    } else if constexpr (!L::kShared) {
      commit_async();
    }
  }
}

}  // namespace larc::gpu::detail::register_state_pass
