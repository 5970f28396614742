// Log-linear attention (reference/log_linear_batched.h, SPEC §4) in its two variants, with FLA's
// conventions so fixtures feed its kernels unchanged; no read scale (FLA applies none), output o
// [B,T,H,V], level_scales λ [B,T,H,L] with L = ⌈log2 T⌉ + 1 in both.
//
//   "log-linear" (Mamba-2 decay, FLA's chunk_log_linear_attn): q, k [B,T,1,K], one head shared by all
//   H (FLA's chunk kernel requires it), v [B,T,H,V], g log-decays [B,T,H].
//   "log-linear-gdn" (the GDN variant; FLA has no kernel for it): laid out as FLA's
//   chunk_gated_delta_rule lays out Gated DeltaNet, which this variant extends by the level scales:
//   q, k [B,T,H,K] per head, unit-norm keys (β‖k‖² ≤ 1 keeps every level's transition
//   e^g (I − β k kᵀ) a contraction), v [B,T,H,V], g [B,T,H], beta [B,T,H].
#include "larc/reference/log_linear_batched.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace ll = ref::log_linear;

Mechanism log_linear(ll::Variant variant) {
  const bool gdn = variant == ll::Variant::gdn;
  Mechanism m;
  m.name = gdn ? "log-linear-gdn" : "log-linear";
  m.description = gdn ? "log-linear Gated DeltaNet: per level S^(ℓ) ← e^{g}(I − β k kᵀ) S^(ℓ), the token's β k vᵀ at "
                        "level 0, Fenwick cascade; o = Σ_ℓ λ^(ℓ) S^(ℓ)ᵀ q"
                      : "log-linear attention (Mamba-2 decay, FLA chunk_log_linear_attn): O = (H ⊙ Q Kᵀ) V, "
                        "H[t,s] = λ_t^(ℓ(t,s)) Π_{r=s+1..t} e^{g_r}";
  const std::string qk = gdn ? "BTHK" : "BT1K";
  m.inputs = {{"q", qk, gdn ? "queries" : "queries, one head shared by all"},
              {"k", qk, gdn ? "keys (unit norm)" : "keys, one head shared by all"},
              {"v", "BTHV", "values"},
              {.name = "g", .dims = "BTH", .meaning = "log-decays ≤ 0 (−∞: forget everything)", .max = 0,
               .minus_infinity = true},
              {"level_scales", "BTHL", "λ_t^(ℓ) per token and level ℓ = 0..⌈log2 T⌉"}};
  if (gdn) m.inputs.push_back({.name = "beta", .dims = "BTH", .meaning = "delta-rule steps β ∈ [0, 1]", .min = 0, .max = 1});
  m.outputs = {{"o", "BTHV", "outputs", false}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u"}};
  if (!gdn) m.knobs.push_back({"key_norm", 0.1, 10, 1, true, "‖k_t‖"});
  m.knobs.push_back({"decay_max", 1e-3, 20, 0.1, true, "log-decays g ~ U(−decay_max, 0)"});
  m.knobs.push_back({"level_scale_max", 1e-2, 10, 2, true, "λ ~ U(0, level_scale_max)"});
  if (gdn) {
    m.knobs.push_back({"beta_lo", 0, 1, 0.05, false, "β ~ U(beta_lo, beta_hi)"});
    m.knobs.push_back({"beta_hi", 0, 1, 1, false, "β ~ U(beta_lo, beta_hi)"});
  }
  for (const Knob& k : {entries_knob(), key_set_knob(), hard_decay_knob(), zero_decay_knob()}) m.knobs.push_back(k);
  m.edge_regimes = edge_regimes(true);
  m.parameters = gdn ? nlohmann::json{{"variant", "gdn"}, {"scale", 1}}
                     : nlohmann::json{{"variant", "mamba2"}, {"scale", 1}, {"fla_function", "chunk_log_linear_attn"}};
  m.forms = {ref::Form::serial, ref::Form::chunked, ref::Form::materialized};
  m.generate = [gdn](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    Shape qk_shape = s;
    if (!gdn) qk_shape.H = 1;
    ValueMap in;
    in["q"] = plain_directions(rng, qk_shape, 1.0);
    in["k"] = keys_in(rng, qk_shape, kn, gdn ? 1.0 : kn.at("key_norm"));
    in["v"] = entries_in(rng, {s.B, s.T, s.H, s.V}, 1.0, kn);
    in["g"] = log_decays_in(rng, {s.B, s.T, s.H}, kn.at("decay_max"), seed, kn);
    in["level_scales"] = uniform_tensor(rng, dims_of("BTHL", s), 0.0, kn.at("level_scale_max"));
    if (gdn)
      in["beta"] = uniform_tensor(rng, {s.B, s.T, s.H}, std::min(kn.at("beta_lo"), kn.at("beta_hi")),
                                  std::max(kn.at("beta_lo"), kn.at("beta_hi")));
    return in;
  };
  // The outputs of log_linear_batched in scalar S, in `form`, with the chunked form's operands rounded
  // to `operands` (compute and compute_io differ only in these).
  auto outputs = [gdn]<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    std::optional<ref::Tensor<S>> beta;
    if (gdn) beta = cast_tensor<S>(in.at("beta"));
    return ValueMap{{"o", to_double_tensor(ll::log_linear_batched<S>(
                              cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")), cast_tensor<S>(in.at("v")),
                              cast_tensor<S>(in.at("g")), cast_tensor<S>(in.at("level_scales")), beta, S(1), form,
                              chunk > 0 ? chunk : 64, operands))}};
  };
  set_compute(m, outputs);
  return m;
}
}  // namespace

void register_log_linear_mechanisms(std::vector<Mechanism>& out) {
  out.push_back(log_linear(ll::Variant::mamba2));
  out.push_back(log_linear(ll::Variant::gdn));
}

}  // namespace larc::harness::detail
