// Fused recurrent log-linear attention (SPEC §4), both variants, one launch per forward:
//
//   "log-linear-fused-recurrent"     mechanism "log-linear": Mamba-2 decay, FLA chunk_log_linear_attn's
//                                    layout (q, k [B,T,1,K] shared by all heads, v [B,T,H,V], g [B,T,H],
//                                    level_scales [B,T,H,L]).
//   "log-linear-gdn-fused-recurrent" mechanism "log-linear-gdn": the GDN variant (q, k [B,T,H,K],
//                                    beta [B,T,H], the rest as above).
//
// Both output o [B,T,H,V] only (the mechanisms have no state in or out) with no read scale, and
// mirror reference/log_linear.h's State::step (the serial / decode form) token by token:
//
//   1. cascade (LevelStack::cascade): level ℓ is full at 2^ℓ tokens and is added into level ℓ+1. Before
//      token t ≥ 1 the levels 0..j, j = ctz(t), are full (levels 1..j hold bits 0..j−1 of t−1, all set)
//      and level j+1 is empty (bit j of t−1 is clear), so the cascade is S^(j+1) = S^(0) + … + S^(j)
//      and levels 0..j empty. Afterwards level ℓ ≥ 1 is live iff bit ℓ−1 of t is set (LL-C1: the
//      Fenwick buckets, popcount(t) of them, holding 2^{ℓ−1} tokens each).
//   2. transition every live level (State::absorb): Mamba-2 S ← a_t S; GDN S ← a_t S,
//      S ← S + k (β (0 − Sᵀ k))ᵀ, i.e. delta_rule::State::step with a zero value, a_t = e^{g_t}.
//   3. write the token at level 0: k vᵀ (Mamba-2) or k (β v)ᵀ (GDN).
//   4. read o_t = Σ_{live ℓ} λ_t^(ℓ) S^(ℓ)ᵀ q_t (State::read), levels 0..bit_width(t) of the
//      ⌈log2 T⌉ + 1 that T tokens touch.
//
// Mapping: one warp per (b, h, value column c). Its lane owns rows k = lane + 32 i (i < kRows) of
// column c of every level state, kept in registers (kLevels × kRows floats, every index static after
// unrolling). A column's recurrence involves no other column (the Mamba-2 transition is a scalar; the
// GDN transition (I − β k kᵀ) acts on rows only), so warps never communicate; the sums over K
// (Sᵀ k for GDN, Sᵀ q for the read) are xor-butterfly shuffles, which leave the identical sum in every
// lane and add in a fixed order (deterministic). No atomics, no shared memory, no barrier.
// Speed on the H200: docs/gpu-kernels/log-linear.md, "Measured".
#include <bit>
#include <cstdint>

#include "families.h"
#include "log_linear_inputs.h"
#include "kernel_common.cuh"

namespace larc::gpu::detail {

namespace {

enum class Variant { mamba2, gdn };

constexpr int kWarpsPerBlock = 4;
constexpr unsigned kFullMask = 0xffffffffu;
// The register level stacks the kernels are built with; T ≤ 2^(kMaxLevels − 1) tokens.
constexpr int kFewLevels = 16;  // T ≤ 32,768
constexpr int kMaxLevels = 24;  // T ≤ 2^23
constexpr std::int64_t kMaxT = std::int64_t{1} << (kMaxLevels - 1);

template <typename T>
struct Problem {
  Strided<const T> q, k, v, g, beta, level_scales;  // beta: GDN only
  Strided<T> o;
  std::int64_t T_len = 0, H = 0, K = 0, V = 0;
  std::int64_t columns = 0;  // B · H · V, one warp each
  int levels = 0;            // level_count(T): the levels read from level_scales
};

// One token's inputs as this lane needs them.
template <int kRows>
struct Token {
  float q[kRows] = {}, k[kRows] = {};
  float v = 0.f, g = 0.f, beta = 0.f;
  float lambda = 0.f;  // λ_t^(lane) for lane < levels
};

template <typename T, Variant variant, int kRows>
__device__ __forceinline__ Token<kRows> load_token(const Problem<T>& p, std::int64_t b, std::int64_t h, std::int64_t c,
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

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) x += __shfl_xor_sync(kFullMask, x, offset);
  return x;
}

// Level ℓ ≥ 1 is live after token t's cascade iff bit ℓ−1 of t is set (SPEC §4, LL-C1).
__device__ __forceinline__ bool live(std::int64_t t, int level) { return (t >> (level - 1)) & 1; }

// GDN at kLevels = 16 is held to 128 registers (4 blocks, 16 warps an SM: B·H·V = 2048 columns fit one
// wave of 132 SMs); with the level-by-level sums below it does not spill. Unbounded (every live level's
// shuffles issued together) it took two waves; the bound on Mamba-2 slowed it, so Mamba-2 has none (the
// measurements: docs/gpu-kernels/log-linear.md, "Measured"). 0 leaves the register count to ptxas as no
// bound does (1 makes it allocate differently).
template <Variant variant, int kLevels>
constexpr int kMinBlocksPerSm = variant == Variant::gdn && kLevels <= kFewLevels ? 4 : 0;

template <typename T, Variant variant, int kRows, int kLevels>
__global__ void __launch_bounds__(kWarpsPerBlock * 32, (kMinBlocksPerSm<variant, kLevels>))
    log_linear_fused_recurrent(const Problem<T> p) {
  const int lane = threadIdx.x % 32;
  const std::int64_t column = static_cast<std::int64_t>(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  if (column >= p.columns) return;  // whole warps only: the shuffles below see full warps
  const std::int64_t c = column % p.V, bh = column / p.V, h = bh % p.H, b = bh / p.H;

  float S[kLevels][kRows];  // column c of every level state, rows lane + 32 i
#pragma unroll
  for (int l = 0; l < kLevels; ++l)
#pragma unroll
    for (int i = 0; i < kRows; ++i) S[l][i] = 0.f;

  Token<kRows> x = load_token<T, variant, kRows>(p, b, h, c, 0, lane);
  for (std::int64_t t = 0; t < p.T_len; ++t) {
    Token<kRows> next;
    if (t + 1 < p.T_len) next = load_token<T, variant, kRows>(p, b, h, c, t + 1, lane);

    // 1. cascade: S^(j+1) = S^(0) + S^(1) + … + S^(j), j = ctz(t), summed in LevelStack's order
    //    (S^(l) + running sum). The running sum passes through levels 1..j, which end up dead; level
    //    j+1 was empty, so its stale registers count as zero (0 + x = x exactly).
    if (t > 0) {
      const int j = __ffsll(t) - 1;
#pragma unroll
      for (int l = 1; l < kLevels; ++l) {
        if (l > j + 1) break;
#pragma unroll
        for (int i = 0; i < kRows; ++i) S[l][i] = (l <= j ? S[l][i] : 0.f) + S[l - 1][i];
      }
    }

    // 2. the token's transition on every live level ℓ ≥ 1 (level 0 is empty here).
    const int highest = 64 - __clzll(t);  // bit_width(t): the highest live level
    const float a = exp_rounded_once(x.g);
    if constexpr (variant == Variant::mamba2) {
#pragma unroll
      for (int l = 1; l < kLevels; ++l) {
        if (l > highest) break;
        if (!live(t, l)) continue;
#pragma unroll
        for (int i = 0; i < kRows; ++i) S[l][i] *= a;
      }
    } else {
      // S ← a S; u = β (0 − Sᵀ k); S ← S + k uᵀ, level by level.
#pragma unroll
      for (int l = 1; l < kLevels; ++l) {
        if (l > highest) break;
        if (!live(t, l)) continue;
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

    // 3. the token at level 0: k vᵀ (Mamba-2), k (β v)ᵀ (GDN).
    const float w = variant == Variant::gdn ? x.beta * x.v : x.v;
#pragma unroll
    for (int i = 0; i < kRows; ++i) S[0][i] = x.k[i] * w;

    // 4. o_t = Σ_{live ℓ} λ_t^(ℓ) S^(ℓ)ᵀ q_t: this lane's rows of every live level, then one sum over K.
    float partial = 0.f;
#pragma unroll
    for (int l = 0; l < kLevels; ++l) {
      if (l > highest) break;
      if (l > 0 && !live(t, l)) continue;
      const float lambda = __shfl_sync(kFullMask, x.lambda, l);
      float read = 0.f;
#pragma unroll
      for (int i = 0; i < kRows; ++i) read += S[l][i] * x.q[i];
      partial += lambda * read;
    }
    const float out = warp_sum(partial);
    if (lane == 0) *p.o.at(b, t, h, c) = from_float<T>(out);
    x = next;
  }
}

template <typename T, Variant variant, int kRows>
void launch_rows(const Problem<T>& p, unsigned blocks, cudaStream_t stream) {
  if (p.levels <= kFewLevels)
    log_linear_fused_recurrent<T, variant, kRows, kFewLevels><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(p);
  else
    log_linear_fused_recurrent<T, variant, kRows, kMaxLevels><<<blocks, kWarpsPerBlock * 32, 0, stream>>>(p);
}

template <Variant variant>
Status launch(const LaunchArgs& args) {
  constexpr bool gdn = variant == Variant::gdn;
  const std::string name = gdn ? "log-linear-gdn-fused-recurrent" : "log-linear-fused-recurrent";
  Validator v(name, args);
  const LogLinearInputs in = validate_log_linear(v, args, gdn, kMaxT);
  const std::int64_t B = v.size('B'), T_len = v.size('T'), H = v.size('H');
  const std::int64_t columns = B * H * v.size('V');
  const std::int64_t blocks = (columns + kWarpsPerBlock - 1) / kWarpsPerBlock;
  v.require_grid(blocks);
  if (!v.ok()) return v.status();
  if (T_len == 0 || blocks == 0) return Status::success();  // o is empty: nothing to write

  return dispatch_float(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    Problem<T> p;
    p.q = strided<const T>(in.q);
    p.k = strided<const T>(in.k);
    p.v = strided<const T>(in.v);
    p.g = strided<const T>(in.g);
    p.beta = strided<const T>(in.beta);
    p.level_scales = strided<const T>(in.level_scales);
    p.o = strided<T>(in.o);
    p.T_len = T_len;
    p.H = H;
    p.K = v.size('K');
    p.V = v.size('V');
    p.columns = columns;
    p.levels = in.levels;
    const auto grid = static_cast<unsigned>(blocks);
    if (p.K <= 32) launch_rows<T, variant, 1>(p, grid, stream_of(args));
    else if (p.K <= 64) launch_rows<T, variant, 2>(p, grid, stream_of(args));
    else launch_rows<T, variant, 4>(p, grid, stream_of(args));
    return launch_status(name);
  });
}

}  // namespace

void append_log_linear_kernels(std::vector<Kernel>& out) {
  out.push_back(log_linear_entry("log-linear-fused-recurrent", "log-linear",
                                 "log-linear attention, Mamba-2 decay (SPEC §4): Fenwick level states in registers, one "
                                 "warp per value column",
                                 kMaxT, launch<Variant::mamba2>));
  out.push_back(log_linear_entry("log-linear-gdn-fused-recurrent", "log-linear-gdn",
                                 "log-linear Gated DeltaNet (SPEC §4): per-level delta-rule transitions, Fenwick level "
                                 "states in registers, one warp per value column",
                                 kMaxT, launch<Variant::gdn>));
}

}  // namespace larc::gpu::detail
