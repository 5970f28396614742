// vla-chunked: the chunked forward of VLA, mechanism "vla" — the tensors, parameters and
// refusals of vla-fused-recurrent (vla_inputs.h), but bf16/fp16 only: q, k [B,T,H,K], v and o [B,T,H,V]
// in bf16 or fp16, optional fp32 final_state [B,H,K,V] = X_T = S_Tᵀ, no initial_state, 16 ≤ K ≤ 128, any V ≥ 1,
// any T ≥ 0.
// The equations and the penalty's kernels: vla_chunked.cuh. This file: the S pass (the generalised delta
// rule with removal keys k̂ and write keys α̂, β = 1, no decay; reference/vla_chunked.h's affine
// recursion; delta_rule_chunked.cuh's three-kernel split, its state pass register_state_pass.cuh) and
// the launcher.
//
// Workspace (stream-ordered, freed after the last kernel: chunk_launch.cuh), per (head, chunk): the
// StartRecord (ζ and the Gram sum, later the penalty's products), the PenaltyRecord (64·KP + 64 floats), the Record
// (W, Âᵀ, U, V_new, P) and X_c as chunk_output's operand. At K = V = 128 (KP = 128), bf16/fp16: 33,024 +
// 8,256 + 48,896 + 17,408 = 107,584 floats = 430 KB a chunk, so 1.76 GB at B = 1, H = 16, T = 16,384 (4,096
// chunks). KP = 64 for K ≤ 64.
#include <algorithm>
#include <limits>
#include <string>

#include "chunk_launch.cuh"
#include "families.h"
#include "vla_chunked.cuh"
#include "vla_inputs.h"

namespace larc::gpu::detail {

namespace {

using namespace vla_chunked;

constexpr const char* kName = "vla-chunked";
// fp32 inputs are not offered: the chunked penalty's fp32 outputs missed the gate's fp32 tolerance on
// the H200 (the figures: docs/gpu-kernels/vla.md, "Chunked"): A_t k̂_t = K̂ A_s − (correction) cancels
// as A shrinks within a chunk, and the rounding of K̂ A_s is amplified by it.
const std::vector<Dtype> kDtypes = {Dtype::bf16, Dtype::fp16};
// Nor K < 16: below it the final state missed the gate's fp32-grade tolerance (2 × the float
// references' error) in random bf16/fp16 cases on the H200, from K = 12 on it met it (the figures:
// docs/gpu-kernels/vla.md, "Chunked"). Shorter penalty blocks and an fp64 penalty pass did not cure it;
// vla-fused-recurrent takes any K.
constexpr std::int64_t kMinK = 16;

// One chunk's record (4-byte words, every part a multiple of 16 bytes), operands in Operand's layout:
//   W = T K̂ [64 rows][KP] and Âᵀ [KP rows][64] (kStateTerms planes; chunk_prepare → state_pass),
//   U = T V [64][V] fp32 (chunk_prepare → state_pass),
//   V_new [V rows][64] and P = (Φ_q Âᵀ) ⊙ L [64 rows][64] (kOutputTerms planes; → chunk_output).
template <class T, int KP>
struct Record {
  static constexpr int kW = operand_words<T, kStateTerms>(kChunk, KP);
  static constexpr int kAt = operand_words<T, kStateTerms>(KP, kChunk);
  static constexpr int kP = operand_words<T, kOutputTerms>(kChunk, kChunk);
  static __host__ __device__ std::int64_t vn_words(int V) { return std::int64_t{operand_words<T, kOutputTerms>(1, kChunk)} * V; }
  static __host__ __device__ std::int64_t words(int V) { return kW + kAt + std::int64_t{kChunk} * V + vn_words(V) + kP; }
  static __device__ float* w(float* r) { return r; }
  static __device__ float* at(float* r) { return r + kW; }
  static __device__ float* u(float* r) { return r + kW + kAt; }
  static __device__ float* vn(float* r, int V) { return u(r) + std::int64_t{kChunk} * V; }
  static __device__ float* p(float* r, int V) { return vn(r, V) + vn_words(V); }
};
template <class T, int KP>
__device__ __forceinline__ float* record_of(const Params<T>& p, int h, std::int64_t slot) {
  return p.records + (h * p.slots + slot) * Record<T, KP>::words(p.V);
}
// X_c of (head, slot) as chunk_output's B operand: [V rows][KP], kOutputTerms planes.
template <class T, int KP>
__host__ __device__ constexpr std::int64_t state_words(int V) {
  return std::int64_t{operand_words<T, kOutputTerms>(1, KP)} * V;
}
template <class T, int KP>
__device__ __forceinline__ float* state_of(const Params<T>& p, int h, std::int64_t slot) {
  return p.states + (h * p.slots + slot) * state_words<T, KP>(p.V);
}

// Whole warp: row `row` of op from a warp's vector (lane holds entries lane + 32c).
template <class T, int TERMS, int KD>
__device__ __forceinline__ void store_warp_row(const Operand<T, TERMS, KD>& op, int row, const float (&x)[KD / 32]) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int c = 0; c < KD / 32; ++c) {
    const float next = __shfl_down_sync(0xffffffffu, x[c], 1);
    if (lane % 2 == 0) store_pair(op, row, lane + 32 * c, x[c], next);
  }
}

// ---- chunk_prepare ---------------------------------------------------------------------------------
// Shared memory (words): K̂ and Â [64 rows][KP] (kStateTerms), Φ_q [64][KP] (kOutputTerms), K̂Âᵀ then T
// fp32 [64][68]; then K̂ᵀ [KP rows][64] (kStateTerms) over Â and Φ_q, T [64][64] (kStateTerms) over K̂,
// and Vᵀ tiles [kPrepTileV rows][64] (input terms) after it. 153 KB at KP = 128 (bf16/fp16).
template <class T, int KP>
struct PrepareLayout {
  static constexpr int kRows = operand_words<T, kStateTerms>(kChunk, KP);
  static constexpr int kFq = operand_words<T, kOutputTerms>(kChunk, KP);
  static constexpr int kKh = 0, kAh = kRows, kQ = 2 * kRows, kTs = 2 * kRows + kFq;
  static constexpr int kKt = kRows, kT = 0, kVt = operand_words<T, kStateTerms>(kChunk, kChunk);
  static constexpr int kWords = kTs + kChunk * kSquarePitch;
  static_assert(kKt + operand_words<T, kStateTerms>(KP, kChunk) <= kTs);  // K̂ᵀ beside K̂ and K̂Âᵀ
  static_assert(kVt <= kRows && kVt + operand_words<T, kInputTerms<T>>(kPrepTileV, kChunk) <= kWords);
};

template <class T, int KP>
__global__ void __launch_bounds__(kThreads) chunk_prepare(const Params<T> p) {
  using L = PrepareLayout<T, KP>;
  using R = Record<T, KP>;
  constexpr int S = kStateTerms, sp = kSquarePitch;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto kh_op = operand_at<T, S, KP>(words + L::kKh, kChunk);
  const auto ah_op = operand_at<T, S, KP>(words + L::kAh, kChunk);
  const auto fq_op = operand_at<T, kOutputTerms, KP>(words + L::kQ, kChunk);
  float* const t_s = words + L::kTs;
  const auto kt_op = operand_at<T, S, kChunk>(words + L::kKt, KP);
  const auto t_op = operand_at<T, S, kChunk>(words + L::kT, kChunk);
  const auto vt_op = operand_at<T, kInputTerms<T>, kChunk>(words + L::kVt, kPrepTileV);

  const Chunk ch = chunk_of(p, blockIdx.x);
  const int K = p.K, V = p.V, n = ch.n;
  const TokenRows<const T> q = rows_of(p.q, ch.b, ch.h), k = rows_of(p.k, ch.b, ch.h), v = rows_of(p.v, ch.b, ch.h);
  float* const record = record_of<T, KP>(p, ch.h, ch.slot);
  const float* const alpha = PenaltyRecord<KP>::alpha(penalty_of<T, KP>(p, ch.h, ch.slot));

  for (int i = threadIdx.x / 32; i < kChunk; i += kWarps) {  // k̂, as the penalty's kernels form it
    float u[KP / 32], khat[KP / 32] = {};
    if (i < n) key_directions<T, KP>(k, ch.t0 + i, K, u, khat);
    store_warp_row(kh_op, i, khat);
  }
  fill(ah_op, kChunk, [&](int i, int d) { return alpha[i * KP + d]; });
  fill(fq_op, kChunk, [&](int i, int d) { return i < n && d < K ? elu_plus_one(to_float(q(ch.t0 + i, d))) : 0.f; });
  __syncthreads();

  // Âᵀ to the record; StrictLower(K̂ Âᵀ) into t_s; P = (Φ_q Âᵀ) ⊙ L to the record.
  fill(operand_at<T, S, kChunk>(R::at(record), KP), KP, [&](int d, int r) { return element(ah_op, r, d); });
  {
    const auto p_out = operand_at<T, kOutputTerms, kChunk>(R::p(record, V), kChunk);
    for_each_strip<kChunk, kChunk, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, KP>(acc, kh_op, ah_op, m0, n0);
      for_each_element(acc, m0, n0, [&](int s, int r, float x) { t_s[s * sp + r] = r < s ? x : 0.f; });
      zero(acc);
      warp_product<T, KP>(acc, fq_op, ah_op, m0, n0);
      for_each_pair(acc, m0, n0, [&](int t, int r, float x0, float x1) {
        store_pair(p_out, t, r, r <= t ? x0 : 0.f, r + 1 <= t ? x1 : 0.f);
      });
    });
  }
  __syncthreads();

  // T = (I + StrictLower(K̂ Âᵀ))⁻¹ by forward substitution, one column per thread, as
  // delta_rule_chunked.cuh's chunk_prepare (four partial sums a row, combined pairwise), in place.
  float x[kChunk];
  if (threadIdx.x < kChunk) {
    const int col = threadIdx.x;
#pragma unroll
    for (int i = 0; i < kChunk; ++i) {
      float s[4] = {i == col ? 1.f : 0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int j = 0; j < i; j += 4) {
        const float4 a = *reinterpret_cast<const float4*>(t_s + i * sp + j);
        s[0] = fmaf(-a.x, x[j], s[0]);
        if (j + 1 < i) s[1] = fmaf(-a.y, x[j + 1], s[1]);
        if (j + 2 < i) s[2] = fmaf(-a.z, x[j + 2], s[2]);
        if (j + 3 < i) s[3] = fmaf(-a.w, x[j + 3], s[3]);
      }
      x[i] = (s[0] + s[1]) + (s[2] + s[3]);
    }
  }
  __syncthreads();
  if (threadIdx.x < kChunk) {
#pragma unroll
    for (int i = 0; i < kChunk; ++i) t_s[i * sp + threadIdx.x] = x[i];
  }
  fill(kt_op, KP, [&](int d, int r) { return element(kh_op, r, d); });  // K̂ᵀ, W's B operand
  __syncthreads();
  fill(t_op, kChunk, [&](int i, int j) { return t_s[i * sp + j]; });
  __syncthreads();

  // W = T K̂ to the record.
  {
    const auto w_out = operand_at<T, S, KP>(R::w(record), kChunk);
    for_each_strip<kChunk, KP, 2>([&](int m0, int n0) {
      float acc[2][4];
      zero(acc);
      warp_product<T, kChunk>(acc, t_op, kt_op, m0, n0);
      for_each_pair(acc, m0, n0, [&](int i, int d, float x0, float x1) { store_pair(w_out, i, d, x0, x1); });
    });
  }
  __syncthreads();
  // U = T V, kPrepTileV columns at a time.
  write_value_solve<kPrepTileV>(t_op, vt_op, n, V, R::u(record), [&](int j, int c) { return to_float(v(ch.t0 + j, c)); });
}

// ---- state pass ------------------------------------------------------------------------------------
// register_state_pass.cuh with Bᵀ = Âᵀ and no decay, from X_0 = 0; one block per (b, h, kTileV value columns).
template <class T, int KP>
__global__ void __launch_bounds__(register_state_pass::kThreads, 1) state_pass(const Params<T> p) {
  namespace rs = register_state_pass;
  using R = Record<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  const std::int64_t block = blockIdx.x;
  const int col0 = static_cast<int>(block % p.v_tiles) * kTileV, h = static_cast<int>(block / p.v_tiles % p.H);
  const std::int64_t b = block / p.v_tiles / p.H, first_slot = b * p.chunks;
  const int K = p.K, V = p.V;
  rs::State<KP> x;
  rs::for_each_state<KP>(x, col0, [](float& e, int, int) { e = 0.f; });
  rs::run<T, KP>(x, p.chunks, col0, V, [&](std::int64_t c) {
    float* const record = record_of<T, KP>(p, h, first_slot + c);
    return rs::ChunkIo{R::w(record), R::at(record), R::u(record), nullptr, R::vn(record, V),
                       state_of<T, KP>(p, h, first_slot + c)};
  }, reinterpret_cast<float*>(smem_vec));
  if (p.final_state.data != nullptr)
    rs::for_each_state<KP>(x, col0, [&](float& e, int key, int col) {
      if (key < K && col < V) *p.final_state.at(b, h, key, col) = e;
    });
}

// ---- chunk_output ----------------------------------------------------------------------------------
// Shared memory (words): Φ_q [64 rows][KP], X_c [kOutTileV rows][KP], P [64][64], V_new [kOutTileV
// rows][64] (kOutputTerms planes), den [64]. 104 KB at KP = 128 (bf16/fp16): two blocks an SM.
template <class T, int KP>
struct OutputLayout {
  static constexpr int kFq = operand_words<T, kOutputTerms>(kChunk, KP);
  static constexpr int kX = operand_words<T, kOutputTerms>(kOutTileV, KP);
  static constexpr int kP = operand_words<T, kOutputTerms>(kChunk, kChunk);
  static constexpr int kVn = operand_words<T, kOutputTerms>(kOutTileV, kChunk);
  static constexpr int kWords = kFq + kX + kP + kVn + kChunk;
};

// o = (Φ_q X_c + P V_new) / den for the rows < n of one chunk, columns [v0, v0 + kOutTileV).
template <class T, int KP>
__global__ void __launch_bounds__(kThreads, 2) chunk_output(const Params<T> p) {
  using L = OutputLayout<T, KP>;
  using R = Record<T, KP>;
  float4* const smem_vec = dynamic_shared<float4>();
  float* const words = reinterpret_cast<float*>(smem_vec);
  const auto fq_op = operand_at<T, kOutputTerms, KP>(words, kChunk);
  const auto x_op = operand_at<T, kOutputTerms, KP>(words + L::kFq, kOutTileV);
  const auto p_op = operand_at<T, kOutputTerms, kChunk>(words + L::kFq + L::kX, kChunk);
  const auto vn_op = operand_at<T, kOutputTerms, kChunk>(words + L::kFq + L::kX + L::kP, kOutTileV);
  float* const den_s = words + L::kFq + L::kX + L::kP + L::kVn;

  const int tile = static_cast<int>(blockIdx.x % p.out_tiles);
  const Chunk ch = chunk_of(p, blockIdx.x / p.out_tiles);
  const int K = p.K, V = p.V, n = ch.n, v0 = tile * kOutTileV;
  float* const record = record_of<T, KP>(p, ch.h, ch.slot);

  const TokenRows<const T> q = rows_of(p.q, ch.b, ch.h);
  fill(fq_op, kChunk, [&](int i, int d) { return i < n && d < K ? elu_plus_one(to_float(q(ch.t0 + i, d))) : 0.f; });
  copy_rows(x_op, operand_at<T, kOutputTerms, KP>(state_of<T, KP>(p, ch.h, ch.slot), V), v0, V);
  copy_rows(p_op, operand_at<T, kOutputTerms, kChunk>(R::p(record, V), kChunk), 0, kChunk);
  copy_rows(vn_op, operand_at<T, kOutputTerms, kChunk>(R::vn(record, V), V), v0, V);
  if (threadIdx.x < kChunk) den_s[threadIdx.x] = PenaltyRecord<KP>::den(penalty_of<T, KP>(p, ch.h, ch.slot))[threadIdx.x];
  __syncthreads();

  const TokenRows<T> o = rows_of(p.o, ch.b, ch.h);
  for_each_strip<kChunk, kOutTileV, 2>([&](int m0, int n0) {
    float acc[2][4];
    zero(acc);
    warp_product<T, KP>(acc, fq_op, x_op, m0, n0);
    warp_product<T, kChunk>(acc, p_op, vn_op, m0, n0);
    for_each_element(acc, m0, n0, [&](int i, int col, float y) {
      if (i < n && v0 + col < V) o(ch.t0 + i, v0 + col) = from_float<T>(y / den_s[i]);
    });
  });
}

// ---- launcher --------------------------------------------------------------------------------------
template <class T, int KP>
Status enqueue(Params<T> p, cudaStream_t stream) {
  using namespace chunk_launch;
  const auto gram = penalty_gram<T, KP>;
  const auto start = penalty_start<T, KP>;
  const auto penalty = penalty_chunk<T, KP>;
  const auto prepare = chunk_prepare<T, KP>;
  const auto pass = state_pass<T, KP>;
  const auto output = chunk_output<T, KP>;
  const std::size_t gram_smem = sizeof(float) * GramLayout<KP>::kWords;
  const std::size_t start_smem = sizeof(float) * StartLayout<KP>::kWords;
  const std::size_t penalty_smem = sizeof(float) * ChunkLayout<KP>::kWords;
  const std::size_t prepare_smem = sizeof(float) * PrepareLayout<T, KP>::kWords;
  const std::size_t pass_smem = sizeof(float) * register_state_pass::Layout<T, KP>::kWords;
  const std::size_t output_smem = sizeof(float) * OutputLayout<T, KP>::kWords;
  cudaError_t e = allow_smem(gram, gram_smem);
  if (e == cudaSuccess) e = allow_smem(start, start_smem);
  if (e == cudaSuccess) e = allow_smem(penalty, penalty_smem);
  if (e == cudaSuccess) e = allow_smem(prepare, prepare_smem);
  if (e == cudaSuccess) e = allow_smem(pass, pass_smem);
  if (e == cudaSuccess) e = allow_smem(output, output_smem);
  if (e != cudaSuccess) return cuda_failure(kName, "shared-memory opt-in", e);  // nothing was launched

  // Workspace: H · slots start records (doubles, first, so that they are 8-byte aligned), then as many
  // penalty records, records and states.
  const std::int64_t records = p.H * p.slots;
  const std::int64_t start_floats = records * StartRecord<KP>::kDoubles * 2;
  const std::int64_t penalty_floats = records * PenaltyRecord<KP>::kWords;
  const std::int64_t record_floats = records * Record<T, KP>::words(p.V);
  const std::int64_t floats = start_floats + penalty_floats + record_floats + records * state_words<T, KP>(p.V);
  float* workspace = nullptr;
  if (const Status st = allocate_workspace(kName, sizeof(float) * static_cast<std::size_t>(floats), stream, &workspace); !st)
    return st;
  if (workspace != nullptr) {
    p.starts = reinterpret_cast<double*>(workspace);
    p.penalty = workspace + start_floats;
    p.records = p.penalty + penalty_floats;
    p.states = p.records + record_floats;
  }
  if (records > 0) {
    const auto grid = static_cast<unsigned>(records);
    launch_kernel(gram, grid, kThreads, gram_smem, stream, p);
    chunk_prefix::enqueue(reinterpret_cast<double2*>(p.starts), p.chunks, StartRecord<KP>::kSummed / 2,
                          StartRecord<KP>::kDoubles / 2, p.B * p.H, stream);
    launch_kernel(start, grid, kThreads, start_smem, stream, p);
    launch_kernel(penalty, grid, kThreads, penalty_smem, stream, p);
    launch_kernel(prepare, grid, kThreads, prepare_smem, stream, p);
  }
  launch_kernel(pass, static_cast<unsigned>(p.B * p.H * p.v_tiles), register_state_pass::kThreads, pass_smem, stream, p);  // T = 0: X_T = 0
  if (records > 0) launch_kernel(output, static_cast<unsigned>(records * p.out_tiles), kThreads, output_smem, stream, p);
  return finish(kName, workspace, stream);
}

Status launch(const LaunchArgs& args) {
  Validator v(kName, args);
  const VlaInputs in = validate_vla(v, args, kDtypes);
  v.require_size('K', kMinK, 0);
  v.require_size('V', 1, std::numeric_limits<std::int32_t>::max());
  const std::int64_t B = v.size('B'), H = v.size('H'), tokens = v.size('T');
  const std::int64_t chunks = (tokens + kChunk - 1) / kChunk, slots = B * chunks;
  const std::int64_t v_tiles = (v.size('V') + kTileV - 1) / kTileV;
  const std::int64_t out_tiles = (v.size('V') + kOutTileV - 1) / kOutTileV;
  // The kernels' largest grids (the prefix's at KP = 128, the larger).
  v.require_grid(std::max({H * slots * out_tiles, B * H * v_tiles, chunk_prefix::blocks(B * H, StartRecord<128>::kSummed / 2)}));
  if (!v.ok()) return v.status();
  if (B * H == 0) return Status::success();  // no head: nothing to write

  return dispatch_half(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    p.q = strided<const T>(in.q);
    p.k = strided<const T>(in.k);
    p.v = strided<const T>(in.v);
    p.o = strided<T>(in.o);
    p.final_state = strided<float>(in.final_state);
    p.tokens = tokens;
    p.chunks = chunks;
    p.B = B;
    p.slots = slots;
    p.H = static_cast<int>(H);
    p.K = static_cast<int>(v.size('K'));
    p.V = static_cast<int>(v.size('V'));
    p.v_tiles = static_cast<int>(v_tiles);
    p.out_tiles = static_cast<int>(out_tiles);
    if (p.K <= 64) return enqueue<T, 64>(p, stream_of(args));
    return enqueue<T, 128>(p, stream_of(args));
  });
}

}  // namespace

void append_vla_chunked_kernels(std::vector<Kernel>& out) {
  Kernel k = vla_entry(kName,
                       "VLA, chunked (C = 64): every chunk's penalty at once from A_s = (λ0 I + Σ u uᵀ)⁻¹ (prefix Grams "
                       "inverted in fp64), its Sherman–Morrison steps blocked as an LDLᵀ in fp32, then the memory by "
                       "the UT/WY delta rule with keys k̂ and α̂ (products on tensor cores); bf16/fp16 only, K ≥ 16 "
                       "(docs/gpu-kernels/vla.md)",
                       kDtypes, launch);
  k.limits.min_K = kMinK;
  k.limits.chunk = vla_chunked::kChunk;
  out.push_back(std::move(k));
}

}  // namespace larc::gpu::detail
