// VLA, variational linear attention (SPEC §1): the fused recurrent forward of the harness mechanism
// "vla" (harness/src/mechanisms_vla.cpp = reference/vla.h vla_batched with its defaults). Per head and
// token t, as vla.h's State::step:
//
//   u_t = norm(k_t)/√K                                            (the authors' penalty directions, W_u = I)
//   z = A u_t;  δ = max(1 + u_tᵀ z, stab_eps);  A ← A − z zᵀ/δ    (Sherman–Morrison, VLA-C4)
//   k̂ = norm(φ(k_t));  α̂ = norm(A k̂)                             (the updated A)
//   X ← X + α̂ (v_t − Xᵀ k̂)ᵀ                                      (X = Sᵀ, K×V: S_t = S_{t−1}(I − k̂ α̂ᵀ) + v_t α̂ᵀ)
//   ζ ← ζ + φ(k_t);  o_t = Xᵀ φ(q_t) / max(ζᵀ φ(q_t), stab_eps)   (ratio read)
//
// φ = ELU + 1, λ0 = 1 (A_0 = I/λ0), stab_eps = 1e-4, no nudge; final_state = X_T [B,H,K,V].
// No "initial_state": the memory is (Sᵀ, A, ζ) and the mechanism carries only Sᵀ, so a launch from a
// carried Sᵀ (with A_0, ζ_0 restarted) would not continue the sequence; such a tensor is refused.
//
// Mapping (register_matrices.cuh): one block of 256 threads per (b, h, tile of 32 value columns), the
// index in gridDim.x. A lives in registers as SquareRows (K ≤ 128: 64 floats per thread); every tile of
// a head recomputes the same A bit for bit (A does not depend on V). The memory tile lives in
// registers as StateColumns. Warp 0 keeps ζ in registers and turns k_t, q_t into u, k̂, φ(q) and the
// read's denominator; the next token's inputs are loaded into registers while this one is computed.
// Five __syncthreads per token separate the phases; k̂, φ(q) and the denominator are double-buffered
// by token parity, so the next token's warp-0 work may overlap the last phase of this one.
#include "larc/gpu/api.h"
#include "families.h"
#include "larc/common/mechanism_constants.h"
#include "register_matrices.cuh"
#include "vla_inputs.h"

namespace larc::gpu::detail {

namespace {

using namespace onchip;

constexpr const char* kName = "vla-fused-recurrent";
constexpr float kLambda0 = 1.f;    // mechanism parameter lambda0: A_0 = I/λ0
constexpr float kStabEps = float(mechanism_constants::vla_stab_eps);  // floor of δ and of the read's denominator
const std::vector<Dtype> kDtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};
static_assert(kMaxK == kVlaMaxK, "the registry entry declares the K the register layout holds");

template <class T>
struct VlaParams {
  Strided<const T> q, k, v;
  Strided<T> o;
  Strided<float> final_state;  // data == nullptr when not requested
  std::int64_t tokens = 0, V = 0;
  int H = 0, K = 0, tiles = 0;
};

// max(x, floor) keeping a NaN, as the reference's `if (x < floor) x = floor`.
__device__ __forceinline__ float floored(float x, float floor) { return x < floor ? floor : x; }

// The shared vectors of the block (KMAX entries each, entries ≥ K zero).
template <int KMAX>
struct alignas(16) VlaShared {
  float u[KMAX];             // u_t
  float z[KMAX];             // A_{t−1} u_t
  float z_over_delta[KMAX];  // z/δ
  float penalised[KMAX];     // A_t k̂
  float alpha_hat[KMAX];     // α̂ = norm(A_t k̂)
  float khat[2][KMAX];       // k̂, by token parity
  float phi_q[2][KMAX];      // φ(q_t), by token parity
  float denominator[2];      // max(ζ_tᵀ φ(q_t), stab_eps), by token parity
};

// SPEC §1 (VLA-C4): z = A u; δ = max(1 + uᵀz, stab_eps); A ← A − z zᵀ/δ, i.e. A(i, j) −= z_i (z_j/δ) as
// vla.h's penalise. Whole block; u is in shared memory and stays unchanged.
template <int KMAX>
__device__ __forceinline__ void sherman_morrison_downdate(SquareRows<KMAX>& A, VlaShared<KMAX>& sh, int K) {
  const float z_row = A.row_times(sh.u);
  if (A.part == 0 && A.row < K) sh.z[A.row] = z_row;
  __syncthreads();
  if (threadIdx.x < KMAX) {  // whole warps; each computes the same δ
    const float delta = floored(1.f + warp_dot<KMAX>(sh.u, sh.z), kStabEps);
    sh.z_over_delta[threadIdx.x] = sh.z[threadIdx.x] / delta;
  }
  __syncthreads();
  A.add_outer(-z_row, sh.z_over_delta);
}

// Warp 0: the token's feature-side vectors from raw k_t, q_t (lane i holds entries i + 32c): ζ ← ζ + φ(k),
// u = (1/√K)·k/‖k‖, k̂ = φ(k)/‖φ(k)‖, φ(q) and the read's denominator max(ζᵀφ(q), stab_eps).
template <int KMAX>
__device__ __forceinline__ void token_vectors(const float (&k)[KMAX / 32], const float (&q)[KMAX / 32],
                                              float (&zeta)[KMAX / 32], VlaShared<KMAX>& sh, int parity, int K) {
  const int lane = threadIdx.x % 32;
  float phi_k[KMAX / 32], phi_q[KMAX / 32];
  float kk = 0.f, pp = 0.f, zq = 0.f;
#pragma unroll
  for (int c = 0; c < KMAX / 32; ++c) {
    const bool in = lane + 32 * c < K;
    phi_k[c] = in ? elu_plus_one(k[c]) : 0.f;
    phi_q[c] = in ? elu_plus_one(q[c]) : 0.f;
    zeta[c] += phi_k[c];
    kk += k[c] * k[c];
    pp += phi_k[c] * phi_k[c];
    zq += zeta[c] * phi_q[c];
  }
  kk = group_sum<32>(kk);
  pp = group_sum<32>(pp);
  zq = group_sum<32>(zq);
  const float k_norm = sqrtf(kk), phi_k_norm = sqrtf(pp), inv_sqrt_k = 1.f / sqrtf(static_cast<float>(K));
#pragma unroll
  for (int c = 0; c < KMAX / 32; ++c) {
    const int i = lane + 32 * c;
    const bool in = i < K;
    sh.u[i] = in ? inv_sqrt_k * (k[c] / k_norm) : 0.f;
    sh.khat[parity][i] = in ? phi_k[c] / phi_k_norm : 0.f;
    sh.phi_q[parity][i] = phi_q[c];
  }
  if (lane == 0) sh.denominator[parity] = floored(zq, kStabEps);
}

template <class T, int KMAX>
__global__ void __launch_bounds__(kBlockThreads) vla_fused_recurrent(const VlaParams<T> p) {
  __shared__ VlaShared<KMAX> sh;
  zero_shared(reinterpret_cast<float*>(&sh), sizeof(sh) / sizeof(float));

  const BlockHead at = block_head(p.H, p.tiles);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, K = p.K;
  SquareRows<KMAX> A;
  A.set_diagonal(1.f / kLambda0, K);  // A_0 = I/λ0
  StateColumns<KMAX> X;               // X_0 = S_0ᵀ = 0
  const std::int64_t j = std::int64_t{at.tile} * StateColumns<KMAX>::kTileV + X.column;
  float zeta[KMAX / 32] = {};          // warp 0: ζ_i, i = lane + 32c

  // Inputs of the next token, loaded one token ahead in their dtype (converted when used, so the loads
  // stay in flight for a whole token): k, q by warp 0, v_j by every lane of column j; hinted into L2
  // kL2AheadTokens tokens ahead.
  T k_next[KMAX / 32] = {}, q_next[KMAX / 32] = {}, v_next{};
  const auto load = [&](std::int64_t t) {
    const std::int64_t ahead = t + kL2AheadTokens;
    if (warp == 0) {
#pragma unroll
      for (int c = 0; c < KMAX / 32; ++c) {
        const int i = lane + 32 * c;
        k_next[c] = i < K ? *p.k.at(at.b, t, at.h, i) : T{};
        q_next[c] = i < K ? *p.q.at(at.b, t, at.h, i) : T{};
        if (i < K && ahead < p.tokens) {
          prefetch_l2(p.k.at(at.b, ahead, at.h, i));
          prefetch_l2(p.q.at(at.b, ahead, at.h, i));
        }
      }
    }
    v_next = j < p.V ? *p.v.at(at.b, t, at.h, j) : T{};
    if (j < p.V && ahead < p.tokens && X.stores_column()) prefetch_l2(p.v.at(at.b, ahead, at.h, j));
  };
  if (p.tokens > 0) load(0);
  __syncthreads();  // shared memory zeroed

  for (std::int64_t t = 0; t < p.tokens; ++t) {
    const int parity = static_cast<int>(t & 1);
    float k_t[KMAX / 32], q_t[KMAX / 32];
#pragma unroll
    for (int c = 0; c < KMAX / 32; ++c) k_t[c] = to_float(k_next[c]), q_t[c] = to_float(q_next[c]);
    const float v_t = to_float(v_next);
    if (t + 1 < p.tokens) load(t + 1);

    if (warp == 0) token_vectors<KMAX>(k_t, q_t, zeta, sh, parity, K);
    __syncthreads();
    sherman_morrison_downdate(A, sh, K);  // A_t
    const float ak = A.row_times(sh.khat[parity]);
    if (A.part == 0 && A.row < K) sh.penalised[A.row] = ak;
    __syncthreads();
    if (threadIdx.x < KMAX) {  // α̂ = norm(A_t k̂), entries ≥ K stay zero
      const float norm = sqrtf(warp_dot<KMAX>(sh.penalised, sh.penalised));
      sh.alpha_hat[threadIdx.x] = sh.penalised[threadIdx.x] / norm;
    }
    __syncthreads();
    const float residual = v_t - X.column_dot(sh.khat[parity]);  // v_t − S_{t−1} k̂
    X.add_outer(sh.alpha_hat, residual);
    const float numerator = X.column_dot(sh.phi_q[parity]);
    if (X.stores_column() && j < p.V) *p.o.at(at.b, t, at.h, j) = from_float<T>(numerator / sh.denominator[parity]);
  }

  if (p.final_state.data != nullptr) X.store(p.final_state, at.b, at.h, K, j, p.V);
}

Status launch(const LaunchArgs& args) {
  Validator v(kName, args);
  const VlaInputs in = validate_vla(v, args, kDtypes);
  const ColumnTiles grid = require_column_tiles(v, kMaxK);
  if (!v.ok()) return v.status();
  if (grid.blocks == 0) return Status::success();  // B = 0 or H = 0: nothing to write

  dispatch_key_capacity(v.size('K'), [&](auto capacity) {
    constexpr int KMAX = decltype(capacity)::value;
    dispatch_float(in.dtype, [&](auto tag) {
      using T = decltype(tag);
      VlaParams<T> p;
      p.q = strided<const T>(in.q);
      p.k = strided<const T>(in.k);
      p.v = strided<const T>(in.v);
      p.o = strided<T>(in.o);
      p.final_state = strided<float>(in.final_state);
      p.tokens = v.size('T');
      p.H = static_cast<int>(v.size('H'));
      p.K = static_cast<int>(v.size('K'));
      p.V = v.size('V');
      p.tiles = static_cast<int>(grid.tiles);
      launch_kernel(vla_fused_recurrent<T, KMAX>, static_cast<unsigned>(grid.blocks), kBlockThreads, 0, stream_of(args), p);
    });
  });
  return launch_status(kName);
}

}  // namespace

void append_vla_kernels(std::vector<Kernel>& out) {
  out.push_back(vla_entry(kName,
                          "VLA fused recurrent: Sherman–Morrison penalty A (K×K) and memory Sᵀ in registers, one block "
                          "per (b, h, 32 value columns); φ = ELU+1, λ0 = 1, stab_eps = 1e-4, ratio read, u = norm(k)/√K",
                          kDtypes, launch));
}

}  // namespace larc::gpu::detail
