// Second-order masked HLA (reference/hla.h, SPEC §5) as a gate mechanism: q, k [B,T,H,K], v [B,T,H,V],
// no decay (γ = 1), unnormalised, no read scale (SPEC §5 has none); output o [B,T,H,V]. Queries and
// keys are drawn with norm K^{-1/4} so that o_t = q_tᵀ(S^K_t C_t − G_t) stays O(T) rather than O(T·K).
#include <cmath>

#include "larc/reference/hla.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

void register_hla_mechanisms(std::vector<Mechanism>& out) {
  Mechanism m;
  m.name = "hla";
  m.description = "second-order masked higher-order linear attention: o_t = row t of ((A Aᵀ) ⊙ L) V, A = L ⊙ Q Kᵀ";
  m.inputs = {{"q", "BTHK", "queries"}, {"k", "BTHK", "keys"}, {"v", "BTHV", "values"}};
  m.outputs = {{"o", "BTHV", "outputs", false}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖ in units of K^{-1/4}"}};
  m.parameters = {{"order", 2}, {"masked", true}, {"gamma", 1}, {"normalized", false}};
  m.forms = {ref::Form::serial, ref::Form::chunked, ref::Form::materialized};
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    CaseRng rng(seed);
    const double unit = std::pow(static_cast<double>(s.K), -0.25);
    ValueMap in;
    in["q"] = keys_tensor(rng, s, 0.0, unit);
    in["k"] = keys_tensor(rng, s, kn.at("collinearity"), unit * kn.at("key_norm"));
    in["v"] = normal_tensor(rng, {s.B, s.T, s.H, s.V}, 1.0);
    return in;
  };
  m.compute = [](const ValueMap& in, Precision p, ref::Form form, std::int64_t chunk) {
    return at_precision(p, [&]<class S>() {
      return ValueMap{{"o", to_double_tensor(ref::hla::hla_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")),
                                                                       cast_tensor<S>(in.at("v")), {}, form, chunk))}};
    });
  };
  out.push_back(std::move(m));
}

}  // namespace larc::harness::detail
