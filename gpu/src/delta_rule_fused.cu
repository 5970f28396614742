// Launchers and registry entries of the delta-rule family's fused recurrent kernels (the kernel and
// its mapping: delta_rule_fused.cuh; docs/gpu-kernels/delta-rule.md). Conventions are the
// harness mechanisms' (harness/src/mechanisms_delta_rule.cpp, mechanisms_linear_attention.cpp,
// mechanisms_gla.cpp): q, k [B,T,H,K], v and o [B,T,H,V], gates [B,T,H] (gk [B,T,H,K]), fp32 states
// [B,H,K,V]; varlen kernels take FLA's cu_seqlens with B = 1 and states [N,H,K,V].
#include <cmath>
#include <string>

#include "delta_rule_fused.cuh"
#include "families.h"
#include "larc/common/mechanism_constants.h"

namespace larc::gpu::detail {

namespace {

using namespace delta_rule;

constexpr float kKlaEps = float(mechanism_constants::kla_eps);
constexpr float kRatioEps = float(mechanism_constants::la_ratio_eps);
constexpr std::int64_t kMaxK = 256;

template <class Pol, class T, int KMAX, int CHUNK>
cudaError_t enqueue(Params<T> p, std::int64_t sequences, cudaStream_t stream) {
  using G = GeometryFor<KMAX, CHUNK>;
  p.tiles = (p.V + G::tile_v - 1) / G::tile_v;
  p.capacity = static_cast<int>(p.tokens < CHUNK ? p.tokens : CHUNK);
  if (p.capacity == 0) p.capacity = 1;
  const int buffers = p.tokens > p.capacity ? 2 : 1;
  const std::size_t smem = sizeof(float) * static_cast<std::size_t>(buffers) * staging_floats<Pol, G>(p.capacity);
  const auto kernel = fused_recurrent<Pol, T, KMAX, CHUNK>;
  if (smem > 48 * 1024) {
    const cudaError_t e =
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return e;
  }
  const std::int64_t blocks = sequences * p.H * p.tiles;
  kernel<<<static_cast<unsigned>(blocks), kThreads, smem, stream>>>(p);
  return cudaSuccess;
}

// The state rows an instantiation holds: the fewest that fit K (64, 128 or 256), or, for the
// wide-k launch variants, the next wider (K ≤ 64 as 128, K ≤ 128 as 256; K > 128 as 256 still). K is
// summed as 8 runs of KMAX/8 rows, so the wider instantiation sums the same products in other runs:
// another accumulation order of the same algorithm, registered to measure what honest launch changes
// do to a kernel's error (docs/gate.md, "Accuracy-regression profiles").
enum class StateRows { fitted, wide };

// K ≤ 64, 128, 256: the rows each lane holds, chosen at launch; decode (at most one token per
// sequence on average) stages one token at a time and maps lanes for whole-sector state traffic.
// The arithmetic of a token does not depend on the decode choice (the fixed summation tree of
// delta_rule_fused.cuh), so every launch of a sequence with the same StateRows gives the same bits.
template <class Pol, class T>
cudaError_t enqueue_for_k(const Params<T>& p, std::int64_t sequences, StateRows rows, cudaStream_t stream) {
  const bool decode = p.tokens <= (p.cu_seqlens != nullptr ? sequences : 1);
  const auto run = [&]<int KMAX>() {
    return decode ? enqueue<Pol, T, KMAX, 1>(p, sequences, stream)
                  : enqueue<Pol, T, KMAX, kPrefillChunk<KMAX>>(p, sequences, stream);
  };
  const int fitted = p.K <= 64 ? 64 : p.K <= 128 ? 128 : 256;
  const int kmax = rows == StateRows::wide && fitted < 256 ? 2 * fitted : fitted;
  if (kmax == 64) return run.template operator()<64>();
  if (kmax == 128) return run.template operator()<128>();
  return run.template operator()<256>();
}

template <class Pol>
Status launch(const LaunchArgs& args, const std::string& name, bool varlen, StateRows rows) {
  Validator v(name, args);
  const Dtype dt = v.dtype_of("q", {Dtype::bf16, Dtype::fp16, Dtype::fp32});
  const TensorView* q = v.input("q", "BTHK", dt);
  const TensorView* k = v.input("k", "BTHK", dt);
  // Everything but q and k per value head (W); W a multiple of H groups the value heads (FLA's GVA).
  const TensorView* val = v.input("v", "BTWV", dt);
  const TensorView* gate = Pol::decay == Decay::scalar    ? v.input("g", "BTW", dt)
                           : Pol::decay == Decay::channel ? v.input("gk", "BTWK", dt)
                                                          : nullptr;
  const TensorView* step = Pol::write == Write::delta                  ? v.input("beta", "BTW", dt)
                           : Pol::write == Write::delta_key_normalised ? v.input("eta", "BTW", dt)
                                                                       : nullptr;
  const TensorView* cu = nullptr;
  if (varlen) cu = v.cu_seqlens();
  const char* states = varlen ? "NWKV" : "BWKV";
  const TensorView* h0 = v.input("initial_state", states, Dtype::fp32, true);
  const TensorView* z0 = Pol::ratio ? v.input("initial_normalizer", varlen ? "NWK" : "BWK", Dtype::fp32, true) : nullptr;
  const TensorView* o = v.output("o", "BTWV", dt);
  const TensorView* ht = v.output("final_state", states, Dtype::fp32, true);
  const TensorView* zt = Pol::ratio ? v.output("final_normalizer", varlen ? "NWK" : "BWK", Dtype::fp32, true) : nullptr;
  v.require_size('K', 1, kMaxK);
  v.require_size('V', 1, 0);
  v.require_value_head_groups();
  const std::int64_t sequences = v.size(varlen ? 'N' : 'B');
  const std::int64_t narrowest_tile = Geometry<64, 8>::tile_v;  // the most blocks any geometry launches
  const std::int64_t blocks = sequences * v.size('W') * ((v.size('V') + narrowest_tile - 1) / narrowest_tile);
  v.require_grid(blocks);
  const float scale = Pol::ratio ? 1.f : v.read_scale(v.size('K'));
  if (!v.ok()) return v.status();
  if (blocks == 0) return Status::success();  // no sequence or no head: nothing to compute

  const cudaError_t e = dispatch_float(dt, [&](auto tag) {
    using T = decltype(tag);
    Params<T> p;
    p.q = strided<const T>(q);
    p.k = strided<const T>(k);
    p.v = strided<const T>(val);
    p.gate = strided<const T>(gate);
    p.step = strided<const T>(step);
    p.o = strided<T>(o);
    p.initial_state = strided<const float>(h0);
    p.initial_normalizer = strided<const float>(z0);
    p.final_state = strided<float>(ht);
    p.final_normalizer = strided<float>(zt);
    p.cu_seqlens = cu != nullptr ? cu->data : nullptr;
    p.cu_seqlens_int64 = cu != nullptr && cu->dtype == Dtype::i64;
    p.tokens = v.size('T');
    p.H = static_cast<int>(v.size('W'));
    p.group = static_cast<int>(v.size('W') / v.size('H'));
    p.K = static_cast<int>(v.size('K'));
    p.V = static_cast<int>(v.size('V'));
    p.scale = scale;
    p.eps = Pol::ratio ? kRatioEps : kKlaEps;
    return enqueue_for_k<Pol>(p, sequences, rows, stream_of(args));
  });
  if (e != cudaSuccess)  // the shared-memory opt-in failed; nothing was launched
    return Status::failure(name + ": launch failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
  return launch_status(name);
}

template <class Pol>
Kernel kernel_entry(std::string name, std::string mechanism, std::string description, bool varlen,
                    StateRows rows = StateRows::fitted) {
  auto run = [name, varlen, rows](const LaunchArgs& args) { return launch<Pol>(args, name, varlen, rows); };
  Kernel k = delta_rule_entry(std::move(name), std::move(mechanism), std::move(description), varlen, kMaxK, std::move(run));
  k.limits.scale = !Pol::ratio;  // the ratio read divides by z^T φ(q) + ε instead
  k.limits.value_head_groups = true;
  return k;
}

}  // namespace

void append_delta_rule_kernels(std::vector<Kernel>& out) {
  out.push_back(kernel_entry<LinearAttention>("la-fused-recurrent", "la",
                                              "linear attention, one launch: S ← S + k v^T; o = scale · S^T q", false));
  out.push_back(kernel_entry<RatioLinearAttention>(
      "la-ratio-fused-recurrent", "la-ratio",
      "ratio linear attention, one launch: φ = ELU + 1; S ← S + φ(k) v^T, z ← z + φ(k); o = S^T φ(q) / (z^T φ(q) + ε)",
      false));
  out.push_back(kernel_entry<DeltaNet>("deltanet-fused-recurrent", "deltanet",
                                       "DeltaNet, one launch: S ← S + β k (v − S^T k)^T; o = S^T (scale q)", false));
  out.push_back(kernel_entry<GatedDeltaNet>(
      "gdn-fused-recurrent", "gdn", "Gated DeltaNet, one launch: S ← e^g S; S ← S + β k (v − S^T k)^T; o = S^T (scale q)",
      false));
  out.push_back(kernel_entry<KaczmarzLinearAttention>(
      "kla-fused-recurrent", "kla", "KLA, one launch: GDN with β = η / (‖k‖² + ε) computed from k in the kernel", false));
  out.push_back(kernel_entry<GatedLinearAttention>(
      "gla-fused-recurrent", "gla", "GLA, one launch: S ← Diag(e^gk) S + k v^T; o = S^T (scale q)", false));
  out.push_back(kernel_entry<GatedDeltaNet>("gdn-fused-recurrent-varlen", "gdn",
                                            "Gated DeltaNet over packed sequences (FLA cu_seqlens, B = 1)", true));
  out.push_back(kernel_entry<KaczmarzLinearAttention>("kla-fused-recurrent-varlen", "kla",
                                                      "KLA over packed sequences (FLA cu_seqlens, B = 1)", true));
  // Honest launch variants (StateRows::wide): the same kernels summing K in other runs.
  const char* const wide = ", launched with the state rows of the next wider K (another accumulation order)";
  out.push_back(kernel_entry<LinearAttention>("la-fused-recurrent-wide-k", "la", std::string("la-fused-recurrent") + wide,
                                              false, StateRows::wide));
  out.push_back(kernel_entry<DeltaNet>("deltanet-fused-recurrent-wide-k", "deltanet",
                                       std::string("deltanet-fused-recurrent") + wide, false, StateRows::wide));
  out.push_back(kernel_entry<GatedDeltaNet>("gdn-fused-recurrent-wide-k", "gdn", std::string("gdn-fused-recurrent") + wide,
                                            false, StateRows::wide));
  out.push_back(kernel_entry<KaczmarzLinearAttention>("kla-fused-recurrent-wide-k", "kla",
                                                      std::string("kla-fused-recurrent") + wide, false, StateRows::wide));
  out.push_back(kernel_entry<GatedLinearAttention>("gla-fused-recurrent-wide-k", "gla",
                                                   std::string("gla-fused-recurrent") + wide, false, StateRows::wide));
}

}  // namespace larc::gpu::detail
