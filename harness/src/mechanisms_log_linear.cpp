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
//
// Continuing a sequence (the initial_state knob; log_linear.h, "Continuing a sequence"): the state is
// the offset t0 and one state per bucket of t0, so a case with one has the inputs
//   start_offset          [1]            t0, the tokens before the case's first (float32, a whole number)
//   initial_level_states  [B,H,L,K,V]    slot ℓ: the carried state Z^{(ℓ)} for each set bit ℓ − 1 of t0; the
//                                        other slots are not read (zero here) (float32)
// and L = level_count(t0 + T) in level_scales and initial_level_states alike (Shape::L). Knob 1: t0 and
// zero states; 2: t0 and the states after t0 earlier tokens drawn as the case's own inputs are (from a
// stream of their own, with its knobs), run through the reference's serial form in double. t0 ~ U{1, …, 64}
// either way. The gradient twins add dinitial_level_states (an optional output: cases without a start
// have none).
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>

#include "larc/reference/log_linear_backward.h"
#include "larc/reference/log_linear_batched.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace ll = ref::log_linear;

constexpr std::uint64_t kStartStream = 0x11a;          // mix_seed stream of t0
constexpr std::uint64_t kEarlierTokensStream = 0x11b;  // and the seed of the earlier tokens
constexpr std::int64_t kMaxStartOffset = 64;           // t0 ~ U{1, …, 64}
const char* const kStartOffset = "start_offset";
const char* const kInitialLevelStates = "initial_level_states";

// The case's start in scalar S (none without one): both inputs or neither; t0 a whole number ≥ 0.
template <class S>
std::optional<ll::BatchedStart<S>> start_in(const ValueMap& in) {
  const auto offset = in.find(kStartOffset);
  const auto states = in.find(kInitialLevelStates);
  if (offset == in.end() && states == in.end()) return std::nullopt;
  if (offset == in.end() || states == in.end())
    throw std::invalid_argument(std::string("log-linear: ") + (offset == in.end() ? kStartOffset : kInitialLevelStates) +
                                " is missing: a start needs both " + kStartOffset + " and " + kInitialLevelStates);
  const double t0 = offset->second.data.at(0);
  if (!(t0 >= 0) || t0 != std::floor(t0) || t0 >= 0x1p52)
    throw std::invalid_argument(std::string("log-linear: ") + kStartOffset + " must be a whole number >= 0, got " +
                                std::to_string(t0));
  return ll::BatchedStart<S>{static_cast<std::uint64_t>(t0), cast_tensor<S>(states->second)};
}

// The gradient twin's gradients of L = Σ⟨do, o⟩ per head through log_linear_backward.h (its backward verb, or
// with `materialized` the adjoint of the O(T²) definition): dq and dk (summed over the heads when one
// query/key head is shared), dv, dg = dα·α (α = e^g), dlevel_scales and, for the GDN variant, dbeta.
template <class S>
ValueMap log_linear_gradients(const ValueMap& in, bool gdn, bool materialized) {
  const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
  const ref::Tensor<S> g = cast_tensor<S>(in.at("g")), lambda = cast_tensor<S>(in.at("level_scales"));
  const ref::Tensor<S> d_o = cast_tensor<S>(in.at("do"));
  std::optional<ref::Tensor<S>> beta;
  if (gdn) beta = cast_tensor<S>(in.at("beta"));
  const std::optional<ll::BatchedStart<S>> start = start_in<S>(in);
  const std::int64_t B = v.dim(0), H = v.dim(2), G = q.dim(2);
  ref::Tensor<S> dq(q.shape), dk(k.shape), dv(v.shape), dg(g.shape), dlambda(lambda.shape), dbeta(g.shape);
  ref::Tensor<S> dstates(start ? start->level_states.shape : std::vector<std::int64_t>{});
  ref::for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const ll::Problem<S> p = ll::head_problem<S>(q, k, v, g, lambda, beta, S(1), b, h, start);
    const ll::Gradients<S> r =
        materialized ? ll::materialized_backward(p, ref::head_rows(d_o, b, h)) : ll::backward(p, ref::head_rows(d_o, b, h));
    const std::int64_t qk_head = G == 1 ? 0 : h;
    ref::set_head_rows(dq, b, qk_head, ref::Mat<S>(ref::head_rows(dq, b, qk_head) + r.dq));
    ref::set_head_rows(dk, b, qk_head, ref::Mat<S>(ref::head_rows(dk, b, qk_head) + r.dk));
    ref::set_head_rows(dv, b, h, r.dv);
    ref::set_head_rows(dlambda, b, h, r.dlambda);
    ref::set_head_gate(dg, b, h, ref::Vec<S>(r.dalpha.cwiseProduct(p.alpha)));
    if (gdn) ref::set_head_gate(dbeta, b, h, r.dbeta);
    if (start) ll::set_head_level_states(dstates, b, h, start->offset, r.d_start_states);
  });
  ValueMap out{{"dq", to_double_tensor(dq)}, {"dk", to_double_tensor(dk)}, {"dv", to_double_tensor(dv)},
               {"dg", to_double_tensor(dg)}, {"dlevel_scales", to_double_tensor(dlambda)}};
  if (gdn) out.emplace("dbeta", to_double_tensor(dbeta));
  if (start) out.emplace("dinitial_level_states", to_double_tensor(dstates));
  return out;
}

// The case's own inputs for shape s with `levels` level-scale columns (no start).
ValueMap draw_inputs(bool gdn, const Shape& s, std::uint64_t seed, const KnobValues& kn, std::int64_t levels) {
  Rng rng(seed);
  Shape qk_shape = s;
  if (!gdn) qk_shape.H = 1;
  ValueMap in;
  in["q"] = plain_directions(rng, qk_shape, 1.0);
  in["k"] = keys_in(rng, qk_shape, kn, gdn ? 1.0 : kn.at("key_norm"));
  in["v"] = entries_in(rng, {s.B, s.T, s.H, s.V}, 1.0, kn);
  in["g"] = log_decays_in(rng, {s.B, s.T, s.H}, kn.at("decay_max"), seed, kn);
  in["level_scales"] = uniform_tensor(rng, {s.B, s.T, s.H, levels}, 0.0, kn.at("level_scale_max"));
  if (gdn)
    in["beta"] = uniform_tensor(rng, {s.B, s.T, s.H}, std::min(kn.at("beta_lo"), kn.at("beta_hi")),
                                std::max(kn.at("beta_lo"), kn.at("beta_hi")));
  return in;
}

// t0 for a case with a start (the initial_state knob not 0), from a stream of its own.
std::optional<std::uint64_t> start_offset_of(std::uint64_t seed, const KnobValues& kn) {
  if (initial_state_of(kn) == InitialState::none) return std::nullopt;
  Rng rng(mix_seed(seed, kStartStream));
  return 1 + static_cast<std::uint64_t>(rng.uniform() * kMaxStartOffset);
}

// The start the initial_state knob asks for after t0 tokens (zero states, or those after t0 earlier tokens
// drawn from a stream of their own), added to `in`, whose L is level_count(t0 + T).
void add_start(ValueMap& in, bool gdn, const Shape& s, std::uint64_t seed, const KnobValues& kn, std::uint64_t t0) {
  const std::int64_t levels = in.at("level_scales").dim(3);
  ref::Tensor<double> states({s.B, s.H, levels, s.K, s.V});
  if (initial_state_of(kn) == InitialState::random) {
    Shape earlier_shape = s;
    earlier_shape.T = static_cast<std::int64_t>(t0);
    KnobValues earlier_knobs = kn;
    earlier_knobs[kInitialStateKnob] = 0;
    const std::uint64_t earlier_seed = mix_seed(seed, kEarlierTokensStream);
    const ValueMap e = draw_inputs(gdn, earlier_shape, earlier_seed, earlier_knobs,
                                   ref::fenwick::level_count(t0));
    std::optional<ref::Tensor<double>> beta;
    if (gdn) beta = e.at("beta");
    ref::for_each_head(s.B, s.H, [&](std::int64_t b, std::int64_t h) {
      const ll::Problem<double> p =
          ll::head_problem<double>(e.at("q"), e.at("k"), e.at("v"), e.at("g"), e.at("level_scales"), beta, 1.0, b, h);
      ll::set_head_level_states(states, b, h, t0, ll::continuation_start(p).level_states);
    });
  }
  ref::Tensor<double> offset({1});
  offset.data[0] = static_cast<double>(t0);
  in[kStartOffset] = std::move(offset);
  in[kInitialLevelStates] = std::move(states);
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
              {"level_scales", "BTHL", "λ_t^(ℓ) per token and level ℓ = 0..⌈log2 T⌉ (..⌈log2(t0 + T)⌉ after t0 tokens)"}};
  if (gdn) m.inputs.push_back({.name = "beta", .dims = "BTH", .meaning = "delta-rule steps β ∈ [0, 1]", .min = 0, .max = 1});
  m.inputs.push_back({.name = kStartOffset, .dims = "1", .meaning = "t0, the tokens before the first (a whole number; absent: 0)",
                      .always_fp32 = true, .optional = true, .min = 0});
  m.inputs.push_back({.name = kInitialLevelStates, .dims = "BHLKV",
                      .meaning = "the carried state of t0's bucket at level ℓ in slot ℓ, other slots not read (absent: none)",
                      .always_fp32 = true, .optional = true});
  m.outputs = {{"o", "BTHV", "outputs", false}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u"}};
  if (!gdn) m.knobs.push_back({"key_norm", 0.1, 10, 1, true, "‖k_t‖"});
  m.knobs.push_back({"decay_max", 1e-3, 20, 0.1, true, "log-decays g ~ U(−decay_max, 0)"});
  m.knobs.push_back({"level_scale_max", 1e-2, 10, 2, true, "λ ~ U(0, level_scale_max)"});
  if (gdn) {
    m.knobs.push_back({"beta_lo", 0, 1, 0.05, false, "β ~ U(beta_lo, beta_hi)"});
    m.knobs.push_back({"beta_hi", 0, 1, 1, false, "β ~ U(beta_lo, beta_hi)"});
  }
  for (const Knob& k : {initial_state_knob(), entries_knob(), key_set_knob(), hard_decay_knob(), zero_decay_knob()})
    m.knobs.push_back(k);
  m.edge_regimes = edge_regimes(true);
  m.parameters = gdn ? nlohmann::json{{"variant", "gdn"}, {"scale", 1}}
                     : nlohmann::json{{"variant", "mamba2"}, {"scale", 1}, {"fla_function", "chunk_log_linear_attn"}};
  m.forms = ref::forms_of<ll::Family>();
  m.generate = [gdn](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    const std::optional<std::uint64_t> t0 = start_offset_of(seed, kn);
    ValueMap in = draw_inputs(gdn, s, seed, kn, ref::fenwick::level_count(t0.value_or(0) + static_cast<std::uint64_t>(s.T)));
    if (t0) add_start(in, gdn, s, seed, kn, *t0);
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
                              chunk > 0 ? chunk : 64, operands, start_in<S>(in)))}};
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
    gradients.push_back({.name = "dinitial_level_states", .dims = "BHLKV",
                         .meaning = "∂L/∂initial_level_states (float32; zero in slots that hold no bucket)",
                         .always_fp32 = true, .optional = true});
    Mechanism twin = gradient_twin_shell(out.back(), std::move(gradients));
    // The materialized adjoint beside the serial one, a baseline up to T = 256: at T = 1 dλ is one few-term
    // dot product, and the serial adjoint alone can land within 1e-2 ulp of it (an honest fp32 kernel
    // then fails by its own last-bit rounding).
    twin.forms = {ref::Form::serial, ref::Form::materialized};
    twin.materialized_baseline_max_T = 256;
    twin.compute = [gdn](const ValueMap& in, Precision p, ref::Form form, std::int64_t) {
      return at_precision(p, [&]<class S>() { return log_linear_gradients<S>(in, gdn, form == ref::Form::materialized); });
    };
    out.push_back(std::move(twin));
  }
}

}  // namespace larc::harness::detail
