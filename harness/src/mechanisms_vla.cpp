// Variational linear attention (reference/vla.h, SPEC §1) as a gate mechanism with the paper's
// defaults: φ = ELU + 1, ratio read, λ0 = 1, stab_eps = 1e-4, no nudge, penalty directions
// u_t = norm(k_t)/√K (the authors'); q, k [B,T,H,K], v [B,T,H,V], an optional initial memory Sᵀ
// [B,H,K,V] in float32 (the initial_state knob; A_0 = I/λ0 and ζ_0 = 0 as without one); outputs o
// [B,T,H,V] and the final memory Sᵀ [B,H,K,V] in float32. Forms: serial, streamed and chunked (vla_chunked.h; the scan is checked
// by the claims).
#include "larc/reference/vla_chunked.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

void register_vla_mechanisms(std::vector<Mechanism>& out) {
  Mechanism m;
  m.name = "vla";
  m.description = "variational linear attention: Sherman–Morrison penalty A_t, S_t = S(I − k̂ α̂ᵀ) + v α̂ᵀ, ratio read";
  m.inputs = {{"q", "BTHK", "queries"}, {"k", "BTHK", "raw keys"}, {"v", "BTHV", "values"}, initial_state_spec()};
  m.outputs = {{"o", "BTHV", "outputs", false}, {"final_state", "BHKV", "memory Sᵀ after the last token", true}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖"}, initial_state_knob(), entries_knob(), key_set_knob()};
  m.edge_regimes = edge_regimes(false);
  m.parameters = {{"lambda0", 1}, {"stab_eps", 1e-4}, {"feature_map", "elu+1"}, {"read", "ratio"},
                  {"penalty_directions", "norm(k)/sqrt(K)"},
                  {"initial_state", "the initial_state knob: none, zero or random (A_0 = I/lambda0, zeta_0 = 0)"}};
  m.forms = {ref::Form::serial, ref::Form::chunked, ref::Form::streamed};
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    ValueMap in;
    add_qkv(in, rng, s, kn, kn.at("key_norm"));
    add_initial_state(in, s, seed, kn);
    return in;
  };
  // The outputs in scalar S, in `form`, with the chunked form's operands rounded to `operands`
  // (compute and compute_io differ only in these).
  auto outputs = []<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
    const auto verb = form == ref::Form::streamed ? ref::vla::Verb::streamed : ref::vla::Verb::serial;
    const auto h0 = initial_state_in<S>(in);
    const auto r = form == ref::Form::chunked ? ref::vla::vla_chunked_batched<S>(q, k, v, chunk, {}, {}, h0, operands)
                                              : ref::vla::vla_batched<S>(q, k, v, {}, {}, h0, verb);
    return ValueMap{{"o", to_double_tensor(r.o)}, {"final_state", to_double_tensor(r.final_state)}};
  };
  set_compute(m, outputs);
  out.push_back(std::move(m));
}

}  // namespace larc::harness::detail
