// Gated linear attention (reference/gla.h) as a gate mechanism, FLA's chunk_gla conventions:
// q, k [B,T,H,K], v [B,T,H,V], gk [B,T,H,K] per-channel log-decays (≤ 0), scale K^{-1/2} (or the
// case's: the scale_factor knob), an optional initial state [B,H,K,V] in float32 (the initial_state
// knob); outputs o [B,T,H,V] and the final state [B,H,K,V] in float32.
#include <optional>

#include "larc/reference/chunk_local_decay_gradient.h"
#include "larc/reference/gla_backward.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

void register_gla_mechanisms(std::vector<Mechanism>& out) {
  Mechanism m;
  m.name = "gla";
  m.description = "gated linear attention (FLA chunk_gla): S ← Diag(e^{gk}) S + k v^T; o = scale · S^T q";
  m.inputs = {{"q", "BTHK", "queries"},
              {"k", "BTHK", "keys"},
              {"v", "BTHV", "values"},
              {.name = "gk", .dims = "BTHK", .meaning = "per-channel log-decays ≤ 0 (−∞: forget the channel)", .max = 0,
               .minus_infinity = true},
              initial_state_spec(),
              scale_spec()};
  m.outputs = {{"o", "BTHV", "outputs", false}, {"final_state", "BHKV", "state after the last token", true}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖"},
             {"decay_max", 1e-3, 20, 1, true, "log-decays gk ~ U(−decay_max, 0)"}, initial_state_knob(), scale_knob(),
             entries_knob(), key_set_knob(), hard_decay_knob(), zero_decay_knob()};
  m.edge_regimes = edge_regimes(true);
  m.parameters = {{"scale", "K^-1/2"}, {"initial_state", "the initial_state knob: none, zero or random"}, {"fla_function", "chunk_gla"}};
  m.forms = ref::forms_of<ref::gla::Family>();
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    ValueMap in;
    add_qkv(in, rng, s, kn, kn.at("key_norm"));
    in["gk"] = log_decays_in(rng, {s.B, s.T, s.H, s.K}, kn.at("decay_max"), seed, kn);
    add_initial_state(in, s, seed, kn);
    add_scale(in, s, kn);
    return in;
  };
  // The outputs of gla_batched in scalar S, in `form`, with the chunked form's operands rounded to
  // `operands` (compute and compute_io differ only in these).
  auto outputs = []<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const auto r = ref::gla::gla_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")), cast_tensor<S>(in.at("v")),
                                            cast_tensor<S>(in.at("gk")), scale_in<S>(in), initial_state_in<S>(in), form, chunk, operands);
    return ValueMap{{"o", to_double_tensor(r.o)}, {"final_state", to_double_tensor(r.final_state)}};
  };
  set_compute(m, outputs);
  with_sequence_lengths(m);
  out.push_back(std::move(m));
  // The gradient twin (docs/gate.md "Gradient cases"), through the reference's backward verb.
  // The gradients in scalar S: the backward verb's; for a chunk size, with dgk in the chunk-local identity
  // form (the fp32 chunked baseline) or, with an operand format, the chunked backward with every product's
  // operands rounded to it (the io baseline).
  const auto gradients = []<class S>(const ValueMap& in, std::optional<std::int64_t> chunk, ref::OperandFormat operands) {
    const auto q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v")),
               gk = cast_tensor<S>(in.at("gk"));
    const auto cot = cotangents_in<S>(in);
    const bool io = chunk && operands != ref::OperandFormat::none;
    auto g = ref::gla::gla_backward_batched<S>(q, k, v, gk, cot, scale_in<S>(in), initial_state_in<S>(in), kBackwardCheckpoint,
                                               io ? chunk : std::nullopt, ref::MatmulOperands<S>(operands));
    if (chunk && !io) {
      const auto f = ref::gla::gla_batched<S>(q, k, v, gk, scale_in<S>(in), initial_state_in<S>(in));
      g.dgk = ref::chunk_local_channel_decay_gradient(q, g.dq, k, g.dk, g.dgk, f.final_state, cot, *chunk);
    }
    return ValueMap{{"dq", to_double_tensor(g.dq)}, {"dk", to_double_tensor(g.dk)}, {"dv", to_double_tensor(g.dv)},
                    {"dgk", to_double_tensor(g.dgk)}, {"dh0", to_double_tensor(g.d_initial_state)}};
  };
  out.push_back(gradient_twin_with_io_form(
      out.back(),
      {gradient_spec("dq", "BTHK", "∂L/∂q"), gradient_spec("dk", "BTHK", "∂L/∂k"), gradient_spec("dv", "BTHV", "∂L/∂v"),
       gradient_spec("dgk", "BTHK", "∂L/∂gk (per-channel log-decays)"), initial_state_gradient_spec()},
      gradients));
}

}  // namespace larc::harness::detail
