// Launchers and registry entries of the chunked (UT/WY) GDN / KLA backward (the kernels:
// delta_rule_chunked_backward.cuh; docs/gpu-kernels/delta-rule.md "Chunked backward"). Inputs and outputs
// are gdn/kla-fused-recurrent-backward's (delta_rule_backward.cu): q, k [B,T,H,K] and v [B,T,W,V], g, beta
// (KLA: eta) [B,T,W], do [B,T,W,V] in one dtype, optional fp32 initial_state and dht [B,W,K,V]; dq, dk
// [B,T,H,K], dv, dg, dbeta (deta) per value head in the inputs' dtype and the optional fp32 dh0 [B,W,K,V].
// W a multiple of H groups the value heads (FLA's GVA): dq and dk sum their group's value heads.
// K ≤ 256, any V ≥ 1, any T ≥ 0. The varlen kernels take FLA's cu_seqlens with B = 1 and states
// [N,W,K,V]; tokens outside every sequence get zero gradients.
// Two grades: the fp32 grade (intermediate operands as three bf16 terms) and the io grade
// (intermediates rounded to the input dtype but on dh0's chain, declared so that the gate judges it at io).
//
// Workspace (stream-ordered, chunk_launch.cuh): the forward's records and states (delta_rule_chunked.cu),
// the final state, and per (head, chunk) the backward's operands, ∂L/∂S_{c+1} and dV_new (fp32), the value
// sums, Rᵀ and (bf16/fp16) the state pass's fp32 S_c and V_new: at K = V = 128 about 0.81 MB a chunk with
// the fp32 grade (6.6 GB at B = 1, H = 16, T = 32,768); with grouped value heads, per value head, plus each
// value head's fp32 dq and dk (64 KB a chunk at K = 128).
#include <algorithm>
#include <string>

#include "chunk_launch.cuh"
#include "delta_rule_chunked_backward.cuh"
#include "families.h"
#include "larc/common/mechanism_constants.h"

namespace larc::gpu::detail {

namespace {

using namespace delta_rule_chunked_backward;
using namespace chunk_launch;

constexpr float kKlaEps = float(mechanism_constants::kla_eps);
constexpr std::int64_t kMaxK = 256;
constexpr std::int64_t kTailBlocks = 1024;  // zero_outside_sequences' grid at most: blocks stride over tokens

// Rounded up to whole 16-byte groups, so that every part of the workspace is aligned for float4 copies.
constexpr std::int64_t aligned(std::int64_t floats) { return (floats + 3) / 4 * 4; }

template <class T, int TERMS, int KP, Step STEP>
Status enqueue(Params<T> p, cudaStream_t stream, const std::string& name) {
  fwd::Params<T>& f = p.f;
  const std::int64_t records = f.H * f.slots, V = f.V;
  const std::int64_t states = aligned(fwd::states_workspace_floats<T, KP>(f));
  const std::int64_t final_floats = aligned(f.sequences * f.H * f.K * V);
  const std::int64_t copies = kMma<T> ? records : 0;  // the state pass's fp32 S_c and V_new (bf16/fp16)
  const std::int64_t parts[] = {
      aligned(copies * KP * V),                      // states_f32
      aligned(copies * kChunk * V),                  // vnew_f32
      records * Operands<T, KP>::kWords,             // operands
      aligned(records * KP * V),                     // d_states
      aligned(f.sequences * f.H * KP * V),           // d_start
      aligned(records * kChunk * V),                 // d_vnew
      records * Sums<KP>::kWords,                    // sums
      records * kChunk * kChunk,                     // solve_t
      f.group > 1 ? 2 * records * kChunk * f.K : 0,  // dqk_parts (grouped value heads)
      2 * records * f.out_tiles * kChunk};           // dg_terms (fp64)
  std::int64_t floats = states + final_floats;
  for (const std::int64_t part : parts) floats += part;

  const auto prepare = backward_prepare<T, KP, STEP>;
  const auto pass = reverse_state_pass<T, KP>;
  const auto reductions = value_reductions<T, TERMS, KP>;
  const auto gradients = chunk_gradients<T, TERMS, KP, STEP>;
  const auto values = value_gradients<T, TERMS, KP>;
  const auto decays = decay_gradients<T, KP>;
  constexpr std::size_t prepare_smem = sizeof(float) * PrepareLayout<T, KP>::kWords;
  constexpr std::size_t pass_smem = sizeof(float) * PassLayout<T, KP>::kWords;
  constexpr std::size_t reductions_smem = sizeof(float) * SumLayout<T, TERMS>::kWords;
  constexpr std::size_t gradients_smem = sizeof(float) * GradientLayout<T, TERMS>::kWords;
  constexpr std::size_t values_smem = sizeof(float) * ValueLayout<T, TERMS>::kWords;
  static_assert(std::max({prepare_smem, pass_smem, reductions_smem, gradients_smem, values_smem}) <= 227 * 1024,
                "every layout fits a block's opt-in shared memory (H100/H200: 227 KB)");
  cudaError_t e = allow_smem(prepare, prepare_smem);
  if (e == cudaSuccess) e = allow_smem(pass, pass_smem);
  if (e == cudaSuccess) e = allow_smem(reductions, reductions_smem);
  if (e == cudaSuccess) e = allow_smem(gradients, gradients_smem);
  if (e == cudaSuccess) e = allow_smem(values, values_smem);
  if (e != cudaSuccess) return cuda_failure(name, "shared-memory opt-in", e);  // nothing was launched

  float* workspace = nullptr;
  if (const Status st = allocate_workspace(name, sizeof(float) * static_cast<std::size_t>(floats), stream, &workspace); !st)
    return st;
  if (workspace != nullptr) {
    fwd::place_states_workspace<T, KP>(f, workspace);
    float* next = workspace + states;
    f.final_state = {next, f.H * f.K * V, f.K * V, V, 1};
    next += final_floats;
    float** const targets[] = {&f.states_f32, &f.vnew_f32, &p.operands, &p.d_states, &p.d_start,
                               &p.d_vnew,     &p.sums,     &p.solve_t,  &p.dqk_parts};
    for (int i = 0; i < 9; ++i) {
      *targets[i] = parts[i] > 0 ? next : nullptr;
      next += parts[i];
    }
    p.dg_terms = reinterpret_cast<double*>(next);  // 8-byte aligned: every part before is a multiple of 4 floats
  }
  if (const Status st = fwd::enqueue_states<T, KP, STEP>(f, stream, name); !st) {
    (void)finish(name, workspace, stream);
    return st;
  }
  const auto grid = [](std::int64_t blocks) { return static_cast<unsigned>(blocks); };
  if (records > 0) launch_kernel(prepare, grid(records), kThreads, prepare_smem, stream, p);
  launch_kernel(pass, grid(f.sequences * f.H * f.v_tiles), kThreads, pass_smem, stream, p);
  if (records > 0) {
    launch_kernel(reductions, grid(records * p.key_tiles), kThreads, reductions_smem, stream, p);
    launch_kernel(gradients, grid(records), kThreads, gradients_smem, stream, p);
    if (p.dqk_parts != nullptr) launch_kernel(sum_value_head_groups<T>, grid(f.H / f.group * f.slots), kThreads, 0, stream, p);
    launch_kernel(values, grid(records * f.out_tiles), kThreads, values_smem, stream, p);
    launch_kernel(decays, grid(records), kThreads, 0, stream, p);
  }
  if (f.cu_seqlens != nullptr && f.tokens > 0) {
    const std::int64_t tail_blocks = std::min(f.tokens, kTailBlocks);
    launch_kernel(zero_outside_sequences<T>, grid(tail_blocks), kThreads, 0, stream, p);
  }
  return finish(name, workspace, stream);
}

template <Step STEP, Grade GRADE>
Status launch(const LaunchArgs& args, const std::string& name, bool varlen) {
  Validator v(name, args);
  const Dtype dt = v.dtype_of("q", {Dtype::bf16, Dtype::fp16, Dtype::fp32});
  const TensorView* q = v.input("q", "BTHK", dt);
  const TensorView* k = v.input("k", "BTHK", dt);
  // Everything but q, k and their gradients per value head (W), as the forward's launch binds them.
  const TensorView* val = v.input("v", "BTWV", dt);
  const TensorView* gate = v.input("g", "BTW", dt);
  const char* step_name = STEP == Step::beta ? "beta" : "eta";
  const TensorView* step = v.input(step_name, "BTW", dt);
  const TensorView* d_o = v.input("do", "BTWV", dt);
  const TensorView* cu = varlen ? v.cu_seqlens() : nullptr;
  const char* states = varlen ? "NWKV" : "BWKV";
  const TensorView* h0 = v.input("initial_state", states, Dtype::fp32, true);
  const TensorView* dht = v.input("dht", states, Dtype::fp32, true);
  const TensorView* dq = v.output("dq", "BTHK", dt);
  const TensorView* dk = v.output("dk", "BTHK", dt);
  const TensorView* dv = v.output("dv", "BTWV", dt);
  const TensorView* dg = v.output("dg", "BTW", dt);
  const TensorView* dstep = v.output(std::string("d") + step_name, "BTW", dt);
  const TensorView* dh0 = v.output("dh0", states, Dtype::fp32, true);
  v.require_size('K', 1, kMaxK);
  fwd::require_prepare_k(v, dt);
  v.require_size('V', 1, 0);
  v.require_value_head_groups();
  // H below: the value heads, over which every kernel but sum_value_head_groups runs.
  const std::int64_t sequences = v.size(varlen ? 'N' : 'B'), H = v.size('W'), tokens = v.size('T');
  // Record slots per head as the forward's launch counts them (delta_rule_chunked.cu).
  const std::int64_t chunks = fwd::chunks_in(tokens), slots = varlen ? chunks + sequences : v.size('B') * chunks;
  const std::int64_t v_tiles = (v.size('V') + fwd::kTileV - 1) / fwd::kTileV;
  const std::int64_t out_tiles = (v.size('V') + kOutTileV - 1) / kOutTileV;
  // The largest grids (sum_value_head_groups' H / group · slots is below them).
  v.require_grid(std::max({H * slots * out_tiles, H * slots * (kMaxK / kKeyTile), sequences * H * v_tiles}));
  const float scale = v.read_scale(v.size('K'));
  if (!v.ok()) return v.status();
  if (sequences * H == 0) return Status::success();  // no sequence or no head: nothing to compute

  return dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    fwd::Params<T>& f = p.f;
    f.q = strided<const T>(q);
    f.k = strided<const T>(k);
    f.v = strided<const T>(val);
    f.gate = strided<const T>(gate);
    f.step = strided<const T>(step);
    f.initial_state = strided<const float>(h0);
    f.cu_seqlens = cu != nullptr ? cu->data : nullptr;
    f.cu_seqlens_int64 = cu != nullptr && cu->dtype == Dtype::i64;
    f.tokens = tokens;
    f.chunks = chunks;
    f.sequences = sequences;
    f.slots = slots;
    f.H = static_cast<int>(H);
    f.group = static_cast<int>(H / v.size('H'));
    f.K = static_cast<int>(v.size('K'));
    f.V = static_cast<int>(v.size('V'));
    f.v_tiles = static_cast<int>(v_tiles);
    f.out_tiles = static_cast<int>(out_tiles);
    f.scale = scale;
    f.eps = kKlaEps;
    p.d_o = strided<const T>(d_o);
    p.d_final = strided<const float>(dht);
    p.dq = strided<T>(dq);
    p.dk = strided<T>(dk);
    p.dv = strided<T>(dv);
    p.dg = strided<T>(dg);
    p.dstep = strided<T>(dstep);
    p.d_initial = strided<float>(dh0);
    const cudaStream_t stream = stream_of(args);
    constexpr int kIo = kInputTerms<T>;
    constexpr int TERMS = GRADE == Grade::fp32 ? kStateTerms : kIo;
    if (f.K <= 64) return (p.key_tiles = 1, enqueue<T, TERMS, 64, STEP>(p, stream, name));
    if (f.K <= 128) return (p.key_tiles = 2, enqueue<T, TERMS, 128, STEP>(p, stream, name));
    return (p.key_tiles = 4, enqueue<T, TERMS, 256, STEP>(p, stream, name));
  });
}

}  // namespace

void append_delta_rule_chunked_backward_kernels(std::vector<Kernel>& out) {
  append_with_varlen_twins(
      out, kMaxK, kChunk,
      {{launch<Step::beta, Grade::fp32>, false, "gdn-chunked-backward", "gdn-backward",
        "Gated DeltaNet's gradients, chunked (C = 64, UT/WY adjoint): per-chunk work in parallel around one "
        "reverse pass of ∂L/∂S; intermediates as fp32 (three bf16 terms on tensor cores)"},
       {launch<Step::kaczmarz, Grade::fp32>, false, "kla-chunked-backward", "kla-backward",
        "KLA's gradients, chunked as gdn-chunked-backward; dη and dk's path through β"},
       {launch<Step::beta, Grade::io>, true, "gdn-chunked-backward-io", "gdn-backward",
        "gdn-chunked-backward with intermediates rounded to the input dtype (one MMA per product on bf16), "
        "declared io"},
       {launch<Step::kaczmarz, Grade::io>, true, "kla-chunked-backward-io", "kla-backward",
        "kla-chunked-backward with intermediates rounded to the input dtype, declared io"}});
}

}  // namespace larc::gpu::detail
