// CCQ, curvature-conditioned query (SPEC §2) on GLA and GDN: the fused recurrent forwards of the
// harness mechanisms "ccq-gla" and "ccq-gdn" (harness/src/mechanisms_ccq.cpp = reference/ccq.h with the
// uniform covariance, λ_t given as an input). Per head and token t, as ccq.h's State::step:
//
//   n ← n + 1;  δ = k_t − μ;  μ ← μ + δ/n;  M ← M + ((n−1)/n) δ δᵀ  (centred key statistics, uniform
//                                                                   weights: Welford, M = n Σ_t)
//   q̃_t = q_t − λ_t Σ_t q_t,  Σ_t q = M q / n                        (the conditioned query, CCQ-C3)
//   backbone step with q̃_t instead of q_t (CCQ-C4: the state is the backbone's, untouched):
//     GLA  S ← Diag(e^{gk_t}) S + k_t v_tᵀ;                       o_t = Sᵀ (scale · q̃_t)
//     GDN  S ← e^{g_t} S;  u = β_t (v_t − Sᵀ k_t);  S ← S + k_t uᵀ;  o_t = Sᵀ (scale · q̃_t)   (FLA's order)
//
// Σ_t is ccq.h's C/n − m mᵀ/n² (C = Σ k kᵀ, m = Σ k); formed that way it cancels: after one token
// Σ_1 = k kᵀ − k kᵀ = 0 exactly, yet C q and m (mᵀq) rounded apart leave u‖k‖²‖q‖ behind (the H200
// fuzz campaign's worst fp32 failures: docs/gpu-kernels/ccq.md, "Why centred"). The centred form
// has no such cancellation: M_1 = 0 exactly. scale = K^{-1/2} unless LaunchArgs::scale gives one; zero initial state and statistics.
// Outputs o [B,T,H,V], final_state S_T [B,H,K,V], final_key_gram C_T [B,H,K,K] (a second pass over
// the keys, in the blocks of tile 0, when asked for), final_key_sum m_T [B,H,K] (fp32; n_T = T).
// No "initial_state": the carried state is (S, M, μ, n), so S alone cannot continue a sequence; such a
// tensor is refused.
//
// Mapping (register_matrices.cuh): one block of 256 threads per (b, h, tile of 32 value columns), the
// index in gridDim.x. M lives in registers as SquareRows (every tile of a head computes the same M and
// q̃ bit for bit), the backbone's state tile as StateColumns. Warp 0 keeps m, μ and n in registers and
// stages k_t, δ_t, q_t, the decays and the token's scalars in shared memory; the next token's inputs are
// loaded into registers while this one is computed. Two __syncthreads per token; what the backbone
// phase reads is double-buffered by token parity so the next token's warp-0 work may overlap it.
#include "larc/gpu/api.h"
#include "families.h"
#include "register_matrices.cuh"

namespace larc::gpu::detail {

namespace {

using namespace onchip;

enum class Backbone { gla, gdn };

template <class T>
struct CcqParams {
  Strided<const T> q, k, v, lambda;
  Strided<const T> decay;  // GLA: gk [B,T,H,K] per-channel log-decays; GDN: g [B,T,H]
  Strided<const T> beta;   // GDN: [B,T,H]
  Strided<T> o;
  Strided<float> final_state, final_key_gram, final_key_sum;  // data == nullptr when not requested
  std::int64_t tokens = 0, V = 0;
  int H = 0, K = 0, tiles = 0;
  float scale = 1.f;
};

struct TokenScalars {
  float lambda, count, deviation_weight;  // λ_t, n_t, (n_t − 1)/n_t
  float alpha, beta;                      // GDN: e^{g_t}, β_t
};

// The shared vectors of the block (KMAX entries each, entries ≥ K zero).
template <int KMAX>
struct alignas(16) CcqShared {
  float query[KMAX];             // q_t
  float scaled_query[KMAX];      // scale · q̃_t
  float key[2][KMAX];            // k_t, by token parity
  float deviation[2][KMAX];      // δ_t = k_t − μ_{t−1}, by token parity
  float channel_decay[2][KMAX];  // GLA: e^{gk_t}, by token parity
  TokenScalars scalars[2];       // by token parity
};

// SPEC §2: q̃_i = q_i − λ (Σ q)_i with Σ = M / n (M the centred key Gram).
__device__ __forceinline__ float conditioned_query(float q_i, float mq_i, float n, float lambda) {
  return q_i - lambda * (mq_i / n);
}

// One token's raw inputs in their dtype, loaded a token ahead and converted when used (so the loads stay
// in flight for a whole token): k, q (and gk) by warp 0 (lane i holds entries i + 32c), the scalars by
// warp 0, v_j by every lane of column j; the token kL2AheadTokens further on is hinted into L2 by the
// same lanes.
template <Backbone BB, class T, int KMAX>
struct TokenInputs {
  T k[KMAX / 32] = {}, q[KMAX / 32] = {}, gk[BB == Backbone::gla ? KMAX / 32 : 1] = {};
  T lambda{}, g{}, beta{}, v{};

  __device__ __forceinline__ void load(const CcqParams<T>& p, std::int64_t b, int h, std::int64_t t, std::int64_t j) {
    const std::int64_t ahead = t + kL2AheadTokens;
    if (threadIdx.x < 32) {
#pragma unroll
      for (int c = 0; c < KMAX / 32; ++c) {
        const int i = threadIdx.x + 32 * c;
        k[c] = i < p.K ? *p.k.at(b, t, h, i) : T{};
        q[c] = i < p.K ? *p.q.at(b, t, h, i) : T{};
        if constexpr (BB == Backbone::gla) gk[c] = i < p.K ? *p.decay.at(b, t, h, i) : T{};
        if (i < p.K && ahead < p.tokens) {
          prefetch_l2(p.k.at(b, ahead, h, i));
          prefetch_l2(p.q.at(b, ahead, h, i));
          if constexpr (BB == Backbone::gla) prefetch_l2(p.decay.at(b, ahead, h, i));
        }
      }
      lambda = *p.lambda.at(b, t, h);
      if constexpr (BB == Backbone::gdn) {
        g = *p.decay.at(b, t, h);
        beta = *p.beta.at(b, t, h);
      }
      if (threadIdx.x == 0 && ahead < p.tokens) {
        prefetch_l2(p.lambda.at(b, ahead, h));
        if constexpr (BB == Backbone::gdn) {
          prefetch_l2(p.decay.at(b, ahead, h));
          prefetch_l2(p.beta.at(b, ahead, h));
        }
      }
    }
    v = j < p.V ? *p.v.at(b, t, h, j) : T{};
    if (j < p.V && ahead < p.tokens && threadIdx.x % StateColumns<KMAX>::kRowGroups == 0) prefetch_l2(p.v.at(b, ahead, h, j));
  }
};

// Warp 0's key statistics, lane i holding entries i + 32c: m = Σ k (for the output), μ = m / n kept
// centred (Welford), n.
template <int KMAX>
struct KeyStatistics {
  float sum[KMAX / 32] = {}, mean[KMAX / 32] = {}, count = 0.f;
};

// Warp 0: n ← n + 1, δ = k_t − μ, μ ← μ + δ/n, m ← m + k_t (registers), then stages q_t, k_t, δ, e^{gk_t}
// and the token's scalars.
template <Backbone BB, class T, int KMAX>
__device__ __forceinline__ void stage_token(const TokenInputs<BB, T, KMAX>& in, KeyStatistics<KMAX>& keys,
                                            CcqShared<KMAX>& sh, int parity, int K) {
  const int lane = threadIdx.x % 32;
  keys.count += 1.f;
#pragma unroll
  for (int c = 0; c < KMAX / 32; ++c) {
    const int i = lane + 32 * c;
    const float k = to_float(in.k[c]), deviation = k - keys.mean[c];
    keys.mean[c] += deviation / keys.count;
    keys.sum[c] += k;
    sh.query[i] = to_float(in.q[c]);
    sh.key[parity][i] = k;
    sh.deviation[parity][i] = deviation;
    if constexpr (BB == Backbone::gla) sh.channel_decay[parity][i] = i < K ? exp_rounded_once(to_float(in.gk[c])) : 0.f;
  }
  if (lane == 0)
    sh.scalars[parity] = {to_float(in.lambda), keys.count, (keys.count - 1.f) / keys.count,
                          BB == Backbone::gdn ? exp_rounded_once(to_float(in.g)) : 1.f, to_float(in.beta)};
}

template <Backbone BB, class T, int KMAX>
__global__ void __launch_bounds__(kBlockThreads) ccq_fused_recurrent(const CcqParams<T> p) {
  __shared__ CcqShared<KMAX> sh;
  zero_shared(reinterpret_cast<float*>(&sh), sizeof(sh) / sizeof(float));

  const BlockHead at = block_head(p.H, p.tiles);
  const int K = p.K;
  SquareRows<KMAX> M;
  M.set_diagonal(0.f, K);  // M_0 = 0
  StateColumns<KMAX> S;    // S_0 = 0
  const std::int64_t j = std::int64_t{at.tile} * StateColumns<KMAX>::kTileV + S.column;
  KeyStatistics<KMAX> keys;  // warp 0

  TokenInputs<BB, T, KMAX> next;
  if (p.tokens > 0) next.load(p, at.b, at.h, 0, j);
  __syncthreads();  // shared memory zeroed

  for (std::int64_t t = 0; t < p.tokens; ++t) {
    const int parity = static_cast<int>(t & 1);
    const TokenInputs<BB, T, KMAX> in = next;
    if (t + 1 < p.tokens) next.load(p, at.b, at.h, t + 1, j);

    if (threadIdx.x < 32) stage_token(in, keys, sh, parity, K);
    __syncthreads();
    const float* k = sh.key[parity];
    const float* deviation = sh.deviation[parity];
    const TokenScalars& s = sh.scalars[parity];
    M.add_outer(s.deviation_weight * deviation[M.row], deviation);  // M_t = M_{t−1} + ((n−1)/n) δ δᵀ
    const float mq = M.row_times(sh.query);
    if (M.part == 0 && M.row < K)
      sh.scaled_query[M.row] = p.scale * conditioned_query(sh.query[M.row], mq, s.count, s.lambda);
    __syncthreads();
    if constexpr (BB == Backbone::gla) {
      S.scale_rows(sh.channel_decay[parity]);
      S.add_outer(k, to_float(in.v));
    } else {
      S.scale(s.alpha);
      const float u = s.beta * (to_float(in.v) - S.column_dot(k));
      S.add_outer(k, u);
    }
    const float out = S.column_dot(sh.scaled_query);
    if (S.stores_column() && j < p.V) *p.o.at(at.b, t, at.h, j) = from_float<T>(out);
  }

  if (p.final_state.data != nullptr) S.store(p.final_state, at.b, at.h, K, j, p.V);
  if (at.tile != 0) return;
  if (p.final_key_gram.data != nullptr) {
    // C_T = Σ_t k_t k_tᵀ, summed again token by token: M_T + n μ μᵀ would cost up to 15× C's rounding
    // error (keys with a large mean; a float32 model of both), so the output gets its own pass.
    SquareRows<KMAX> C;
    C.set_diagonal(0.f, K);
    for (std::int64_t t = 0; t < p.tokens; ++t) {
      __syncthreads();  // the previous token's key is read by everyone
      if (threadIdx.x < KMAX) sh.key[0][threadIdx.x] = static_cast<int>(threadIdx.x) < K ? to_float(*p.k.at(at.b, t, at.h, threadIdx.x)) : 0.f;
      __syncthreads();
      C.add_outer(sh.key[0][C.row], sh.key[0]);
    }
    C.store(p.final_key_gram, at.b, at.h, K);
  }
  if (p.final_key_sum.data != nullptr && threadIdx.x < 32) {
#pragma unroll
    for (int c = 0; c < KMAX / 32; ++c)
      if (static_cast<int>(threadIdx.x) + 32 * c < K) *p.final_key_sum.at(at.b, at.h, threadIdx.x + 32 * c) = keys.sum[c];
  }
}

template <Backbone BB>
Status launch(const LaunchArgs& args) {
  const char* name = BB == Backbone::gla ? "ccq-gla-fused-recurrent" : "ccq-gdn-fused-recurrent";
  Validator v(name, args);
  const Dtype dt = v.dtype_of("q", {Dtype::bf16, Dtype::fp16, Dtype::fp32});
  const TensorView* q = v.input("q", "BTHK", dt);
  const TensorView* k = v.input("k", "BTHK", dt);
  const TensorView* val = v.input("v", "BTHV", dt);
  const TensorView* decay = BB == Backbone::gla ? v.input("gk", "BTHK", dt) : v.input("g", "BTH", dt);
  const TensorView* beta = BB == Backbone::gdn ? v.input("beta", "BTH", dt) : nullptr;
  const TensorView* lambda = v.input("lambda", "BTH", dt);
  v.require(!args.inputs.contains("initial_state"),
            "takes no 'initial_state': CCQ's state is (S, M, μ, n) and a carried S alone does not continue a sequence");
  const TensorView* o = v.output("o", "BTHV", dt);
  const TensorView* final_state = v.output("final_state", "BHKV", Dtype::fp32, /*optional=*/true);
  const TensorView* key_gram = v.output("final_key_gram", "BHKK", Dtype::fp32, /*optional=*/true);
  const TensorView* key_sum = v.output("final_key_sum", "BHK", Dtype::fp32, /*optional=*/true);
  const ColumnTiles grid = require_column_tiles(v, kMaxK);
  const float scale = v.read_scale(v.size('K'));
  if (!v.ok()) return v.status();
  if (grid.blocks == 0) return Status::success();  // B = 0 or H = 0: nothing to write

  dispatch_key_capacity(v.size('K'), [&](auto capacity) {
    constexpr int KMAX = decltype(capacity)::value;
    dispatch_float(dt, [&](auto tag) {
      using T = decltype(tag);
      CcqParams<T> p;
      p.q = strided<const T>(q);
      p.k = strided<const T>(k);
      p.v = strided<const T>(val);
      p.lambda = strided<const T>(lambda);
      p.decay = strided<const T>(decay);
      p.beta = strided<const T>(beta);
      p.o = strided<T>(o);
      p.final_state = strided<float>(final_state);
      p.final_key_gram = strided<float>(key_gram);
      p.final_key_sum = strided<float>(key_sum);
      p.tokens = v.size('T');
      p.V = v.size('V');
      p.H = static_cast<int>(v.size('H'));
      p.K = static_cast<int>(v.size('K'));
      p.tiles = static_cast<int>(grid.tiles);
      p.scale = scale;
      launch_kernel(ccq_fused_recurrent<BB, T, KMAX>, static_cast<unsigned>(grid.blocks), kBlockThreads, 0, stream_of(args), p);
    });
  });
  return launch_status(name);
}

Kernel ccq_kernel(Backbone bb) {
  Kernel k;
  const bool gla = bb == Backbone::gla;
  k.name = gla ? "ccq-gla-fused-recurrent" : "ccq-gdn-fused-recurrent";
  k.mechanism = gla ? "ccq-gla" : "ccq-gdn";
  k.description = std::string("CCQ read on ") + (gla ? "GLA" : "GDN") +
                  " fused recurrent: centred key Gram M = nΣ (K×K, Welford) and the backbone state in registers, "
                  "q̃ = (I − λΣ)q, uniform covariance, scale K^-1/2";
  k.dtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};
  k.limits.max_K = kMaxK;
  k.limits.initial_state = false;
  k.limits.scale = true;
  k.launch = gla ? launch<Backbone::gla> : launch<Backbone::gdn>;
  return k;
}

}  // namespace

void append_ccq_kernels(std::vector<Kernel>& out) {
  out.push_back(ccq_kernel(Backbone::gla));
  out.push_back(ccq_kernel(Backbone::gdn));
}

}  // namespace larc::gpu::detail
