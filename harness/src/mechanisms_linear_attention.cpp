// Linear attention (reference/linear_attention.h) as gate mechanisms: "la" (identity features,
// o = scale · S^T q, scale K^{-1/2}) and "la-ratio" (φ = ELU + 1, o = S^T φ(q) / (z^T φ(q) + ε)).
// q, k [B,T,H,K], v [B,T,H,V]; the plain read takes an optional initial memory [B,H,K,V] (the
// initial_state knob), the ratio read starts from zero; outputs o, the final state [B,H,K,V] and, for
// the ratio form, the final normaliser z [B,H,K], both in float32.
#include <cmath>

#include "larc/reference/linear_attention_backward.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace la = ref::linear_attention;

constexpr double kRatioEps = 1e-6;

// The read of "la" (identity features, scale K^{-1/2}) or "la-ratio" (φ = ELU + 1, ε) in scalar S.
template <class S>
la::Options<S> options_of(bool ratio, std::int64_t K) {
  la::Options<S> opt;
  opt.ratio = ratio;
  if (ratio) {
    opt.feature = la::FeatureMap::elu_plus_one;
    opt.eps = ref::from_double<S>(kRatioEps);
  } else {
    opt.scale = S(1) / ref::sqrt_of(ref::from_double<S>(static_cast<double>(K)));
  }
  return opt;
}

Mechanism linear_attention(bool ratio) {
  Mechanism m;
  m.name = ratio ? "la-ratio" : "la";
  m.description = ratio ? "linear attention, ratio read: S^T φ(q) / (z^T φ(q) + ε), φ = ELU + 1"
                        : "linear attention, plain read: scale · S^T q, identity features";
  m.inputs = {{"q", "BTHK", "queries"}, {"k", "BTHK", "keys"}, {"v", "BTHV", "values"}};
  // The plain read's memory may start anywhere; the ratio read's would need its normaliser's start too.
  if (!ratio) m.inputs.push_back(initial_state_spec());
  m.outputs = {{"o", "BTHV", "outputs", false}, {"final_state", "BHKV", "memory S after the last token", true}};
  if (ratio) m.outputs.push_back({"final_normalizer", "BHK", "normaliser z after the last token", true});
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖"}};
  if (!ratio) m.knobs.push_back(initial_state_knob());
  m.knobs.push_back(entries_knob());
  m.knobs.push_back(key_set_knob());
  m.edge_regimes = edge_regimes(false);
  m.parameters = ratio ? nlohmann::json{{"feature_map", "elu+1"}, {"eps", kRatioEps}}
                       : nlohmann::json{{"feature_map", "identity"}, {"scale", "K^-1/2"}};
  m.forms = {ref::Form::serial, ref::Form::chunked, ref::Form::materialized};
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    ValueMap in;
    add_qkv(in, rng, s, kn, kn.at("key_norm"));
    add_initial_state(in, s, seed, kn);
    return in;
  };
  // The outputs of la_batched in scalar S, in `form`, with the chunked form's operands rounded to
  // `operands` (compute and compute_io differ only in these).
  auto outputs = [ratio]<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const la::BatchedResult<S> r =
        la::la_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")), cast_tensor<S>(in.at("v")),
                          options_of<S>(ratio, in.at("q").dim(3)), initial_state_in<S>(in), {}, form, chunk, operands);
    ValueMap out{{"o", to_double_tensor(r.o)}, {"final_state", to_double_tensor(r.final_state)}};
    if (ratio) out["final_normalizer"] = to_double_tensor(r.final_normalizer);
    return out;
  };
  set_compute(m, outputs);
  return m;
}
}  // namespace

void register_linear_attention_mechanisms(std::vector<Mechanism>& out) {
  out.push_back(linear_attention(false));
  // The plain read's gradient twin (docs/gate.md "Gradient cases"), through the reference's backward verb.
  out.push_back(gradient_twin(
      out.back(),
      {gradient_spec("dq", "BTHK", "∂L/∂q"), gradient_spec("dk", "BTHK", "∂L/∂k"), gradient_spec("dv", "BTHV", "∂L/∂v"),
       initial_state_gradient_spec()},
      []<class S>(const ValueMap& in) {
        const auto g = la::la_backward_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")),
                                                  cast_tensor<S>(in.at("v")), options_of<S>(false, in.at("q").dim(3)),
                                                  cotangents_in<S>(in), initial_state_in<S>(in));
        return ValueMap{{"dq", to_double_tensor(g.dq)}, {"dk", to_double_tensor(g.dk)}, {"dv", to_double_tensor(g.dv)},
                        {"dh0", to_double_tensor(g.d_initial_state)}};
      }));
  out.push_back(linear_attention(true));
}

}  // namespace larc::harness::detail
