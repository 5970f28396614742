// GDN, DeltaNet and KLA (reference/delta_rule.h) as gate mechanisms, with FLA's
// chunk_gated_delta_rule conventions: q, k [B,T,H,K], v [B,T,HV,V], g log-decays [B,T,HV], beta
// [B,T,HV] (KLA: eta [B,T,HV], β = η/(‖k‖² + ε)), scale K^{-1/2} (or the case's: the scale_factor
// knob), an optional initial state [B,HV,K,V] in float32 (the initial_state knob), outputs o
// [B,T,HV,V] and the final state [B,HV,K,V] in float32; and their gradient twins (docs/gate.md
// "Gradient cases"). HV = H unless the shape groups the value heads (FLA's GVA, Shape::HV): value
// head j reads q and k of head j / (HV/H), which the reference gets as q and k repeated to HV heads
// (and dq, dk as the sums over each group). GDN and DeltaNet also come with FLA's in-kernel front end
// (use_qk_l2norm_in_kernel=True): raw q and k of any norm, l2-normalised per token and head before the
// recurrence (gdn-qk-l2norm, deltanet-qk-l2norm and their twins).
#include <cmath>
#include <optional>

#include "larc/common/mechanism_constants.h"
#include "larc/reference/delta_rule_backward_batched.h"
#include "larc/reference/delta_rule_fla_front_ends.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace dr = ref::delta_rule;

constexpr double kKlaEps = mechanism_constants::kla_eps;
// FLA's l2norm of raw q and k: x̂_t = x_t / √(‖x_t‖² + ε) (docs/gradients.md "Front ends").
constexpr double kQkL2NormEps = mechanism_constants::qk_l2norm_eps;

// What the recurrence reads as q and k: the case's own (pre-normalised, as FLA's default expects), or raw
// ones l2-normalised per token and head over K inside the kernel (FLA's use_qk_l2norm_in_kernel=True).
enum class QkFrontEnd { given, l2norm_in_kernel };

const std::vector<TensorSpec> kOutputs = {
    {"o", "BTWV", "outputs o_t = scale · S_t^T q_t", false},
    {"final_state", "BWKV", "state after the last token", true},
};

Knob collinearity_knob() {
  return {"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"};
}
Knob decay_knob() { return {"decay_max", 1e-3, 20, 1, true, "log-decays g ~ U(−decay_max, 0)"}; }

template <class S>
ValueMap outputs_of(const dr::BatchedResult<S>& r) {
  return {{"o", to_double_tensor(r.o)}, {"final_state", to_double_tensor(r.final_state)}};
}

// Per token and value head.
ref::Tensor<double> gates_in(Rng& rng, const Shape& s, double lo, double hi) {
  return uniform_tensor(rng, {s.B, s.T, s.value_heads()}, std::min(lo, hi), std::max(lo, hi));
}

// β ∈ [0, 2]: above 1 the transition I − β k kᵀ has a negative eigenvalue (FLA's allow_neg_eigval).
TensorSpec beta_spec() {
  return {.name = "beta", .dims = "BTW", .meaning = "delta-rule steps β ∈ [0, 2]", .min = 0, .max = 2};
}
const KnobValues kBetaUpToTwo{{"beta_lo", 1}, {"beta_hi", 2}};
std::vector<Knob> beta_knobs() {
  return {{"beta_lo", 0, 2, 0.05, false, "β ~ U(beta_lo, beta_hi)"}, {"beta_hi", 0, 2, 1, false, "β ~ U(beta_lo, beta_hi)"}};
}
TensorSpec log_decay_spec() {
  return {.name = "g", .dims = "BTW", .meaning = "log-decays g ≤ 0 (−∞: forget everything)", .max = 0,
          .minus_infinity = true};
}

// q, k over the query/key heads; v and everything per value head over the value heads (FLA's GVA).
std::vector<TensorSpec> qkv_specs(const char* keys) {
  return {{"q", "BTHK", "queries"}, {"k", "BTHK", keys}, {"v", "BTWV", "values"}};
}
std::vector<TensorSpec> optional_specs() { return {with_head_axis(initial_state_spec(), 'W'), scale_spec()}; }

// x [B,T,H,K] with the T×K rows of each (sequence b, head h) replaced by f(rows, b, h).
template <class S, class F>
ref::Tensor<S> per_head_rows(const ref::Tensor<S>& x, F f) {
  ref::Tensor<S> r(x.shape);
  for (std::int64_t b = 0; b < x.dim(0); ++b)
    for (std::int64_t h = 0; h < x.dim(2); ++h) ref::set_head_rows(r, b, h, f(ref::head_rows(x, b, h), b, h));
  return r;
}

// x̂ [B,T,H,K] of raw x, each token of each head normalised over K in scalar S.
template <class S>
ref::Tensor<S> l2_normalized_heads(const ref::Tensor<S>& x) {
  return per_head_rows(x, [](const ref::Mat<S>& rows, std::int64_t, std::int64_t) {
    return dr::l2_normalized_rows(rows, ref::from_double<S>(kQkL2NormEps));
  });
}

// ∂L/∂x of raw x [B,T,H,K] from ∂L/∂x̂ (the chain rule of l2_normalized_heads, per token and head).
template <class S>
ref::Tensor<S> l2_normalized_heads_backward(const ref::Tensor<S>& x, const ref::Tensor<S>& d_normalized) {
  return per_head_rows(x, [&d_normalized](const ref::Mat<S>& rows, std::int64_t b, std::int64_t h) {
    return dr::l2_normalized_rows_backward(rows, ref::head_rows(d_normalized, b, h), ref::from_double<S>(kQkL2NormEps));
  });
}

// The case's q or k as the recurrence reads it, in scalar S over the query/key heads: as given, or
// l2-normalised; under the io grade's bf16/fp16 operands the normalised tensor is stored in that dtype
// (the input dtype), as FLA's l2norm kernel writes it (fp32 inputs keep it in fp32: TF32 rounds only
// the products' operands, which the chunked form does).
template <class S>
ref::Tensor<S> read_qk(const ValueMap& in, const char* name, QkFrontEnd front_end, ref::OperandFormat operands) {
  ref::Tensor<S> x = cast_tensor<S>(in.at(name));
  if (front_end == QkFrontEnd::given) return x;
  x = l2_normalized_heads(x);
  if (operands == ref::OperandFormat::bf16 || operands == ref::OperandFormat::fp16 ||
      operands == ref::OperandFormat::fp16_ieee) {
    const ref::MatmulOperands<S> stored(operands);
    x = per_head_rows(x, [&stored](const ref::Mat<S>& rows, std::int64_t, std::int64_t) { return stored.operand(rows); });
  }
  return x;
}

// The queries and keys the recurrence reads in scalar S, repeated to the case's value heads.
template <class S>
std::pair<ref::Tensor<S>, ref::Tensor<S>> grouped_qk(const ValueMap& in, QkFrontEnd front_end = QkFrontEnd::given,
                                                     ref::OperandFormat operands = ref::OperandFormat::none) {
  const std::int64_t G = head_group(in);
  return {repeat_heads(read_qk<S>(in, "q", front_end, operands), G), repeat_heads(read_qk<S>(in, "k", front_end, operands), G)};
}

// A delta rule with the l2norm front end: the mechanism `m` (its compute already reading q and k
// through it) renamed <name>-qk-l2norm, with raw queries and keys of spread norms (the knobs qk_norm_lo
// and qk_norm_hi) and an edge regime where every norm is near √ε, where ε matters.
void with_l2norm_in_kernel(Mechanism& m) {
  m.name += "-qk-l2norm";
  m.description += "; q and k raw, normalised in the kernel: x / √(‖x‖² + ε) per token and head (ε: qk_l2norm_eps)";
  for (TensorSpec& t : m.inputs)
    if (t.name == "q" || t.name == "k")
      t.meaning = std::string(t.name == "q" ? "queries" : "keys") + " (any norm: l2-normalised in the kernel)";
  for (const Knob& k : raw_qk_norm_knobs()) m.knobs.push_back(k);
  m.edge_regimes.push_back({{kQkNormLoKnob, 1e-4}, {kQkNormHiKnob, 1e-2}});
  m.parameters["use_qk_l2norm_in_kernel"] = true;
  m.parameters["qk_l2norm_eps"] = kQkL2NormEps;
  m.generate = [directions = m.generate](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    ValueMap in = directions(s, seed, kn);
    spread_qk_norms(in, seed, kn);
    return in;
  };
}

Mechanism gdn(QkFrontEnd front_end) {
  Mechanism m;
  m.name = "gdn";
  m.description = "Gated DeltaNet (FLA chunk_gated_delta_rule): S ← e^g S; S ← S + β k (v − S^T k)^T; o = S^T (scale q)";
  m.inputs = qkv_specs("keys (unit norm)");
  for (const TensorSpec& t : {log_decay_spec(), beta_spec()}) m.inputs.push_back(t);
  for (const TensorSpec& t : optional_specs()) m.inputs.push_back(t);
  m.outputs = kOutputs;
  m.knobs = {collinearity_knob(), decay_knob()};
  for (const Knob& k : beta_knobs()) m.knobs.push_back(k);
  for (const Knob& k : {initial_state_knob(), scale_knob(), entries_knob(), key_set_knob(), hard_decay_knob(), zero_decay_knob()})
    m.knobs.push_back(k);
  m.edge_regimes = edge_regimes(true, kBetaUpToTwo);
  m.parameters = {{"scale", "K^-1/2"}, {"initial_state", "the initial_state knob: none, zero or random"}, {"fla_function", "chunk_gated_delta_rule"}};
  m.forms = ref::forms_of<dr::Family>();
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    ValueMap in;
    add_qkv(in, rng, s, kn, 1.0);
    in["g"] = log_decays_in(rng, {s.B, s.T, s.value_heads()}, kn.at("decay_max"), seed, kn);
    in["beta"] = gates_in(rng, s, kn.at("beta_lo"), kn.at("beta_hi"));
    add_initial_state(in, s, seed, kn);
    add_scale(in, s, kn);
    return in;
  };
  set_compute(m, [front_end]<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const auto [q, k] = grouped_qk<S>(in, front_end, operands);
    return outputs_of(dr::gdn_batched<S>(q, k, cast_tensor<S>(in.at("v")),
                                         cast_tensor<S>(in.at("g")), cast_tensor<S>(in.at("beta")), scale_in<S>(in),
                                         initial_state_in<S>(in), form, chunk, operands));
  });
  if (front_end == QkFrontEnd::l2norm_in_kernel) with_l2norm_in_kernel(m);
  with_sequence_lengths(m);
  return m;
}

Mechanism deltanet(QkFrontEnd front_end) {
  Mechanism m;
  m.name = "deltanet";
  m.description = "DeltaNet: S ← S + β k (v − S^T k)^T; o = S^T (scale q)";
  m.inputs = qkv_specs("keys (unit norm)");
  m.inputs.push_back(beta_spec());
  for (const TensorSpec& t : optional_specs()) m.inputs.push_back(t);
  m.outputs = kOutputs;
  m.knobs = {collinearity_knob()};
  for (const Knob& k : beta_knobs()) m.knobs.push_back(k);
  for (const Knob& k : {initial_state_knob(), scale_knob(), entries_knob(), key_set_knob()}) m.knobs.push_back(k);
  m.edge_regimes = edge_regimes(false, kBetaUpToTwo);
  m.parameters = {{"scale", "K^-1/2"}, {"initial_state", "the initial_state knob: none, zero or random"}, {"fla_function", "chunk_delta_rule"}};
  m.forms = ref::forms_of<dr::Family>();
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    ValueMap in;
    add_qkv(in, rng, s, kn, 1.0);
    in["beta"] = gates_in(rng, s, kn.at("beta_lo"), kn.at("beta_hi"));
    add_initial_state(in, s, seed, kn);
    add_scale(in, s, kn);
    return in;
  };
  set_compute(m, [front_end]<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const auto [q, k] = grouped_qk<S>(in, front_end, operands);
    return outputs_of(dr::deltanet_batched<S>(q, k, cast_tensor<S>(in.at("v")), cast_tensor<S>(in.at("beta")), scale_in<S>(in),
                                              initial_state_in<S>(in), form, chunk, operands));
  });
  if (front_end == QkFrontEnd::l2norm_in_kernel) with_l2norm_in_kernel(m);
  with_sequence_lengths(m);
  return m;
}

Mechanism kla() {
  Mechanism m;
  m.name = "kla";
  m.description = "Kaczmarz linear attention: GDN with β = η / (‖k‖² + ε), unnormalised keys (SPEC §3)";
  m.inputs = qkv_specs("keys (any norm)");
  m.inputs.push_back(log_decay_spec());
  m.inputs.push_back({.name = "eta", .dims = "BTW", .meaning = "relaxation gates η ∈ (0, 1]", .min = 0, .max = 1});
  for (const TensorSpec& t : optional_specs()) m.inputs.push_back(t);
  m.outputs = kOutputs;
  m.knobs = {collinearity_knob(), decay_knob(),
             {"key_norm", 1e-4, 1e3, 1, true, "‖k_t‖"},
             {"eta_lo", 1e-3, 1, 0.05, false, "η ~ U(eta_lo, eta_hi)"},
             {"eta_hi", 1e-3, 1, 1, false, "η ~ U(eta_lo, eta_hi)"}, initial_state_knob(), scale_knob(),
             entries_knob(), key_set_knob(), hard_decay_knob(), zero_decay_knob()};
  m.edge_regimes = edge_regimes(true);
  m.parameters = {{"scale", "K^-1/2"}, {"eps", kKlaEps}, {"initial_state", "the initial_state knob: none, zero or random"}};
  m.forms = ref::forms_of<dr::Family>();
  m.generate = [](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    ValueMap in;
    add_qkv(in, rng, s, kn, kn.at("key_norm"));
    in["g"] = log_decays_in(rng, {s.B, s.T, s.value_heads()}, kn.at("decay_max"), seed, kn);
    in["eta"] = gates_in(rng, s, kn.at("eta_lo"), kn.at("eta_hi"));
    add_initial_state(in, s, seed, kn);
    add_scale(in, s, kn);
    return in;
  };
  set_compute(m, []<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const auto [q, k] = grouped_qk<S>(in);
    return outputs_of(dr::kla_batched<S>(q, k, cast_tensor<S>(in.at("v")),
                                         cast_tensor<S>(in.at("g")), cast_tensor<S>(in.at("eta")), ref::from_double<S>(kKlaEps),
                                         scale_in<S>(in), initial_state_in<S>(in), form, chunk, operands));
  });
  with_sequence_lengths(m);
  return m;
}

// The delta rules' gradients: dq, dk, dv, the decay's (when it has one), the step's, dh0.
std::vector<TensorSpec> delta_rule_gradients(bool decay, const std::string& step) {
  std::vector<TensorSpec> g = {gradient_spec("dq", "BTHK", "∂L/∂q"), gradient_spec("dk", "BTHK", "∂L/∂k"),
                               gradient_spec("dv", "BTWV", "∂L/∂v")};
  if (decay) g.push_back(gradient_spec("dg", "BTW", "∂L/∂g (log-decays)"));
  g.push_back(gradient_spec("d" + step, "BTW", "∂L/∂" + step));
  g.push_back(with_head_axis(initial_state_gradient_spec(), 'W'));
  return g;
}

// How a baseline's gradients are formed (dr::BackwardForm), its derived gates under rounding draw `draw`
// (0: as computed): the serial adjoint, checkpointed every kBackwardCheckpoint tokens (the oracle and the
// serial baseline); for a chunk size, the chunked (UT/WY)
// backward — in S for the chunked form's fp32 baseline (dβ and dg as chunk kernels form them, and the
// UT/WY form's own rounding on dh0), with every matrix-product operand rounded to an operand format for
// the io grade's baseline.
template <class S>
dr::BackwardForm<S> backward_form(std::optional<std::int64_t> chunk, ref::OperandFormat operands, std::uint64_t draw) {
  dr::BackwardForm<S> form;
  form.checkpoint = kBackwardCheckpoint;
  form.rounding_draw = draw;
  if (chunk) {
    form.chunk = *chunk;
    form.ops = ref::MatmulOperands<S>(operands);
  }
  return form;
}

// ∂L/∂q or ∂L/∂k of the case's own input `name` from the recurrence's (over the value heads): summed
// over each group of value heads that read one query/key head, then, with the l2norm front end, taken
// through the normalisation of the raw input.
template <class S>
ref::Tensor<S> input_gradient(const ref::Tensor<S>& d_read, const ValueMap& in, const char* name, QkFrontEnd front_end) {
  const ref::Tensor<S> d = sum_head_groups(d_read, head_group(in));
  return front_end == QkFrontEnd::given ? d : l2_normalized_heads_backward(cast_tensor<S>(in.at(name)), d);
}

// The gradients by name, of the case's inputs.
template <class S>
ValueMap gradient_values(const dr::BatchedGradients<S>& g, const std::string& step, const ValueMap& in, QkFrontEnd front_end) {
  ValueMap out{{"dq", to_double_tensor(input_gradient(g.dq, in, "q", front_end))},
               {"dk", to_double_tensor(input_gradient(g.dk, in, "k", front_end))}, {"dv", to_double_tensor(g.dv)},
               {"d" + step, to_double_tensor(g.dbeta)}, {"dh0", to_double_tensor(g.d_initial_state)}};
  if (!g.dg.shape.empty()) out.emplace("dg", to_double_tensor(g.dg));  // DeltaNet has none (T = 0 has an empty one)
  return out;
}

// The gradients in scalar S of GDN and DeltaNet with either front end in the form backward_form names.
auto gdn_gradients(QkFrontEnd front_end) {
  return [front_end]<class S>(const ValueMap& in, std::optional<std::int64_t> chunk, ref::OperandFormat operands,
                              std::uint64_t draw = 0) {
    const auto [q, k] = grouped_qk<S>(in, front_end, operands);
    const auto v = cast_tensor<S>(in.at("v")), g = cast_tensor<S>(in.at("g")), beta = cast_tensor<S>(in.at("beta"));
    const auto cot = cotangents_in<S>(in);
    return gradient_values(dr::gdn_backward_batched<S>(q, k, v, g, beta, cot, scale_in<S>(in), initial_state_in<S>(in),
                                                       backward_form<S>(chunk, operands, draw)),
                           "beta", in, front_end);
  };
}

auto deltanet_gradients(QkFrontEnd front_end) {
  return [front_end]<class S>(const ValueMap& in, std::optional<std::int64_t> chunk, ref::OperandFormat operands) {
    const auto [q, k] = grouped_qk<S>(in, front_end, operands);
    return gradient_values(dr::deltanet_backward_batched<S>(q, k, cast_tensor<S>(in.at("v")), cast_tensor<S>(in.at("beta")),
                                                            cotangents_in<S>(in), scale_in<S>(in), initial_state_in<S>(in),
                                                            backward_form<S>(chunk, operands, 0)),
                           "beta", in, front_end);
  };
}
}  // namespace

void register_delta_rule_mechanisms(std::vector<Mechanism>& out) {
  const Mechanism gdn_m = gdn(QkFrontEnd::given), deltanet_m = deltanet(QkFrontEnd::given), kla_m = kla();
  out.push_back(gdn_m);
  out.push_back(deltanet_m);
  out.push_back(kla_m);
  // The gradient twins (docs/gate.md "Gradient cases"), through the reference's backward verb.
  // GDN's and KLA's baselines also under rounding draws of their derived gates (α; KLA's β); DeltaNet derives none.
  out.push_back(
      gradient_twin_with_rounding_draws(gdn_m, delta_rule_gradients(true, "beta"), gdn_gradients(QkFrontEnd::given)));
  out.push_back(gradient_twin_with_io_form(deltanet_m, delta_rule_gradients(false, "beta"),
                                                deltanet_gradients(QkFrontEnd::given)));
  // KLA's gradients in scalar S, the chunked form's as for GDN.
  const auto kla_gradients = []<class S>(const ValueMap& in, std::optional<std::int64_t> chunk, ref::OperandFormat operands,
                                        std::uint64_t draw = 0) {
    const auto [q, k] = grouped_qk<S>(in);
    const auto v = cast_tensor<S>(in.at("v")), g = cast_tensor<S>(in.at("g")), eta = cast_tensor<S>(in.at("eta"));
    const auto cot = cotangents_in<S>(in);
    const S eps = ref::from_double<S>(kKlaEps);
    return gradient_values(dr::kla_backward_batched<S>(q, k, v, g, eta, eps, cot, scale_in<S>(in), initial_state_in<S>(in),
                                                       backward_form<S>(chunk, operands, draw)),
                           "eta", in, QkFrontEnd::given);
  };
  out.push_back(gradient_twin_with_rounding_draws(kla_m, delta_rule_gradients(true, "eta"), kla_gradients));
  // FLA's use_qk_l2norm_in_kernel=True: GDN and DeltaNet on raw q and k, and their twins (dq, dk of the
  // raw inputs through the normalisation's chain rule).
  const Mechanism gdn_l2 = gdn(QkFrontEnd::l2norm_in_kernel), deltanet_l2 = deltanet(QkFrontEnd::l2norm_in_kernel);
  out.push_back(gdn_l2);
  out.push_back(deltanet_l2);
  out.push_back(gradient_twin_with_rounding_draws(gdn_l2, delta_rule_gradients(true, "beta"),
                                                  gdn_gradients(QkFrontEnd::l2norm_in_kernel)));
  out.push_back(gradient_twin_with_io_form(deltanet_l2, delta_rule_gradients(false, "beta"),
                                                deltanet_gradients(QkFrontEnd::l2norm_in_kernel)));
}

}  // namespace larc::harness::detail
