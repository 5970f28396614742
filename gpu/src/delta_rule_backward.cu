// Launchers and registry entries of the delta-rule family's fused recurrent backward kernels (the kernels:
// delta_rule_backward.cuh; docs/gpu-kernels/delta-rule.md "Fused recurrent backward"). They compute the
// gradient twins' outputs (harness/src/mechanism_support.h gradient_twin; docs/gate.md "Gradient cases"):
// inputs the forward kernel's (delta_rule_fused.cu) plus do [B,T,W,V] in the inputs' dtype and the
// optional fp32 dht [B,W,K,V]; outputs dq, dk [B,T,H,K], dv [B,T,W,V], dg [B,T,W] or dgk [B,T,H,K],
// dbeta / deta [B,T,W] in the inputs' dtype and the optional fp32 dh0 [B,W,K,V]. The varlen kernels take
// FLA's cu_seqlens with B = 1 and states [N,W,K,V].
//
// Workspace (stream-ordered, chunk_launch.cuh): a checkpoint of K_max × 16 floats per (value head, tile
// of 16 columns, chunk of 1024/K_max tokens), i.e. 4·K·V bytes per head and 8 tokens at K = 128, and
// per-tile partial sums of dq, dk (dgk) rows and dβ, dg per token and value head.
#include <algorithm>
#include <string>

#include "chunk_launch.cuh"
#include "delta_rule_backward.cuh"
#include "families.h"
#include "larc/common/mechanism_constants.h"

namespace larc::gpu::detail {

namespace {

using namespace delta_rule_backward;
using namespace chunk_launch;
using delta_rule::DeltaNet;
using delta_rule::GatedDeltaNet;
using delta_rule::GatedLinearAttention;
using delta_rule::KaczmarzLinearAttention;
using delta_rule::LinearAttention;

constexpr float kKlaEps = float(mechanism_constants::kla_eps);
constexpr std::int64_t kMaxK = 256;

template <class Pol, class T, int KMAX>
Status enqueue(Params<T> p, const std::string& name, cudaStream_t stream) {
  using G = Geo<KMAX>;
  using L = Layout<Pol, KMAX>;
  p.tiles = (p.V + G::tile_v - 1) / G::tile_v;
  const std::int64_t packed = packed_token_count(p);
  p.slots = checkpoint_slots<KMAX>(packed, p.sequences);
  const std::int64_t checkpoint_floats = static_cast<std::int64_t>(p.H) * p.tiles * p.slots * G::rows * kThreads;
  const std::int64_t row_floats = kRowQuantities<Pol> * static_cast<std::int64_t>(p.tiles) * packed * p.H * p.K;
  const std::int64_t scalar_floats = kScalarQuantities<Pol> * static_cast<std::int64_t>(p.tiles) * packed * p.H;
  const auto recurrence = reverse_recurrence<Pol, T, KMAX>;
  const std::size_t smem = sizeof(float) * L::floats;
  if (const cudaError_t e = allow_smem(recurrence, smem); e != cudaSuccess) return cuda_failure(name, "shared-memory opt-in", e);
  float* workspace = nullptr;
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(checkpoint_floats + row_floats + scalar_floats);
  if (const Status st = allocate_workspace(name, bytes, stream, &workspace); !st) return st;
  p.checkpoints = workspace;
  p.rows = workspace + checkpoint_floats;
  p.scalars = p.rows + row_floats;
  launch_kernel(recurrence, static_cast<unsigned>(p.sequences * p.H * p.tiles), kThreads, smem, stream, p);
  if (packed > 0) {
    const int threads = (std::max(p.K, p.group) + 31) / 32 * 32;
    launch_kernel(finalize_gradients<Pol, T>, static_cast<unsigned>(packed * (p.H / p.group)), threads, sizeof(float) * p.group, stream, p);
  }
  return finish(name, workspace, stream);
}

template <class Pol>
Status launch(const LaunchArgs& args, const std::string& name, bool varlen) {
  Validator v(name, args);
  const Dtype dt = v.dtype_of("q", {Dtype::bf16, Dtype::fp16, Dtype::fp32});
  const TensorView* q = v.input("q", "BTHK", dt);
  const TensorView* k = v.input("k", "BTHK", dt);
  const TensorView* val = v.input("v", "BTWV", dt);
  const TensorView* gate = Pol::decay == Decay::scalar    ? v.input("g", "BTW", dt)
                           : Pol::decay == Decay::channel ? v.input("gk", "BTWK", dt)
                                                          : nullptr;
  const char* step_name = Pol::write == Write::delta_key_normalised ? "eta" : "beta";
  const TensorView* step = Pol::delta ? v.input(step_name, "BTW", dt) : nullptr;
  const TensorView* d_o = v.input("do", "BTWV", dt);
  const TensorView* cu = varlen ? v.cu_seqlens() : nullptr;
  const char* states = varlen ? "NWKV" : "BWKV";
  const TensorView* h0 = v.input("initial_state", states, Dtype::fp32, true);
  const TensorView* dht = v.input("dht", states, Dtype::fp32, true);
  const TensorView* dq = v.output("dq", "BTHK", dt);
  const TensorView* dk = v.output("dk", "BTHK", dt);
  const TensorView* dv = v.output("dv", "BTWV", dt);
  const TensorView* dgate = Pol::decay == Decay::scalar    ? v.output("dg", "BTW", dt)
                            : Pol::decay == Decay::channel ? v.output("dgk", "BTWK", dt)
                                                           : nullptr;
  const TensorView* dstep = Pol::delta ? v.output(std::string("d") + step_name, "BTW", dt) : nullptr;
  const TensorView* dh0 = v.output("dh0", states, Dtype::fp32, true);
  v.require_size('K', 1, kMaxK);
  v.require_size('V', 1, 0);
  v.require_value_head_groups();
  const std::int64_t sequences = v.size(varlen ? 'N' : 'B');
  const std::int64_t tiles = (v.size('V') + Geo<64>::tile_v - 1) / Geo<64>::tile_v;
  v.require_grid(sequences * v.size('W') * tiles);
  v.require_grid((varlen ? v.size('T') : v.size('B') * v.size('T')) * v.size('H'));  // finalize_gradients
  const float scale = v.read_scale(v.size('K'));
  if (!v.ok()) return v.status();
  if (sequences * v.size('W') == 0) return Status::success();  // no sequence or no head: nothing to compute

  return dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    p.q = strided<const T>(q);
    p.k = strided<const T>(k);
    p.v = strided<const T>(val);
    p.gate = strided<const T>(gate);
    p.step = strided<const T>(step);
    p.d_o = strided<const T>(d_o);
    p.initial_state = strided<const float>(h0);
    p.d_final = strided<const float>(dht);
    p.dq = strided<T>(dq);
    p.dk = strided<T>(dk);
    p.dv = strided<T>(dv);
    p.dgate = strided<T>(dgate);
    p.dstep = strided<T>(dstep);
    p.d_initial = strided<float>(dh0);
    p.cu_seqlens = cu != nullptr ? cu->data : nullptr;
    p.cu_seqlens_int64 = cu != nullptr && cu->dtype == Dtype::i64;
    p.tokens = v.size('T');
    p.sequences = sequences;
    p.H = static_cast<int>(v.size('W'));
    p.group = static_cast<int>(v.size('W') / v.size('H'));
    p.K = static_cast<int>(v.size('K'));
    p.V = static_cast<int>(v.size('V'));
    p.scale = scale;
    p.eps = kKlaEps;
    const cudaStream_t stream = stream_of(args);
    if (p.K <= 64) return enqueue<Pol, T, 64>(p, name, stream);
    if (p.K <= 128) return enqueue<Pol, T, 128>(p, name, stream);
    return enqueue<Pol, T, 256>(p, name, stream);
  });
}

template <class Pol>
Kernel kernel_entry(std::string name, std::string mechanism, std::string description, bool varlen) {
  auto run = [name, varlen](const LaunchArgs& args) { return launch<Pol>(args, name, varlen); };
  Kernel k = delta_rule_entry(std::move(name), std::move(mechanism), std::move(description), varlen, kMaxK, std::move(run));
  k.limits.value_head_groups = Pol::delta;  // the delta rules' twins group value heads; LA's and GLA's do not
  return k;
}

}  // namespace

void append_delta_rule_backward_kernels(std::vector<Kernel>& out) {
  out.push_back(kernel_entry<LinearAttention>("la-fused-recurrent-backward", "la-backward",
                                              "linear attention's gradients, one pass over checkpointed states", false));
  out.push_back(kernel_entry<DeltaNet>("deltanet-fused-recurrent-backward", "deltanet-backward",
                                       "DeltaNet's gradients, one pass over checkpointed states", false));
  out.push_back(kernel_entry<GatedDeltaNet>("gdn-fused-recurrent-backward", "gdn-backward",
                                            "Gated DeltaNet's gradients, one pass over checkpointed states (dg direct)", false));
  out.push_back(kernel_entry<KaczmarzLinearAttention>(
      "kla-fused-recurrent-backward", "kla-backward",
      "KLA's gradients, one pass over checkpointed states; dη and dk's path through β = η / (‖k‖² + ε)", false));
  out.push_back(kernel_entry<GatedLinearAttention>("gla-fused-recurrent-backward", "gla-backward",
                                                   "GLA's gradients, one pass over checkpointed states (dgk direct)", false));
  out.push_back(kernel_entry<GatedDeltaNet>("gdn-fused-recurrent-backward-varlen", "gdn-backward",
                                            "Gated DeltaNet's gradients over packed sequences (FLA cu_seqlens, B = 1)", true));
  out.push_back(kernel_entry<KaczmarzLinearAttention>("kla-fused-recurrent-backward-varlen", "kla-backward",
                                                      "KLA's gradients over packed sequences (FLA cu_seqlens, B = 1)", true));
}

}  // namespace larc::gpu::detail
