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
// Steps 1–3 and the token loading are log_linear_fused.cuh's, shared with the backward
// (log_linear_fused_backward.cu). Speed on the H200: docs/gpu-kernels/log-linear.md, "Measured".
#include <cstdint>

#include "families.h"
#include "log_linear_fused.cuh"
#include "log_linear_inputs.h"
#include "kernel_common.cuh"

namespace larc::gpu::detail {

namespace {

using namespace log_linear_fused;

constexpr int kWarpsPerBlock = 4;

template <typename T>
struct Problem {
  Inputs<T> in;
  Strided<T> o;
  std::int64_t columns = 0;  // B · H · V, one warp each
};

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
  const std::int64_t c = column % p.in.V, bh = column / p.in.V, h = bh % p.in.H, b = bh / p.in.H;

  float S[kLevels][kRows];  // column c of every level state, rows lane + 32 i
#pragma unroll
  for (int l = 0; l < kLevels; ++l)
#pragma unroll
    for (int i = 0; i < kRows; ++i) S[l][i] = 0.f;

  Token<kRows> x = load_token<T, variant, kRows>(p.in, b, h, c, 0, lane);
  for (std::int64_t t = 0; t < p.in.T_len; ++t) {
    Token<kRows> next;
    if (t + 1 < p.in.T_len) next = load_token<T, variant, kRows>(p.in, b, h, c, t + 1, lane);

    cascade(S, t);                                                     // 1.
    transition<variant>(S, t, x, [](int, const float(&)[kRows]) {});  // 2.
    write_token<variant>(S, x);                                        // 3.

    // 4. o_t = Σ_{live ℓ} λ_t^(ℓ) S^(ℓ)ᵀ q_t: this lane's rows of every live level, then one sum over K.
    const int highest = highest_level(t);
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
  if (p.in.levels <= kFewLevels)
    launch_kernel(log_linear_fused_recurrent<T, variant, kRows, kFewLevels>, blocks, kWarpsPerBlock * 32, 0, stream, p);
  else
    launch_kernel(log_linear_fused_recurrent<T, variant, kRows, kMaxLevels>, blocks, kWarpsPerBlock * 32, 0, stream, p);
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
    p.in = inputs_of<T>(in, T_len, H, v.size('K'), v.size('V'));
    p.o = strided<T>(in.o);
    p.columns = columns;
    const auto grid = static_cast<unsigned>(blocks);
    with_lane_rows(p.in.K, [&]<int kRows>() { launch_rows<T, variant, kRows>(p, grid, stream_of(args)); });
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
