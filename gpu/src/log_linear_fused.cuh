// The pieces of the fused recurrent log-linear kernels that the forward (log_linear_fused.cu) and the
// backward (log_linear_fused_backward.cu) share: one token's inputs as a lane holds them, the xor-butterfly
// sum over a warp, and steps 1–3 of reference/log_linear.h's State::step on one value column of every
// Fenwick level, held in registers (lane l owns rows l + 32 i, i < kRows; every index static after
// unrolling). SPEC §4; the mapping: docs/gpu-kernels/log-linear.md, "Fused recurrent".
#pragma once

#include <cstdint>

#include "kernel_common.cuh"
#include "log_linear_inputs.h"

namespace larc::gpu::detail::log_linear_fused {

enum class Variant { mamba2, gdn };

constexpr unsigned kFullMask = 0xffffffffu;
// The register level stacks the kernels are built with; T ≤ 2^(kMaxLevels − 1) tokens.
constexpr int kFewLevels = 16;  // T ≤ 32,768
constexpr int kMaxLevels = 24;  // T ≤ 2^23
constexpr std::int64_t kMaxT = std::int64_t{1} << (kMaxLevels - 1);

// The mechanisms' inputs (q, k [B,T,1,K] for Mamba-2, [B,T,H,K] for GDN; v [B,T,H,V]; g, beta [B,T,H];
// level_scales [B,T,H,L]) and the sizes the kernels index them with.
template <typename T>
struct Inputs {
  Strided<const T> q, k, v, g, beta, level_scales;  // beta: GDN only
  std::int64_t T_len = 0, H = 0, K = 0, V = 0;
  int levels = 0;  // level_count(T): the levels read from level_scales
};

// A validated launch's inputs as the kernels read them, with its sizes.
template <typename T>
Inputs<T> inputs_of(const LogLinearInputs& in, std::int64_t T_len, std::int64_t H, std::int64_t K, std::int64_t V) {
  Inputs<T> x;
  x.q = strided<const T>(in.q);
  x.k = strided<const T>(in.k);
  x.v = strided<const T>(in.v);
  x.g = strided<const T>(in.g);
  x.beta = strided<const T>(in.beta);
  x.level_scales = strided<const T>(in.level_scales);
  x.T_len = T_len;
  x.H = H;
  x.K = K;
  x.V = V;
  x.levels = in.levels;
  return x;
}

// f.template operator()<kRows>() with the rows a lane holds for K (lane l rows l + 32 i, i < kRows):
// 1, 2 or 4 for K ≤ 32, 64, 128.
template <class F>
auto with_lane_rows(std::int64_t K, F&& f) {
  if (K <= 32) return f.template operator()<1>();
  if (K <= 64) return f.template operator()<2>();
  return f.template operator()<4>();
}

// One token's inputs as this lane needs them.
template <int kRows>
struct Token {
  float q[kRows] = {}, k[kRows] = {};
  float v = 0.f, g = 0.f, beta = 0.f;
  float lambda = 0.f;  // λ_t^(lane) for lane < levels
};

template <typename T, Variant variant, int kRows>
__device__ __forceinline__ Token<kRows> load_token(const Inputs<T>& p, std::int64_t b, std::int64_t h, std::int64_t c,
                                                   std::int64_t t, int lane) {
  Token<kRows> x;
  const std::int64_t qk_head = variant == Variant::gdn ? h : 0;  // Mamba-2: one head shared by all
  // The innermost dimension has stride 1 (Validator), so a row is an offset from the head's start.
  const T* q = p.q.at(b, t, qk_head);
  const T* k = p.k.at(b, t, qk_head);
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const int row = lane + 32 * i;
    if (row < p.K) {
      x.q[i] = to_float(q[row]);
      x.k[i] = to_float(k[row]);
    }
  }
  x.v = to_float(*p.v.at(b, t, h, c));
  x.g = to_float(*p.g.at(b, t, h));
  if constexpr (variant == Variant::gdn) x.beta = to_float(*p.beta.at(b, t, h));
  if (lane < p.levels) x.lambda = to_float(*p.level_scales.at(b, t, h, lane));
  return x;
}

// The sum over the warp's lanes, left in every lane with the same bits (fixed order: deterministic).
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

// Level ℓ ≥ 1 is live after token t's cascade iff bit ℓ−1 of t is set (SPEC §4, LL-C1).
__device__ __forceinline__ bool live(std::int64_t t, int level) { return (t >> (level - 1)) & 1; }

// bit_width(t): the highest live level after token t's cascade.
__device__ __forceinline__ int highest_level(std::int64_t t) { return 64 - __clzll(t); }

// 1. cascade before token t ≥ 1: S^(j+1) = S^(0) + S^(1) + … + S^(j), j = ctz(t), summed in LevelStack's
//    order (S^(l) + running sum). The running sum passes through levels 1..j, which end up dead; level
//    j+1 was empty, so its stale registers count as zero (0 + x = x exactly).
template <int kLevels, int kRows>
__device__ __forceinline__ void cascade(float (&S)[kLevels][kRows], std::int64_t t) {
  if (t == 0) return;
  const int j = __ffsll(t) - 1;
#pragma unroll
  for (int l = 1; l < kLevels; ++l) {
    if (l > j + 1) break;
#pragma unroll
    for (int i = 0; i < kRows; ++i) S[l][i] = (l <= j ? S[l][i] : 0.f) + S[l - 1][i];
  }
}

// 2. the token's transition on every live level ℓ ≥ 1 (level 0 is empty here): Mamba-2 S ← a S; GDN
//    S ← a S, u = β (0 − Sᵀ k), S ← S + k uᵀ (delta_rule::State::step with a zero value), a = e^{g_t},
//    level by level. before(l, S[l]) sees each live level as the cascade left it (the backward records it).
template <Variant variant, int kLevels, int kRows, class Before>
__device__ __forceinline__ void transition(float (&S)[kLevels][kRows], std::int64_t t, const Token<kRows>& x,
                                           Before&& before) {
  const int highest = highest_level(t);
  const float a = exp_rounded_once(x.g);
#pragma unroll
  for (int l = 1; l < kLevels; ++l) {
    if (l > highest) break;
    if (!live(t, l)) continue;
    before(l, S[l]);
    if constexpr (variant == Variant::mamba2) {
#pragma unroll
      for (int i = 0; i < kRows; ++i) S[l][i] *= a;
    } else {
      float dot = 0.f;
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        S[l][i] *= a;
        dot += S[l][i] * x.k[i];
      }
      const float u = x.beta * (0.f - warp_sum(dot));
#pragma unroll
      for (int i = 0; i < kRows; ++i) S[l][i] += x.k[i] * u;
    }
  }
}

// The factor of the token's write k (w v)ᵀ: w = β (GDN) or 1 (Mamba-2).
template <Variant variant, int kRows>
__device__ __forceinline__ float write_weight(const Token<kRows>& x) {
  return variant == Variant::gdn ? x.beta * x.v : x.v;
}

// 3. the token at level 0: k vᵀ (Mamba-2), k (β v)ᵀ (GDN).
template <Variant variant, int kLevels, int kRows>
__device__ __forceinline__ void write_token(float (&S)[kLevels][kRows], const Token<kRows>& x) {
  const float w = write_weight<variant>(x);
#pragma unroll
  for (int i = 0; i < kRows; ++i) S[0][i] = x.k[i] * w;
}

}  // namespace larc::gpu::detail::log_linear_fused
