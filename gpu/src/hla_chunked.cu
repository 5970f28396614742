// Chunked second-order masked HLA (SPEC §5, Fig. 1(C), HLA-C1/C2/C10): "hla-chunked" and
// "hla-normalized-chunked", mechanisms "hla" and "hla-normalized" (inputs, stages and arithmetic in
// hla_chunked.cuh). For chunk c with Q, K, W its rows and A = L ⊙ (Q Kᵀ), and S = Σ k kᵀ, F = S^K C − G
// (reference/hla_second.h) before the chunk (S_p, F_p):
//   o  = Q F_p + ((Q S_p Qᵀ + A Aᵀ) ⊙ L) W                  (second_chunked at γ = 1)
//   F += (S_p Qᵀ + (A K)ᵀ) W                                 (second_combine: F_new − F_p = S_p C_b + S_b C_b − G_b,
//   S += Kᵀ K                                                 the S_b C_p terms cancel, and S_b C_b − G_b =
//                                                             Kᵀ triu(K Qᵀ) W = Kᵀ Aᵀ W, the pairs i ≤ j)
// S is symmetric (a sum of k kᵀ), so its rows are read as its columns.
#include <string>

#include "families.h"
#include "hla_chunked.cuh"

namespace larc::gpu::detail {

namespace {

using namespace hla_chunked;
using namespace chunk_operands;

template <class T>
constexpr int kIn = kInputTerms<T>;

// ---- summary: S_b = Kᵀ K ---------------------------------------------------------------------------
template <class T, int KP>
__global__ void __launch_bounds__(kThreads) second_summary(const Params<T> p) {
  float4* const smem_vec = dynamic_shared<float4>();
  const auto kt_op = operand_at<T, kIn<T>, kChunk>(smem_vec, KP);
  const Chunk ch = chunk_of(p);
  const ChunkInputs<T> in = inputs_of(p, ch);
  fill_transposed<KP>(kt_op, [&](int s, int d) { return in.key(s, d); });
  __syncthreads();
  float* const S = p.first_sum + ch.record * KP * KP;
  for_each_strip<KP, KP, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, kChunk>(acc, kt_op, kt_op, m0, n0);
    for_each_element(acc, m0, n0, [&](int d, int e, float y) { S[d * KP + e] = y; });
  });
}

// ---- cross: X = (S_p Qᵀ + (A K)ᵀ) W ----------------------------------------------------------------
// Shared memory (words): Q [64 rows][KP] and Kᵀ [KP rows][64] (input terms), A [64][64] (kSumTerms), and
// a region holding K [64 rows][KP] (input terms) until A is formed, then S_p [KP][KP] (kSumTerms), then
// N = S_p Qᵀ + (A K)ᵀ [KP rows][64] (kSumTerms) followed by the Wᵀ tiles [kTile rows][64] (input terms).
// 204 KB at KP = 128 for fp16 inputs (two input terms), 168 KB for bf16.
template <class T, int KP>
struct CrossLayout {
  static constexpr int kQ = operand_words<T, kIn<T>>(kChunk, KP);
  static constexpr int kKt = operand_words<T, kIn<T>>(KP, kChunk);
  static constexpr int kA = operand_words<T, kSumTerms>(kChunk, kChunk);
  static constexpr int kS = operand_words<T, kSumTerms>(KP, KP);
  static constexpr int kN = operand_words<T, kSumTerms>(KP, kChunk);
  static constexpr int kNW = kN + operand_words<T, kIn<T>>(kTile, kChunk);
  static constexpr int kRegion = kQ > kS ? (kQ > kNW ? kQ : kNW) : (kS > kNW ? kS : kNW);
  static constexpr int kWords = kQ + kKt + kA + kRegion;
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads) second_cross(const Params<T> p) {
  using L = CrossLayout<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto q_op = operand_at<T, kIn<T>, KP>(words, kChunk);
  const auto kt_op = operand_at<T, kIn<T>, kChunk>(words + L::kQ, KP);
  const auto a_op = operand_at<T, kSumTerms, kChunk>(words + L::kQ + L::kKt, kChunk);
  float* const region = words + L::kQ + L::kKt + L::kA;
  const auto k_op = operand_at<T, kIn<T>, KP>(region, kChunk);
  const auto s_op = operand_at<T, kSumTerms, KP>(region, KP);
  const auto n_op = operand_at<T, kSumTerms, kChunk>(region, KP);
  const auto wt_op = operand_at<T, kIn<T>, kChunk>(region + L::kN, kTile);

  const Chunk ch = chunk_of(p);
  const ChunkInputs<T> in = inputs_of(p, ch);
  const float* const S = p.first_sum + ch.record * KP * KP;
  fill(q_op, kChunk, [&](int i, int d) { return in.query(i, d); });
  fill(k_op, kChunk, [&](int i, int d) { return in.key(i, d); });
  fill_transposed<KP>(kt_op, [&](int s, int d) { return in.key(s, d); });
  __syncthreads();
  form_causal_scores<T, KP>(a_op, q_op, k_op);
  __syncthreads();  // K is read no more: S_p over it
  fill(s_op, KP, [&](int d, int e) { return S[d * KP + e]; });
  __syncthreads();

  // N = S_p Qᵀ + Kᵀ Aᵀ, this warp's strips of [KP][64] in registers until S_p is read no more.
  constexpr int m_tiles = KP / 16, strips = m_tiles * (kChunk / 16) / kWarps;
  float n_acc[strips][2][4];
#pragma unroll
  for (int s = 0; s < strips; ++s) {
    const int strip = threadIdx.x / 32 + kWarps * s, m0 = strip % m_tiles * 16, n0 = strip / m_tiles * 16;
    zero(n_acc[s]);
    warp_product<T, KP>(n_acc[s], s_op, q_op, m0, n0);
    warp_product<T, kChunk>(n_acc[s], kt_op, a_op, m0, n0);
  }
  __syncthreads();
#pragma unroll
  for (int s = 0; s < strips; ++s) {
    const int strip = threadIdx.x / 32 + kWarps * s, m0 = strip % m_tiles * 16, n0 = strip / m_tiles * 16;
    for_each_pair(n_acc[s], m0, n0, [&](int d, int j, float x0, float x1) { store_pair(n_op, d, j, x0, x1); });
  }

  float* const X = p.cross_sum + ch.record * KP * p.dw;
  for (int v0 = 0; v0 < p.dw; v0 += kTile) {
    __syncthreads();  // N is formed; the previous tile is read no more
    fill_transposed<kTile>(wt_op, [&](int s, int c) { return in.value(s, v0 + c); });
    __syncthreads();
    write_sum_tile<T, KP>(X, p.dw, v0, n_op, wt_op);
  }
}

// ---- output: o = Q F_p + ((Q S_p Qᵀ + A Aᵀ) ⊙ L) W ---------------------------------------------------
// Shared memory (words): Q, K [64 rows][KP] (input terms; Wᵀ tiles over K once A is formed), S_p
// [KP][KP] (kReadTerms; F_pᵀ tiles [kTile rows][KP] over it once U is formed), U = Q S_p [64][KP], A and
// P [64][64] (kReadTerms), the normaliser of the 64 rows.
template <class T, int KP>
struct OutputLayout {
  static constexpr int kQ = operand_words<T, kIn<T>>(kChunk, KP);
  static constexpr int kS = operand_words<T, kReadTerms>(KP, KP);
  static constexpr int kU = operand_words<T, kReadTerms>(kChunk, KP);
  static constexpr int kA = operand_words<T, kReadTerms>(kChunk, kChunk);
  static_assert(operand_words<T, kReadTerms>(kTile, KP) <= kS && operand_words<T, kIn<T>>(kTile, kChunk) <= kQ);
  static constexpr int kWords = 2 * kQ + kS + kU + 2 * kA + kChunk;
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads) second_output(const Params<T> p) {
  using L = OutputLayout<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto q_op = operand_at<T, kIn<T>, KP>(words, kChunk);
  const auto k_op = operand_at<T, kIn<T>, KP>(words + L::kQ, kChunk);
  const auto wt_op = operand_at<T, kIn<T>, kChunk>(words + L::kQ, kTile);
  const auto s_op = operand_at<T, kReadTerms, KP>(words + 2 * L::kQ, KP);
  const auto ft_op = operand_at<T, kReadTerms, KP>(words + 2 * L::kQ, kTile);
  const auto u_op = operand_at<T, kReadTerms, KP>(words + 2 * L::kQ + L::kS, kChunk);
  const auto a_op = operand_at<T, kReadTerms, kChunk>(words + 2 * L::kQ + L::kS + L::kU, kChunk);
  const auto p_op = operand_at<T, kReadTerms, kChunk>(words + 2 * L::kQ + L::kS + L::kU + L::kA, kChunk);
  float* const den = words + L::kWords - kChunk;

  const Chunk ch = chunk_of(p);
  const ChunkInputs<T> in = inputs_of(p, ch);
  const float* const S = p.first_sum + ch.record * KP * KP;
  fill(q_op, kChunk, [&](int i, int d) { return in.query(i, d); });
  fill(k_op, kChunk, [&](int i, int d) { return in.key(i, d); });
  fill(s_op, KP, [&](int e, int d) { return S[e * KP + d]; });  // B operand of Q S_p: row e = column e
  __syncthreads();
  form_causal_scores<T, KP>(a_op, q_op, k_op);
  for_each_strip<kChunk, KP, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, KP>(acc, q_op, s_op, m0, n0);
    for_each_pair(acc, m0, n0, [&](int t, int e, float x0, float x1) { store_pair(u_op, t, e, x0, x1); });
  });
  __syncthreads();
  // P = (U Qᵀ + A Aᵀ) ⊙ L: the pairs j ≤ t with i before the chunk, and with i in it (i ≤ j).
  for_each_strip<kChunk, kChunk, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, KP>(acc, u_op, q_op, m0, n0);
    warp_product<T, kChunk>(acc, a_op, a_op, m0, n0);
    for_each_pair(acc, m0, n0, [&](int t, int j, float x0, float x1) {
      store_pair(p_op, t, j, j <= t ? x0 : 0.f, j + 1 <= t ? x1 : 0.f);
    });
  });

  const float* const F = p.cross_sum + ch.record * KP * p.dw;
  const int tiles = (p.dw + kTile - 1) / kTile;
  for (int i = 0; i < tiles; ++i) {
    const int v0 = output_tile_start(i, p.V, p.dw, p.normalized);
    __syncthreads();  // P is formed; the previous tile is read no more
    fill_transposed<kTile>(ft_op, [&](int d, int c) { return v0 + c < p.dw ? F[std::int64_t{d} * p.dw + v0 + c] : 0.f; });
    fill_transposed<kTile>(wt_op, [&](int s, int c) { return in.value(s, v0 + c); });
    __syncthreads();
    write_output_tile(p, ch, v0, den, q_op, ft_op, p_op, wt_op);
  }
}

template <class T, int KP>
struct SecondOrderStages {
  static Stages<T> get(int) {
    return {second_summary<T, KP>,
            second_cross<T, KP>,
            second_output<T, KP>,
            sizeof(float) * operand_words<T, kIn<T>>(KP, kChunk),
            sizeof(float) * CrossLayout<T, KP>::kWords,
            sizeof(float) * OutputLayout<T, KP>::kWords,
            KP,
            false};
  }
};

}  // namespace

void append_hla_chunked_kernels(std::vector<Kernel>& out) {
  out.push_back(hla_entry("hla-chunked", "hla",
                          "second-order masked HLA, chunked (C = 64): chunk sums of k kᵀ and of the cross terms by "
                          "elementwise prefix passes, every product per chunk on tensor cores (HLA-C10)",
                          [](const LaunchArgs& args) { return hla_chunked::launch<SecondOrderStages>(args, "hla-chunked", false); },
                          hla_chunked::kChunk));
  out.push_back(hla_entry("hla-normalized-chunked", "hla-normalized",
                          "second-order masked HLA over its normaliser + 1e-6, chunked (C = 64) like hla-chunked",
                          [](const LaunchArgs& args) {
                            return hla_chunked::launch<SecondOrderStages>(args, "hla-normalized-chunked", true);
                          },
                          hla_chunked::kChunk));
}

}  // namespace larc::gpu::detail
