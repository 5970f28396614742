// Log-linear attention, Mamba-2 variant (reference/log_linear_batched.h, SPEC §4), with FLA's
// chunk_log_linear_attn conventions so fixtures feed its kernel unchanged: q, k [B,T,1,K] (one head
// shared by all H, as FLA's chunk kernel requires), v [B,T,H,V], g log-decays [B,T,H], level_scales
// λ [B,T,H,L] with L = ⌈log2 T⌉ + 1, no read scale (FLA applies none); output o [B,T,H,V].
#include "larc/reference/log_linear_batched.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

void register_log_linear_mechanisms(std::vector<Mechanism>& out) {
  Mechanism m;
  m.name = "log-linear";
  m.description = "log-linear attention (Mamba-2 decay, FLA chunk_log_linear_attn): O = (H ⊙ Q Kᵀ) V, "
                  "H[t,s] = λ_t^(ℓ(t,s)) Π_{r=s+1..t} e^{g_r}";
  m.inputs = {{"q", "BT1K", "queries, one head shared by all"},
              {"k", "BT1K", "keys, one head shared by all"},
              {"v", "BTHV", "values"},
              {"g", "BTH", "log-decays ≤ 0"},
              {"level_scales", "BTHL", "λ_t^(ℓ) per token and level ℓ = 0..⌈log2 T⌉"}};
  m.outputs = {{"o", "BTHV", "outputs", false}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖"},
             {"decay_max", 1e-3, 20, 0.1, true, "log-decays g ~ U(−decay_max, 0)"},
             {"level_scale_max", 1e-2, 10, 2, true, "λ ~ U(0, level_scale_max)"}};
  m.parameters = {{"variant", "mamba2"}, {"scale", 1}, {"fla_function", "chunk_log_linear_attn"}};
  m.forms = {ref::Form::serial, ref::Form::chunked, ref::Form::materialized};
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    CaseRng rng(seed);
    Shape shared = s;
    shared.H = 1;
    ValueMap in;
    in["q"] = keys_tensor(rng, shared, 0.0, 1.0);
    in["k"] = keys_tensor(rng, shared, kn.at("collinearity"), kn.at("key_norm"));
    in["v"] = normal_tensor(rng, {s.B, s.T, s.H, s.V}, 1.0);
    in["g"] = uniform_tensor(rng, {s.B, s.T, s.H}, -kn.at("decay_max"), 0.0);
    in["level_scales"] = uniform_tensor(rng, dims_of("BTHL", s), 0.0, kn.at("level_scale_max"));
    return in;
  };
  m.compute = [](const ValueMap& in, Precision p, ref::Form form, std::int64_t chunk) {
    return at_precision(p, [&]<class S>() {
      return ValueMap{{"o", to_double_tensor(ref::log_linear::log_linear_batched<S>(
                                cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")), cast_tensor<S>(in.at("v")),
                                cast_tensor<S>(in.at("g")), cast_tensor<S>(in.at("level_scales")), {}, S(1), form,
                                chunk > 0 ? chunk : 64))}};
    });
  };
  out.push_back(std::move(m));
}

}  // namespace larc::harness::detail
