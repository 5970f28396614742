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
#include "larc/reference/log_linear_backward.h"
#include "larc/reference/log_linear_batched.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace ll = ref::log_linear;

// The gradient twin's gradients of L = Σ⟨do, o⟩ per head through log_linear_backward.h: dq and dk (summed
// over the heads when one query/key head is shared), dv, dg = dα·α (α = e^g), dlevel_scales and, for the
// GDN variant, dbeta.
template <class S>
ValueMap log_linear_gradients(const ValueMap& in, bool gdn) {
  const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
  const ref::Tensor<S> g = cast_tensor<S>(in.at("g")), lambda = cast_tensor<S>(in.at("level_scales"));
  const ref::Tensor<S> d_o = cast_tensor<S>(in.at("do"));
  std::optional<ref::Tensor<S>> beta;
  if (gdn) beta = cast_tensor<S>(in.at("beta"));
  const std::int64_t B = v.dim(0), H = v.dim(2), G = q.dim(2);
  ref::Tensor<S> dq(q.shape), dk(k.shape), dv(v.shape), dg(g.shape), dlambda(lambda.shape), dbeta(g.shape);
  ref::for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const ll::Problem<S> p = ll::head_problem<S>(q, k, v, g, lambda, beta, S(1), b, h);
    const ll::Gradients<S> r = ll::backward(p, ref::head_rows(d_o, b, h));
    const std::int64_t qk_head = G == 1 ? 0 : h;
    ref::set_head_rows(dq, b, qk_head, ref::Mat<S>(ref::head_rows(dq, b, qk_head) + r.dq));
    ref::set_head_rows(dk, b, qk_head, ref::Mat<S>(ref::head_rows(dk, b, qk_head) + r.dk));
    ref::set_head_rows(dv, b, h, r.dv);
    ref::set_head_rows(dlambda, b, h, r.dlambda);
    ref::set_head_gate(dg, b, h, ref::Vec<S>(r.dalpha.cwiseProduct(p.alpha)));
    if (gdn) ref::set_head_gate(dbeta, b, h, r.dbeta);
  });
  ValueMap out{{"dq", to_double_tensor(dq)}, {"dk", to_double_tensor(dk)}, {"dv", to_double_tensor(dv)},
               {"dg", to_double_tensor(dg)}, {"dlevel_scales", to_double_tensor(dlambda)}};
  if (gdn) out.emplace("dbeta", to_double_tensor(dbeta));
  return out;
}

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
  m.forms = ref::forms_of<ll::Family>();
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
  for (const bool gdn : {false, true}) {
    out.push_back(log_linear(gdn ? ll::Variant::gdn : ll::Variant::mamba2));
    // The gradient twin (docs/gate.md "Gradient cases"), through the reference's backward verb.
    const std::string qk = gdn ? "BTHK" : "BT1K";
    std::vector<TensorSpec> gradients = {gradient_spec("dq", qk, "∂L/∂q"), gradient_spec("dk", qk, "∂L/∂k"),
                                         gradient_spec("dv", "BTHV", "∂L/∂v"), gradient_spec("dg", "BTH", "∂L/∂g (log-decays)"),
                                         gradient_spec("dlevel_scales", "BTHL", "∂L/∂level_scales")};
    if (gdn) gradients.push_back(gradient_spec("dbeta", "BTH", "∂L/∂beta"));
    out.push_back(gradient_twin(out.back(), std::move(gradients),
                                [gdn]<class S>(const ValueMap& in) { return log_linear_gradients<S>(in, gdn); }));
  }
}

}  // namespace larc::harness::detail
