// Chunked log-linear attention, GDN variant (SPEC §4 "Chunked"; docs/gpu-kernels/log-linear.md): "log-linear-gdn-chunked",
// mechanism "log-linear-gdn", the inputs and output of log-linear-gdn-fused-recurrent (q, k [B,T,H,K],
// v [B,T,H,V], g and beta [B,T,H], level_scales [B,T,H,L]; o [B,T,H,V]; no state in or out, no read
// scale), K ≤ 128, T ≤ 2^20.
//
// Every level state evolves by GDN's transition M_r = a_r (I − β_r k_r k_rᵀ), so for chunk c (rows Q, K,
// W, U, P, γ of delta_rule_chunked's chunk_prepare, A_chunk = P T Diag(β) its token-to-token attention,
// reference/log_linear.h chunk_operators) with the levels of log_linear_chunk_levels.cuh:
//   o   = (Λ ⊙ A_chunk) V  +  Σ_{m live at c} Diag(λ^(6+m)) (Diag(γ) Q − P W) S^(m)
//   S^(m) ← γ_{n−1} S^(m) − K̃ᵀ (W S^(m))      for every live level (the chunk's carry: U = 0)
//   S^(0) = K̃ᵀ U                               (the chunk's own write: S = 0)
// Λ_ts = λ_t^(ℓ(t,s)) the in-chunk level weights; the cascade of log_linear_chunked.cu precedes the read.
//
// Three kernels: delta_rule_chunked's chunk_prepare (every chunk at once) writes the GDN chunk records
// and (T Diag(β))ᵀ; level_pass (one block per (batch, head, tile of kLevelTileV value columns), chunks
// in order: the sequential part) keeps every level's tile in shared memory, writes the live levels each
// chunk reads as chunk_output's operand images, carries them kGroup levels per product, and writes
// S^(0); chunk_output (one block per (head, chunk, tile of kOutTileV columns), every chunk at once)
// forms o. Arithmetic (chunk_operands.cuh): the level states fp32; W, K̃ᵀ, U, S and W S on the state's
// path in three bf16 terms; P, (T Diag(β))ᵀ, the weighted attention, Wᵀ, Diag(γ)Q − P W and the level
// images, read only by o, in two; fp32 inputs by FMA in fp64.
//
// Workspace (stream-ordered): the chunk records, the solves, and chunk_levels level images per chunk
// (e.g. 14.9 GB at B = 1, H = 16, K = V = 128, T = 65,536).
#include <string>

#include "chunk_launch.cuh"
#include "delta_rule_chunked.cuh"
#include "families.h"
#include "log_linear_chunk_levels.cuh"
#include "log_linear_inputs.h"

namespace larc::gpu::detail {

namespace {

using namespace chunk_operands;
using namespace chunk_launch;
using namespace log_linear_levels;
using delta_rule_chunked::kChunk;
using delta_rule_chunked::kOutputTerms;
using delta_rule_chunked::kStateTerms;
using delta_rule_chunked::Record;

constexpr int kThreads = kBlockThreads;
static_assert(kChunk == kLogLinearChunk, "chunking_of counts the chunks of chunk_prepare");
constexpr int kLevelTileV = 8;  // value columns per level_pass block
constexpr int kGroup = 4;       // levels carried per product pass
constexpr int kOutTileV = 64;   // value columns per chunk_output block
constexpr std::int64_t kMaxT = std::int64_t{1} << 20;
constexpr int kMaxChunkLevels = 14;  // chunk levels of ⌈kMaxT / 64⌉ chunks

template <class T>
struct Params {
  delta_rule_chunked::Params<T> chunk;  // q, k, v, g, β, o, the records and solves (chunk_prepare's)
  Strided<const T> level_scales;
  float* levels = nullptr;  // S^(m) read by chunk c: [H][slots][chunk_levels] images [V rows][KP] (kOutputTerms)
  int token_levels = 0, chunk_levels = 0, level_tiles = 0, out_tiles = 0;
};

// S^(m) as read by the chunk of (head, slot): chunk_output's B operand [V rows][KP].
template <class T, int KP>
__device__ __forceinline__ Operand<T, kOutputTerms, KP> level_image(const Params<T>& p, int h, std::int64_t slot, int m) {
  const std::int64_t words = std::int64_t{operand_words<T, kOutputTerms>(1, KP)} * p.chunk.V;
  return operand_at<T, kOutputTerms, KP>(p.levels + ((h * p.chunk.slots + slot) * p.chunk_levels + m - 1) * words,
                                         p.chunk.V);
}

// ---- level_pass ------------------------------------------------------------------------------------
// Shared memory (words): W [64 rows][KP] and K̃ᵀ [KP rows][64] (kStateTerms, as in the record), U
// [64][kLevelTileV] fp32, a group's S [kGroup·kLevelTileV rows][KP] and (W S)ᵀ [kGroup·kLevelTileV
// rows][64] and Uᵀ [kLevelTileV rows][64] (kStateTerms), γ [64]; then the levels 0..chunk_levels, each
// [KP][kLevelTileV] fp32 (dynamic tail).
template <class T, int KP>
struct PassLayout {
  static constexpr int kW = Record<T, KP>::kW, kKt = Record<T, KP>::kKt;
  static constexpr int kU = kChunk * kLevelTileV;
  static constexpr int kS = operand_words<T, kStateTerms>(kGroup * kLevelTileV, KP);
  static constexpr int kWS = operand_words<T, kStateTerms>(kGroup * kLevelTileV, kChunk);
  static constexpr int kUt = operand_words<T, kStateTerms>(kLevelTileV, kChunk);
  static constexpr int kFixedWords = kW + kKt + kU + kS + kWS + kUt + kChunk;
  static constexpr int kLevel = KP * kLevelTileV;
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads, 1) level_pass(const Params<T> p) {
  using L = PassLayout<T, KP>;
  using R = Record<T, KP>;
  constexpr int rows = kGroup * kLevelTileV;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto w_op = operand_at<T, kStateTerms, KP>(words, kChunk);
  const auto kt_op = operand_at<T, kStateTerms, kChunk>(words + L::kW, KP);
  float* const u_s = words + L::kW + L::kKt;
  const auto s_op = operand_at<T, kStateTerms, KP>(u_s + L::kU, rows);
  const auto ws_op = operand_at<T, kStateTerms, kChunk>(u_s + L::kU + L::kS, rows);
  const auto ut_op = operand_at<T, kStateTerms, kChunk>(u_s + L::kU + L::kS + L::kWS, kLevelTileV);
  float* const gamma_s = u_s + L::kU + L::kS + L::kWS + L::kUt;
  float* const level = words + L::kFixedWords;  // level m at level + m · L::kLevel, [KP][kLevelTileV]

  const auto& dp = p.chunk;
  const int col0 = static_cast<int>(blockIdx.x % p.level_tiles) * kLevelTileV;
  const int h = static_cast<int>(blockIdx.x / p.level_tiles % dp.H);
  const std::int64_t b = blockIdx.x / p.level_tiles / dp.H;
  const int V = dp.V;
  for (int e = threadIdx.x; e < (p.chunk_levels + 1) * L::kLevel; e += kThreads) level[e] = 0.f;

  for (std::int64_t c = 0; c < dp.chunks; ++c) {
    const std::int64_t slot = b * dp.chunks + c;
    const int n = static_cast<int>(dp.tokens - c * kChunk < kChunk ? dp.tokens - c * kChunk : kChunk);
    float* const record = delta_rule_chunked::record_of<T, KP>(dp, h, slot);
    __syncthreads();  // the previous chunk's operands are read no more
    copy_operand_async(w_op, operand_at<T, kStateTerms, KP>(R::w(record), kChunk));
    copy_operand_async(kt_op, operand_at<T, kStateTerms, kChunk>(R::kt(record), KP));
    copy_words_async<kBlockThreads>(gamma_s, R::gamma(record, V), kChunk);
    commit_async();
    for (int e = threadIdx.x; e < L::kU; e += kThreads) {
      const int i = e / kLevelTileV, col = col0 + e % kLevelTileV;
      u_s[e] = col < V ? R::u(record)[std::int64_t{i} * V + col] : 0.f;
    }
    if (c > 0) {  // cascade: E^(j+1) = E^(0) + … + E^(j), levels 0..j emptied (each thread its own elements)
      const int j = __ffsll(static_cast<long long>(c)) - 1;
      for (int e = threadIdx.x; e < L::kLevel; e += kThreads) {
        float run = 0.f;
        for (int m = 0; m <= j; ++m) {
          run += level[m * L::kLevel + e];
          level[m * L::kLevel + e] = 0.f;
        }
        level[(j + 1) * L::kLevel + e] = run;
      }
    }
    wait_async<0>();
    __syncthreads();
    const float decay_last = gamma_s[n - 1];

    // The live levels, as read by chunk c, to their images; then carried through the chunk kGroup at a time.
    for (std::int64_t bits = c; bits != 0;) {
      int group[kGroup], count = 0;
      for (; bits != 0 && count < kGroup; bits &= bits - 1) group[count++] = __ffsll(static_cast<long long>(bits));
      for (int g = 0; g < count; ++g) {
        const auto image = level_image<T, KP>(p, h, slot, group[g]);
        const float* const s = level + group[g] * L::kLevel;
        for (int e = threadIdx.x; e < kLevelTileV * (KP / 2); e += kThreads) {
          const int col = e / (KP / 2), d = e % (KP / 2) * 2;
          if (col0 + col < V) store_pair(image, col0 + col, d, s[d * kLevelTileV + col], s[(d + 1) * kLevelTileV + col]);
        }
      }
      fill(s_op, rows, [&](int r, int d) {
        const int g = r / kLevelTileV;
        return g < count ? level[group[g] * L::kLevel + d * kLevelTileV + r % kLevelTileV] : 0.f;
      });
      __syncthreads();
      // (W S)ᵀ = Sᵀ Wᵀ: row (level, column), reduction over the chunk's tokens.
      for_each_strip<rows, kChunk, 1>([&](int m0, int n0) {
        float acc[1][4];
        zero(acc);
        warp_product<T, KP>(acc, s_op, w_op, m0, n0);
        for_each_pair(acc, m0, n0, [&](int r, int i, float x0, float x1) { store_pair(ws_op, r, i, x0, x1); });
      });
      __syncthreads();
      // S ← γ_{n−1} S − K̃ᵀ (W S).
      for_each_strip<KP, rows, 1>([&](int m0, int n0) {
        float acc[1][4];
        zero(acc);
        warp_product<T, kChunk>(acc, kt_op, ws_op, m0, n0);
        for_each_element(acc, m0, n0, [&](int d, int r, float y) {
          const int g = r / kLevelTileV;
          if (g < count) {
            float& x = level[group[g] * L::kLevel + d * kLevelTileV + r % kLevelTileV];
            x = decay_last * x - y;
          }
        });
      });
      __syncthreads();  // S and (W S)ᵀ are read no more
    }
    // S^(0) = K̃ᵀ U (level 0 is empty after the cascade).
    fill(ut_op, kLevelTileV, [&](int col, int i) { return u_s[i * kLevelTileV + col]; });
    __syncthreads();
    for_each_strip<KP, kLevelTileV, 1>([&](int m0, int n0) {
      float acc[1][4];
      zero(acc);
      warp_product<T, kChunk>(acc, kt_op, ut_op, m0, n0);
      for_each_element(acc, m0, n0, [&](int d, int col, float y) { level[d * kLevelTileV + col] = y; });
    });
  }
}

// ---- chunk_output ----------------------------------------------------------------------------------
// Shared memory (words): γ [64]; Q [64 rows][KP] and a Vᵀ tile [kOutTileV rows][64] (input terms); P,
// (T Diag(β))ᵀ and the weighted attention Λ ⊙ A_chunk [64][64], Wᵀ [KP rows][64] (level images
// [kOutTileV rows][KP] over it once Q_W = Diag(γ) Q − P W is formed) and Q_W [64][KP] (kOutputTerms);
// λ [64][token_levels] (dynamic tail).
template <class T, int KP>
struct OutputLayout {
  static constexpr int kQ = operand_words<T, kInputTerms<T>>(kChunk, KP);
  static constexpr int kVt = operand_words<T, kInputTerms<T>>(kOutTileV, kChunk);
  static constexpr int kSquare = operand_words<T, kOutputTerms>(kChunk, kChunk);
  static constexpr int kWt = operand_words<T, kOutputTerms>(KP, kChunk);
  static constexpr int kQW = operand_words<T, kOutputTerms>(kChunk, KP);
  static_assert(operand_words<T, kOutputTerms>(kOutTileV, KP) <= kWt, "a level image fits the words of Wᵀ");
  static constexpr int kFixedWords = kChunk + kQ + kVt + 3 * kSquare + kWt + kQW;
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads) chunk_output(const Params<T> p) {
  using L = OutputLayout<T, KP>;
  using R = Record<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  float* const gamma_s = words;
  float* const q_words = words + kChunk;
  const auto q_op = operand_at<T, kInputTerms<T>, KP>(q_words, kChunk);
  const auto vt_op = operand_at<T, kInputTerms<T>, kChunk>(q_words + L::kQ, kOutTileV);
  float* const squares = q_words + L::kQ + L::kVt;
  const auto p_op = operand_at<T, kOutputTerms, kChunk>(squares, kChunk);
  const auto solve_op = operand_at<T, kOutputTerms, kChunk>(squares + L::kSquare, kChunk);
  const auto a_op = operand_at<T, kOutputTerms, kChunk>(squares + 2 * L::kSquare, kChunk);
  float* const wt_words = squares + 3 * L::kSquare;
  const auto wt_op = operand_at<T, kOutputTerms, kChunk>(wt_words, KP);
  const auto s_op = operand_at<T, kOutputTerms, KP>(wt_words, kOutTileV);
  const auto qw_op = operand_at<T, kOutputTerms, KP>(wt_words + L::kWt, kChunk);
  float* const lambda_s = words + L::kFixedWords;  // [64][token_levels]

  const auto& dp = p.chunk;
  const int tile = static_cast<int>(blockIdx.x % p.out_tiles);
  const std::int64_t slot = blockIdx.x / p.out_tiles % dp.slots;
  const int h = static_cast<int>(blockIdx.x / p.out_tiles / dp.slots);
  const std::int64_t b = slot / dp.chunks, c = slot % dp.chunks, t0 = c * kChunk;
  const int n = static_cast<int>(dp.tokens - t0 < kChunk ? dp.tokens - t0 : kChunk);
  const int K = dp.K, V = dp.V, v0 = tile * kOutTileV, levels = p.token_levels;
  float* const record = delta_rule_chunked::record_of<T, KP>(dp, h, slot);
  const delta_rule::TokenRows<const T> q = delta_rule::rows_of(dp.q, b, h), v = delta_rule::rows_of(dp.v, b, h);

  fill(q_op, kChunk, [&](int i, int d) { return i < n && d < K ? to_float(q(t0 + i, d)) : 0.f; });
  fill_transposed<kOutTileV>(vt_op, [&](int s, int col) {
    return s < n && v0 + col < V ? to_float(v(t0 + s, v0 + col)) : 0.f;
  });
  copy_rows(p_op, operand_at<T, kOutputTerms, kChunk>(R::p(record, V), kChunk), 0, kChunk);
  copy_rows(solve_op, delta_rule_chunked::solve_operand(dp, h, slot), 0, kChunk);
  const auto w_record = operand_at<T, kStateTerms, KP>(R::w(record), kChunk);
  fill(wt_op, KP, [&](int d, int i) { return element(w_record, i, d); });
  for (int e = threadIdx.x; e < kChunk * levels; e += kThreads) {
    const int i = e / levels, l = e % levels;
    lambda_s[e] = i < n ? to_float(*p.level_scales.at(b, t0 + i, h, l)) : 0.f;
  }
  if (threadIdx.x < kChunk) gamma_s[threadIdx.x] = R::gamma(record, V)[threadIdx.x];
  __syncthreads();

  // Λ ⊙ A_chunk, A_chunk = P (T Diag(β)), and Q_W = Diag(γ) Q − P W.
  for_each_strip<kChunk, kChunk, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, kChunk>(acc, p_op, solve_op, m0, n0);
    // Rows t ≥ n are padding: their level may exceed the levels T reaches, so λ is not read there.
    const auto weight = [&](int t, int s) { return s <= t && t < n ? lambda_s[t * levels + in_chunk_level(t, s)] : 0.f; };
    for_each_pair(acc, m0, n0, [&](int t, int s, float x0, float x1) {
      store_pair(a_op, t, s, x0 * weight(t, s), x1 * weight(t, s + 1));
    });
  });
  for_each_strip<kChunk, KP, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, kChunk>(acc, p_op, wt_op, m0, n0);
    for_each_pair(acc, m0, n0, [&](int t, int d, float x0, float x1) {
      store_pair(qw_op, t, d, gamma_s[t] * element(q_op, t, d) - x0, gamma_s[t] * element(q_op, t, d + 1) - x1);
    });
  });
  __syncthreads();

  // Each warp's two strips of the 64 × kOutTileV output: the in-chunk part, then each live level.
  const int warp = threadIdx.x / 32, g = threadIdx.x % 32 / 4;
  float acc[2][2][4];
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int strip = warp + 8 * s, m0 = strip % 4 * 16, n0 = strip / 4 * 16;
    zero(acc[s]);
    warp_product<T, kChunk>(acc[s], a_op, vt_op, m0, n0);
  }
  for (std::int64_t bits = c; bits != 0; bits &= bits - 1) {
    const int m = __ffsll(static_cast<long long>(bits));
    __syncthreads();  // Wᵀ (or the level before) is read no more
    copy_rows(s_op, level_image<T, KP>(p, h, slot, m), v0, V);
    __syncthreads();
#pragma unroll
    for (int s = 0; s < 2; ++s) {
      const int strip = warp + 8 * s, m0 = strip % 4 * 16, n0 = strip / 4 * 16;
      float read[2][4];
      zero(read);
      warp_product<T, KP>(read, qw_op, s_op, m0, n0);
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const float w = lambda_s[(m0 + g + 8 * (r / 2)) * levels + kChunkBits + m];
#pragma unroll
        for (int j = 0; j < 2; ++j) acc[s][j][r] = fmaf(w, read[j][r], acc[s][j][r]);
      }
    }
  }
  const delta_rule::TokenRows<T> o = delta_rule::rows_of(dp.o, b, h);
#pragma unroll
  for (int s = 0; s < 2; ++s) {
    const int strip = warp + 8 * s, m0 = strip % 4 * 16, n0 = strip / 4 * 16;
    for_each_element(acc[s], m0, n0, [&](int i, int col, float y) {
      if (i < n && v0 + col < V) o(t0 + i, v0 + col) = from_float<T>(y);
    });
  }
}

// ---- launcher ---------------------------------------------------------------------------------------
template <class T, int KP>
Status enqueue(Params<T> p, cudaStream_t stream, const std::string& name) {
  auto& dp = p.chunk;
  const auto prepare = delta_rule_chunked::chunk_prepare<T, KP, delta_rule_chunked::Step::beta>;
  const auto pass = level_pass<T, KP>;
  const auto output = chunk_output<T, KP>;
  const std::size_t prepare_smem = sizeof(float) * delta_rule_chunked::PrepareLayout<T, KP>::kWords;
  const auto pass_smem_for = [](int chunk_levels) {
    return sizeof(float) * (PassLayout<T, KP>::kFixedWords + (chunk_levels + 1) * PassLayout<T, KP>::kLevel);
  };
  const auto output_smem_for = [](int token_levels) {
    return sizeof(float) * (OutputLayout<T, KP>::kFixedWords + kChunk * token_levels);
  };
  // Each kernel opted in to its largest size (concurrent launches of other lengths never lower it).
  cudaError_t e = allow_smem(prepare, prepare_smem);
  if (e == cudaSuccess) e = allow_smem(pass, pass_smem_for(kMaxChunkLevels));
  if (e == cudaSuccess) e = allow_smem(output, output_smem_for(kMaxChunkLevels + 1 + kChunkBits));
  if (e != cudaSuccess) return cuda_failure(name, "shared-memory opt-in", e);

  const std::int64_t records = dp.H * dp.slots;
  const std::int64_t record_floats = records * Record<T, KP>::words(dp.V);
  const std::int64_t solve_floats = records * delta_rule_chunked::kSolveWords<T>;
  const std::int64_t level_floats = records * p.chunk_levels * operand_words<T, kOutputTerms>(1, KP) * dp.V;
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(record_floats + solve_floats + level_floats);
  if (const Status st = allocate_workspace(name, bytes, stream, &dp.workspace); !st) return st;
  dp.solve = dp.workspace + record_floats;
  p.levels = dp.solve + solve_floats;

  launch_kernel(prepare, static_cast<unsigned>(records), kThreads, prepare_smem, stream, dp);
  launch_kernel(pass, static_cast<unsigned>(dp.sequences * dp.H * p.level_tiles), kThreads, pass_smem_for(p.chunk_levels), stream, p);
  launch_kernel(output, static_cast<unsigned>(records * p.out_tiles), kThreads, output_smem_for(p.token_levels), stream, p);
  return finish(name, dp.workspace, stream);
}

Status launch(const LaunchArgs& args) {
  const std::string name = "log-linear-gdn-chunked";
  Validator v(name, args);
  const LogLinearInputs in = validate_log_linear(v, args, true, kMaxT);
  const std::int64_t B = v.size('B'), T_len = v.size('T'), H = v.size('H');
  const LogLinearChunking chunking = chunking_of(v, kLevelTileV, kOutTileV);
  const std::int64_t chunks = chunking.chunks;
  if (!v.ok()) return v.status();
  if (T_len == 0 || B * H == 0) return Status::success();  // o is empty: nothing to write

  return dispatch_float(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    auto& dp = p.chunk;
    dp.q = strided<const T>(in.q);
    dp.k = strided<const T>(in.k);
    dp.v = strided<const T>(in.v);
    dp.gate = strided<const T>(in.g);
    dp.step = strided<const T>(in.beta);
    dp.o = strided<T>(in.o);
    dp.tokens = T_len;
    dp.chunks = chunks;
    dp.sequences = B;
    dp.slots = B * chunks;
    dp.H = static_cast<int>(H);
    dp.K = static_cast<int>(v.size('K'));
    dp.V = static_cast<int>(v.size('V'));
    p.level_scales = strided<const T>(in.level_scales);
    p.token_levels = in.levels;
    p.chunk_levels = chunking.chunk_levels;
    p.level_tiles = static_cast<int>(chunking.level_tiles);
    p.out_tiles = static_cast<int>(chunking.out_tiles);
    if (dp.K <= 64) return enqueue<T, 64>(p, stream_of(args), name);
    return enqueue<T, 128>(p, stream_of(args), name);
  });
}

}  // namespace

void append_log_linear_gdn_chunked_kernels(std::vector<Kernel>& out) {
  out.push_back(log_linear_entry("log-linear-gdn-chunked", "log-linear-gdn",
                                 "log-linear attention, GDN transitions, chunked (C = 64): GDN chunk records in "
                                 "parallel, the Fenwick level states carried through each chunk in one sequential "
                                 "pass, then the output per chunk in parallel; bf16/fp16 products on tensor cores, "
                                 "fp32 by FMA in fp64",
                                 kMaxT, [](const LaunchArgs& args) { return launch(args); }, kLogLinearChunk));
}

}  // namespace larc::gpu::detail
