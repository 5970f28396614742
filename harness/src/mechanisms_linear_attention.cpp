// Linear attention (reference/linear_attention.h) as gate mechanisms: "la" (identity features,
// o = scale · S^T q, scale K^{-1/2} or the case's: the scale_factor knob) and "la-ratio" (φ = ELU + 1, o = S^T φ(q) / (z^T φ(q) + ε)).
// q, k [B,T,H,K], v [B,T,H,V]; an optional initial memory [B,H,K,V] and, for the ratio read, its
// normaliser z_0 [B,H,K] (the initial_state knob; both float32); outputs o, the final state [B,H,K,V]
// and, for the ratio form, the final normaliser z [B,H,K], both in float32.
#include <cmath>

#include "larc/common/mechanism_constants.h"
#include "larc/reference/gla_backward.h"
#include "larc/reference/linear_attention_backward.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace la = ref::linear_attention;

constexpr double kRatioEps = mechanism_constants::la_ratio_eps;

// The read of "la" (identity features, scale K^{-1/2} or the case's) or "la-ratio" (φ = ELU + 1, ε) in
// scalar S.
template <class S>
la::Options<S> options_of(bool ratio, const ValueMap& in) {
  la::Options<S> opt;
  opt.ratio = ratio;
  if (ratio) {
    opt.feature = la::FeatureMap::elu_plus_one;
    opt.eps = ref::from_double<S>(kRatioEps);
  } else {
    opt.scale = scale_in<S>(in).value_or(S(1) / ref::sqrt_of(ref::from_double<S>(static_cast<double>(in.at("q").dim(3)))));
  }
  return opt;
}

Mechanism linear_attention(bool ratio) {
  Mechanism m;
  m.name = ratio ? "la-ratio" : "la";
  m.description = ratio ? "linear attention, ratio read: S^T φ(q) / (z^T φ(q) + ε), φ = ELU + 1"
                        : "linear attention, plain read: scale · S^T q, identity features";
  m.inputs = {{"q", "BTHK", "queries"}, {"k", "BTHK", "keys"}, {"v", "BTHV", "values"}};
  m.inputs.push_back(initial_state_spec());
  m.inputs.push_back(ratio ? initial_normalizer_spec() : scale_spec());
  m.outputs = {{"o", "BTHV", "outputs", false}, {"final_state", "BHKV", "memory S after the last token", true}};
  if (ratio) m.outputs.push_back({"final_normalizer", "BHK", "normaliser z after the last token", true});
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖"}};
  m.knobs.push_back(initial_state_knob());
  if (!ratio) m.knobs.push_back(scale_knob());
  m.knobs.push_back(entries_knob());
  m.knobs.push_back(key_set_knob());
  m.edge_regimes = edge_regimes(false);
  m.parameters = ratio ? nlohmann::json{{"feature_map", "elu+1"}, {"eps", kRatioEps}}
                       : nlohmann::json{{"feature_map", "identity"}, {"scale", "K^-1/2"}};
  m.parameters["initial_state"] = ratio ? "the initial_state knob: none, zero or random (memory and normaliser)"
                                        : "the initial_state knob: none, zero or random";
  m.forms = ref::forms_of<la::Family>();
  m.generate = [ratio](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    ValueMap in;
    add_qkv(in, rng, s, kn, kn.at("key_norm"));
    add_initial_state(in, s, seed, kn);
    if (ratio) add_initial_normalizer(in, s, seed, kn);
    else add_scale(in, s, kn);
    return in;
  };
  // The outputs of la_batched in scalar S, in `form`, with the chunked form's operands rounded to
  // `operands` (compute and compute_io differ only in these).
  auto outputs = [ratio]<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const la::BatchedResult<S> r =
        la::la_batched<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")), cast_tensor<S>(in.at("v")),
                          options_of<S>(ratio, in), initial_state_in<S>(in),
                          optional_input<S>(in, "initial_normalizer"), form, chunk, operands);
    ValueMap out{{"o", to_double_tensor(r.o)}, {"final_state", to_double_tensor(r.final_state)}};
    if (ratio) out["final_normalizer"] = to_double_tensor(r.final_normalizer);
    return out;
  };
  set_compute(m, outputs);
  if (!ratio) with_sequence_lengths(m);  // the plain read (the ratio read with lengths: not yet)
  return m;
}

// The ratio read's gradients (its gradient twin): dq, dk, dv, dh0 and dz0 of L = Σ⟨do, o⟩ +
// ⟨dht, final_state⟩ (the final normaliser's cotangent zero), per head through linear_attention::backward,
// which la_backward_batched does not expose for the normaliser.
template <class S>
ValueMap ratio_gradients(const ValueMap& in) {
  const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
  const auto h0 = initial_state_in<S>(in), z0 = optional_input<S>(in, "initial_normalizer");
  const ref::BatchedCotangents<S> cot = cotangents_in<S>(in);
  const la::Options<S> opt = options_of<S>(true, in);
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3), V = v.dim(3);
  ref::Tensor<S> dq({B, T, H, K}), dk({B, T, H, K}), dv({B, T, H, V}), dh0({B, H, K, V}), dz0({B, H, K});
  ref::for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const la::Gradients<S> g =
        la::backward(la::head_problem(q, k, v, opt, h0, z0, b, h), {cot.head_d_o(b, h), cot.head_d_final_state(b, h), {}});
    ref::set_head_rows(dq, b, h, g.dq);
    ref::set_head_rows(dk, b, h, g.dk);
    ref::set_head_rows(dv, b, h, g.dv);
    ref::set_head_state(dh0, b, h, g.d_initial_state);
    ref::set_head_vector(dz0, b, h, g.d_initial_normalizer);
  });
  return {{"dq", to_double_tensor(dq)}, {"dk", to_double_tensor(dk)}, {"dv", to_double_tensor(dv)},
          {"dh0", to_double_tensor(dh0)}, {"dz0", to_double_tensor(dz0)}};
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
                                                  cast_tensor<S>(in.at("v")), options_of<S>(false, in),
                                                  cotangents_in<S>(in), initial_state_in<S>(in));
        return ValueMap{{"dq", to_double_tensor(g.dq)}, {"dk", to_double_tensor(g.dk)}, {"dv", to_double_tensor(g.dv)},
                        {"dh0", to_double_tensor(g.d_initial_state)}};
      }));
  // Its io form: the plain read is GLA with every decay 1 (gk = 0), so GLA's chunked backward with rounded
  // operands (gla_backward.h) is the io grade's gradient baseline; its dgk is dropped.
  out.back().compute_io = [](const ValueMap& in, ref::OperandFormat operands, std::int64_t chunk) {
    const ref::Tensor<float> q = cast_tensor<float>(in.at("q"));
    const auto g = ref::gla::gla_backward_batched<float>(
        q, cast_tensor<float>(in.at("k")), cast_tensor<float>(in.at("v")), ref::Tensor<float>(q.shape),
        cotangents_in<float>(in), options_of<float>(false, in).scale, initial_state_in<float>(in), kBackwardCheckpoint, chunk,
        ref::MatmulOperands<float>(operands));
    return ValueMap{{"dq", to_double_tensor(g.dq)}, {"dk", to_double_tensor(g.dk)}, {"dv", to_double_tensor(g.dv)},
                    {"dh0", to_double_tensor(g.d_initial_state)}};
  };
  out.push_back(linear_attention(true));
  out.push_back(gradient_twin(
      out.back(),
      {gradient_spec("dq", "BTHK", "∂L/∂q"), gradient_spec("dk", "BTHK", "∂L/∂k"), gradient_spec("dv", "BTHV", "∂L/∂v"),
       initial_state_gradient_spec(),
       {.name = "dz0", .dims = "BHK", .meaning = "∂L/∂initial_normalizer (float32)", .always_fp32 = true}},
      []<class S>(const ValueMap& in) { return ratio_gradients<S>(in); }));
}

}  // namespace larc::harness::detail
