// Variational linear attention (reference/vla.h, SPEC §1) as a gate mechanism with the paper's
// defaults: φ = ELU + 1, ratio read, λ0 = 1, stab_eps = 1e-4, no nudge, penalty directions
// u_t = norm(k_t)/√K (the authors'); q, k [B,T,H,K], v [B,T,H,V]; outputs o [B,T,H,V] and the final
// memory Sᵀ [B,H,K,V] in float32. Forms: serial and streamed (the scan is checked by the claims).
#include "larc/reference/vla.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

void register_vla_mechanisms(std::vector<Mechanism>& out) {
  Mechanism m;
  m.name = "vla";
  m.description = "variational linear attention: Sherman–Morrison penalty A_t, S_t = S(I − k̂ α̂ᵀ) + v α̂ᵀ, ratio read";
  m.inputs = {{"q", "BTHK", "queries"}, {"k", "BTHK", "raw keys"}, {"v", "BTHV", "values"}};
  m.outputs = {{"o", "BTHV", "outputs", false}, {"final_state", "BHKV", "memory Sᵀ after the last token", true}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖"}};
  m.parameters = {{"lambda0", 1}, {"stab_eps", 1e-4}, {"feature_map", "elu+1"}, {"read", "ratio"},
                  {"penalty_directions", "norm(k)/sqrt(K)"}};
  m.forms = {ref::Form::serial, ref::Form::streamed};
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    CaseRng rng(seed);
    ValueMap in;
    in["q"] = normal_tensor(rng, {s.B, s.T, s.H, s.K}, 1.0);
    in["k"] = keys_tensor(rng, s, kn.at("collinearity"), kn.at("key_norm"));
    in["v"] = normal_tensor(rng, {s.B, s.T, s.H, s.V}, 1.0);
    return in;
  };
  m.compute = [](const ValueMap& in, Precision p, ref::Form form, std::int64_t) {
    return at_precision(p, [&]<class S>() {
      const auto verb = form == ref::Form::streamed ? ref::vla::Verb::streamed : ref::vla::Verb::serial;
      const auto r = ref::vla::vla_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")),
                                              cast_tensor<S>(in.at("v")), {}, {}, {}, verb);
      return ValueMap{{"o", to_double_tensor(r.o)}, {"final_state", to_double_tensor(r.final_state)}};
    });
  };
  out.push_back(std::move(m));
}

}  // namespace larc::harness::detail
