// Launchers and registry entries of the delta-rule family's fused recurrent kernels (the kernel and
// its mapping: delta_rule_fused.cuh; validation and enqueue: delta_rule_fused_launch.cuh;
// docs/gpu-kernels/delta-rule.md).
#include <string>

#include "delta_rule_fused_launch.cuh"
#include "families.h"

namespace larc::gpu::detail {

namespace {

using namespace delta_rule;

template <class Pol>
Status launch(const LaunchArgs& args, const std::string& name, bool varlen, StateRows rows) {
  return validated_launch<Pol>(args, name, varlen, 0, [&](const auto& p, std::int64_t sequences, cudaStream_t stream) {
    return enqueue_for_k<Pol>(p, sequences, rows, stream);
  });
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
