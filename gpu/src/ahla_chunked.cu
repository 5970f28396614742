// Chunked AHLA (SPEC §5, Fig. 2(C), HLA-C6/C10): "ahla-chunked", mechanism "ahla" (inputs,
// stages and arithmetic in hla_chunked.cuh). For chunk c with Q, K, W its rows and A = L ⊙ (Q Kᵀ), and
// P = Σ k wᵀ, E = Σ_i k_i (q_iᵀ P_i) (reference/hla_ahla.h) before the chunk (P_p, E_p):
//   Y = Q P_p + A W          (row i: q_iᵀ P_i, P_i the sum through token i)
//   o = Q E_p + A Y,   E += Kᵀ Y,   P += Kᵀ W.
// Y is formed once, by the cross kernel, and kept for the output kernel (Yᵀ [dw][64] per chunk).
#include <string>

#include "families.h"
#include "hla_chunked.cuh"

namespace larc::gpu::detail {

namespace {

using namespace hla_chunked;
using namespace chunk_operands;

template <class T>
constexpr int kIn = kInputTerms<T>;

// ---- summary: P_b = Kᵀ W ---------------------------------------------------------------------------
template <class T, int KP>
struct SummaryLayout {
  static constexpr int kKt = operand_words<T, kIn<T>>(KP, kChunk);
  static constexpr int kWords = kKt + operand_words<T, kIn<T>>(kTile, kChunk);
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads) ahla_summary(const Params<T> p) {
  using L = SummaryLayout<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto kt_op = operand_at<T, kIn<T>, kChunk>(words, KP);
  const auto wt_op = operand_at<T, kIn<T>, kChunk>(words + L::kKt, kTile);
  const Chunk ch = chunk_of(p);
  const ChunkInputs<T> in = inputs_of(p, ch);
  fill_transposed<KP>(kt_op, [&](int s, int d) { return in.key(s, d); });
  float* const P = p.first_sum + ch.record * KP * p.dw;
  for (int v0 = 0; v0 < p.dw; v0 += kTile) {
    fill_transposed<kTile>(wt_op, [&](int s, int c) { return in.value(s, v0 + c); });
    __syncthreads();
    write_sum_tile<T, KP>(P, p.dw, v0, kt_op, wt_op);
    __syncthreads();  // the Wᵀ tile is read no more
  }
}

// ---- cross: Yᵀ = P_pᵀ Qᵀ + Wᵀ Aᵀ, X = Kᵀ Y ------------------------------------------------------------
// Shared memory (words): Q, K [64 rows][KP] and Kᵀ [KP rows][64] (input terms), A [64][64]
// (kSumTerms), per tile P_pᵀ [kTile rows][KP] and Yᵀ [kTile rows][64] (kSumTerms), Wᵀ [kTile rows][64]
// (input terms).
template <class T, int KP>
struct CrossLayout {
  static constexpr int kQ = operand_words<T, kIn<T>>(kChunk, KP);
  static constexpr int kKt = operand_words<T, kIn<T>>(KP, kChunk);
  static constexpr int kA = operand_words<T, kSumTerms>(kChunk, kChunk);
  static constexpr int kPt = operand_words<T, kSumTerms>(kTile, KP);
  static constexpr int kWt = operand_words<T, kIn<T>>(kTile, kChunk);
  static constexpr int kYt = operand_words<T, kSumTerms>(kTile, kChunk);
  static constexpr int kWords = 2 * kQ + kKt + kA + kPt + kWt + kYt;
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads) ahla_cross(const Params<T> p) {
  using L = CrossLayout<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto q_op = operand_at<T, kIn<T>, KP>(words, kChunk);
  const auto k_op = operand_at<T, kIn<T>, KP>(words + L::kQ, kChunk);
  const auto kt_op = operand_at<T, kIn<T>, kChunk>(words + 2 * L::kQ, KP);
  float* const tail = words + 2 * L::kQ + L::kKt;
  const auto a_op = operand_at<T, kSumTerms, kChunk>(tail, kChunk);
  const auto pt_op = operand_at<T, kSumTerms, KP>(tail + L::kA, kTile);
  const auto wt_op = operand_at<T, kIn<T>, kChunk>(tail + L::kA + L::kPt, kTile);
  const auto yt_op = operand_at<T, kSumTerms, kChunk>(tail + L::kA + L::kPt + L::kWt, kTile);

  const Chunk ch = chunk_of(p);
  const ChunkInputs<T> in = inputs_of(p, ch);
  fill(q_op, kChunk, [&](int i, int d) { return in.query(i, d); });
  fill(k_op, kChunk, [&](int i, int d) { return in.key(i, d); });
  fill_transposed<KP>(kt_op, [&](int s, int d) { return in.key(s, d); });
  __syncthreads();
  form_causal_scores<T, KP>(a_op, q_op, k_op);

  const float* const P = p.first_sum + ch.record * KP * p.dw;
  float* const X = p.cross_sum + ch.record * KP * p.dw;
  float* const Yt = p.rows + ch.record * kChunk * p.dw;
  for (int v0 = 0; v0 < p.dw; v0 += kTile) {
    __syncthreads();  // A is formed; the previous tile is read no more
    fill_transposed<kTile>(pt_op, [&](int d, int c) { return v0 + c < p.dw ? P[std::int64_t{d} * p.dw + v0 + c] : 0.f; });
    fill_transposed<kTile>(wt_op, [&](int s, int c) { return in.value(s, v0 + c); });
    __syncthreads();
    for_each_strip<kTile, kChunk, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, KP>(acc, pt_op, q_op, m0, n0);
      warp_product<T, kChunk>(acc, wt_op, a_op, m0, n0);
      for_each_pair(acc, m0, n0, [&](int col, int i, float y0, float y1) {
        store_pair(yt_op, col, i, y0, y1);
        if (v0 + col < p.dw) *reinterpret_cast<float2*>(&Yt[std::int64_t{v0 + col} * kChunk + i]) = make_float2(y0, y1);
      });
    });
    __syncthreads();
    write_sum_tile<T, KP>(X, p.dw, v0, kt_op, yt_op);
  }
}

// ---- output: o = Q E_p + A Y ------------------------------------------------------------------------
// Shared memory (words): Q, K [64 rows][KP] (input terms), A [64][64], per tile E_pᵀ [kTile rows][KP] and
// Yᵀ [kTile rows][64] (kReadTerms).
template <class T, int KP>
struct OutputLayout {
  static constexpr int kQ = operand_words<T, kIn<T>>(kChunk, KP);
  static constexpr int kA = operand_words<T, kReadTerms>(kChunk, kChunk);
  static constexpr int kEt = operand_words<T, kReadTerms>(kTile, KP);
  static constexpr int kWords = 2 * kQ + kA + kEt + operand_words<T, kReadTerms>(kTile, kChunk);
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads) ahla_output(const Params<T> p) {
  using L = OutputLayout<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto q_op = operand_at<T, kIn<T>, KP>(words, kChunk);
  const auto k_op = operand_at<T, kIn<T>, KP>(words + L::kQ, kChunk);
  const auto a_op = operand_at<T, kReadTerms, kChunk>(words + 2 * L::kQ, kChunk);
  const auto et_op = operand_at<T, kReadTerms, KP>(words + 2 * L::kQ + L::kA, kTile);
  const auto yt_op = operand_at<T, kReadTerms, kChunk>(words + 2 * L::kQ + L::kA + L::kEt, kTile);

  const Chunk ch = chunk_of(p);
  const ChunkInputs<T> in = inputs_of(p, ch);
  fill(q_op, kChunk, [&](int i, int d) { return in.query(i, d); });
  fill(k_op, kChunk, [&](int i, int d) { return in.key(i, d); });
  __syncthreads();
  form_causal_scores<T, KP>(a_op, q_op, k_op);

  const float* const E = p.cross_sum + ch.record * KP * p.dw;
  const float* const Yt = p.rows + ch.record * kChunk * p.dw;
  const int tiles = (p.dw + kTile - 1) / kTile;
  for (int i = 0; i < tiles; ++i) {
    const int v0 = output_tile_start(i, p.V, p.dw, p.normalized);
    __syncthreads();  // A is formed; the previous tile is read no more
    fill_transposed<kTile>(et_op, [&](int d, int c) { return v0 + c < p.dw ? E[std::int64_t{d} * p.dw + v0 + c] : 0.f; });
    fill(yt_op, kTile, [&](int c, int j) { return v0 + c < p.dw ? Yt[std::int64_t{v0 + c} * kChunk + j] : 0.f; });
    __syncthreads();
    write_output_tile(p, ch, v0, nullptr, q_op, et_op, a_op, yt_op);
  }
}

template <class T, int KP>
struct AhlaStages {
  static Stages<T> get(int dw) {
    return {ahla_summary<T, KP>,
            ahla_cross<T, KP>,
            ahla_output<T, KP>,
            sizeof(float) * SummaryLayout<T, KP>::kWords,
            sizeof(float) * CrossLayout<T, KP>::kWords,
            sizeof(float) * OutputLayout<T, KP>::kWords,
            dw,
            true};
  }
};

}  // namespace

void append_ahla_chunked_kernels(std::vector<Kernel>& out) {
  out.push_back(hla_entry("ahla-chunked", "ahla",
                          "asymmetric HLA, chunked (C = 64): chunk sums of k wᵀ and of k (qᵀ P) by elementwise prefix "
                          "passes, every product per chunk on tensor cores (HLA-C6, HLA-C10)",
                          [](const LaunchArgs& args) { return hla_chunked::launch<AhlaStages>(args, "ahla-chunked", false); },
                          hla_chunked::kChunk));
}

}  // namespace larc::gpu::detail
