#include "mechanism_support.h"

#include <cmath>

#include "cores.h"

namespace larc::harness::detail {

ref::Tensor<double> normal_tensor(Rng& rng, std::vector<std::int64_t> shape, double sigma) {
  return cases::normal_tensor(rng, std::move(shape), sigma, parallel_runs);
}

ref::Tensor<double> uniform_tensor(Rng& rng, std::vector<std::int64_t> shape, double lo, double hi) {
  return cases::uniform_tensor(rng, std::move(shape), lo, hi, parallel_runs);
}

namespace {
constexpr std::uint64_t kInitialStateStream = 0x50;       // mix_seed stream of the initial state
constexpr std::uint64_t kInitialNormalizerStream = 0x51;  // and of a ratio read's normaliser
constexpr std::uint64_t kSeqLensStream = 0x54;            // mix_seed stream of the sequence lengths
}  // namespace

TensorSpec initial_state_spec() {
  return {.name = "initial_state", .dims = "BHKV", .meaning = "the state before the first token (zero when absent)",
          .always_fp32 = true, .optional = true};
}

void add_initial_state(ValueMap& in, const Shape& s, std::uint64_t seed, const KnobValues& knobs) {
  const InitialState choice = initial_state_of(knobs);
  if (choice == InitialState::none) return;
  Rng rng(mix_seed(seed, kInitialStateStream));
  const std::int64_t HV = s.value_heads();
  in["initial_state"] = choice == InitialState::zero ? ref::Tensor<double>({s.B, HV, s.K, s.V})
                                                     : normal_tensor(rng, {s.B, HV, s.K, s.V}, 1.0);
}

TensorSpec initial_normalizer_spec() {
  return {.name = "initial_normalizer", .dims = "BHK", .meaning = "the normaliser z before the first token (zero when absent)",
          .always_fp32 = true, .optional = true, .min = 0};
}

void add_initial_normalizer(ValueMap& in, const Shape& s, std::uint64_t seed, const KnobValues& knobs) {
  const InitialState choice = initial_state_of(knobs);
  if (choice == InitialState::none) return;
  Rng rng(mix_seed(seed, kInitialNormalizerStream));
  in["initial_normalizer"] = choice == InitialState::zero ? ref::Tensor<double>({s.B, s.H, s.K})
                                                          : uniform_tensor(rng, {s.B, s.H, s.K}, 0.0, 2.0);
}

void with_sequence_lengths(Mechanism& m) {
  m.inputs.push_back({.name = kSeqLensInput, .dims = "B",
                      .meaning = "tokens of each sequence, a whole number in [0, T]; its rows past them are padding, "
                                 "zero in every output (absent: every sequence has T)",
                      .always_fp32 = true, .optional = true, .min = 0});
  m.knobs.push_back({.name = kVarlenKnob, .lo = 0, .hi = 1, .default_value = 0,
                     .meaning = "1: sequences of their own lengths (seq_lens): the first empty and the second of one "
                                "token where B allows, the others U{1..T}, the rest of each padding",
                     .integer = true, .regime = true});
  m.edge_regimes.push_back({{kVarlenKnob, 1}});
  m.generate = [generate = m.generate](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    ValueMap in = generate(s, seed, kn);
    if (kn.at(kVarlenKnob) == 0) return in;
    Rng rng(mix_seed(seed, kSeqLensStream));
    ref::Tensor<double> lengths({s.B});
    for (std::int64_t b = 0; b < s.B; ++b) {
      const auto drawn = static_cast<std::int64_t>(rng.bits() % static_cast<std::uint64_t>(s.T)) + 1;  // U{1..T}
      lengths.data[static_cast<std::size_t>(b)] = static_cast<double>(b == 0 && s.B > 1 ? 0 : b == 1 && s.B > 2 ? 1 : drawn);
    }
    in[kSeqLensInput] = std::move(lengths);
    return in;
  };
}

Knob scale_knob() {
  return {.name = kScaleFactorKnob, .lo = 1.0 / 16, .hi = 16, .default_value = 1, .log_scale = true,
          .meaning = "read scale = scale_factor · K^-1/2 (at 1 the case passes no scale: the kernel's default)",
          .regime = true};
}

TensorSpec scale_spec() {
  return {.name = "scale", .dims = "1", .meaning = "the read scale (K^-1/2 when absent)", .always_fp32 = true,
          .optional = true, .min = 0};
}

void add_scale(ValueMap& in, const Shape& s, const KnobValues& knobs) {
  const double factor = knobs.at(kScaleFactorKnob);
  if (factor == 1) return;
  ref::Tensor<double> scale({1});
  // Held in float32 (always_fp32): the scale every subject and the reference read is the rounded one.
  scale.data[0] = static_cast<float>(factor / std::sqrt(static_cast<double>(s.K)));
  in["scale"] = std::move(scale);
}

Knob entries_knob() {
  return {.name = kEntriesKnob, .lo = 0, .hi = 1, .default_value = 0,
          .meaning = "q and v entries: 0 Gaussian, 1 heavy-tailed (t(3), unit variance)", .integer = true, .regime = true};
}

Knob key_set_knob() {
  return {.name = kKeySetKnob, .lo = 0, .hi = cases::kKeySets - 1, .default_value = 0,
          .meaning = "keys: 0 random, pulled together by collinearity; 1 orthonormal sets (K per head, repeated); "
                     "2 heavy-tailed directions",
          .integer = true, .regime = true};
}

Knob hard_decay_knob() {
  return {.name = kHardDecayKnob, .lo = 0, .hi = 0.5, .default_value = 0,
          .meaning = "fraction of tokens with g = −∞ (forget everything before them)", .regime = true};
}

Knob zero_decay_knob() {
  return {.name = kZeroDecayKnob, .lo = 0, .hi = 1, .default_value = 0,
          .meaning = "fraction of tokens with g = 0 exactly (no decay)", .regime = true};
}

std::vector<KnobValues> edge_regimes(bool decays, const KnobValues& extra) {
  KnobValues heavy_orthonormal{{kEntriesKnob, 1}, {kKeySetKnob, static_cast<double>(cases::KeySet::orthonormal)}};
  KnobValues heavy_keys{{kKeySetKnob, static_cast<double>(cases::KeySet::heavy_tailed)}};
  if (decays) {
    heavy_orthonormal[kZeroDecayKnob] = 0.25;
    heavy_keys[kHardDecayKnob] = 0.125;
  }
  heavy_keys.insert(extra.begin(), extra.end());
  return {heavy_orthonormal, heavy_keys};
}

namespace {
constexpr std::uint64_t kDecayRegimeStream = 0x51;  // mix_seed stream of the hard/zero decay tokens
constexpr std::uint64_t kCotangentStream = 0x52;    // mix_seed stream of the cotangents do and dht
constexpr std::uint64_t kRawNormStream = 0x53;      // mix_seed stream of raw query and key norms
enum class CotangentRegime { both = 0, output_only = 1, state_only = 2 };  // mix_seed stream of the hard/zero decay tokens

double knob_or(const KnobValues& knobs, const char* name, double fallback) {
  const auto it = knobs.find(name);
  return it == knobs.end() ? fallback : it->second;
}
}  // namespace

ref::Tensor<double> entries_in(Rng& rng, std::vector<std::int64_t> shape, double sigma, const KnobValues& knobs) {
  return cases::entries_tensor(rng, std::move(shape), sigma,
                               static_cast<cases::Entries>(static_cast<int>(knob_or(knobs, kEntriesKnob, 0))), parallel_runs);
}

ref::Tensor<double> keys_in(Rng& rng, const Shape& s, const KnobValues& knobs, double norm) {
  return cases::keys_tensor(rng, s.B, s.T, s.H, s.K, static_cast<cases::KeySet>(static_cast<int>(knob_or(knobs, kKeySetKnob, 0))),
                            knob_or(knobs, "collinearity", 0), norm, parallel_runs);
}

void add_qkv(ValueMap& in, Rng& rng, const Shape& s, const KnobValues& knobs, double key_norm) {
  in["q"] = entries_in(rng, {s.B, s.T, s.H, s.K}, 1.0, knobs);
  in["k"] = keys_in(rng, s, knobs, key_norm);
  in["v"] = entries_in(rng, {s.B, s.T, s.value_heads(), s.V}, 1.0, knobs);
}

ref::Tensor<double> plain_directions(Rng& rng, const Shape& s, double norm) {
  return cases::keys_tensor(rng, s.B, s.T, s.H, s.K, cases::KeySet::collinear, 0, norm, parallel_runs);
}

std::vector<Knob> raw_qk_norm_knobs() {
  const std::string meaning = "raw ‖q_t‖, ‖k_t‖ per token and head, log-uniform in [qk_norm_lo, qk_norm_hi]";
  return {{.name = kQkNormLoKnob, .lo = 1e-4, .hi = 1e4, .default_value = 1e-2, .log_scale = true, .meaning = meaning},
          {.name = kQkNormHiKnob, .lo = 1e-4, .hi = 1e4, .default_value = 1e2, .log_scale = true, .meaning = meaning}};
}

void spread_qk_norms(ValueMap& in, std::uint64_t seed, const KnobValues& knobs) {
  Rng rng(mix_seed(seed, kRawNormStream));
  for (const char* name : {"q", "k"})
    cases::scale_rows_to_log_uniform_norms(rng, in.at(name), knobs.at(kQkNormLoKnob), knobs.at(kQkNormHiKnob));
}

ref::Tensor<double> log_decays_in(Rng& rng, std::vector<std::int64_t> shape, double decay_max, std::uint64_t seed,
                                  const KnobValues& knobs) {
  ref::Tensor<double> g = uniform_tensor(rng, std::move(shape), -decay_max, 0.0);
  Rng regimes(mix_seed(seed, kDecayRegimeStream));
  cases::apply_decay_regimes(regimes, g, knob_or(knobs, kHardDecayKnob, 0), knob_or(knobs, kZeroDecayKnob, 0));
  return g;
}

TensorSpec with_head_axis(TensorSpec spec, char axis) {
  for (char& c : spec.dims)
    if (c == 'H' || c == 'W') c = axis;
  return spec;
}

TensorSpec gradient_spec(std::string name, std::string dims, std::string meaning) {
  return {.name = std::move(name), .dims = std::move(dims), .meaning = std::move(meaning)};
}

std::vector<TensorSpec> required_input_gradient_specs(const Mechanism& forward) {
  std::vector<TensorSpec> g;
  for (const TensorSpec& in : forward.inputs)
    if (!in.optional) g.push_back(gradient_spec("d" + in.name, in.dims, "∂L/∂" + in.name));
  return g;
}

TensorSpec initial_state_gradient_spec() {
  return {.name = "dh0", .dims = "BHKV", .meaning = "∂L/∂initial_state (float32)", .always_fp32 = true};
}

Mechanism gradient_twin_shell(const Mechanism& forward, std::vector<TensorSpec> gradients) {
  Mechanism m;
  m.name = forward.name + "-backward";
  m.description = "gradients of " + forward.name + " for L = Σ⟨do, o⟩ + ⟨dht, final_state⟩ (the reverse-mode adjoint)";
  // A forward without a final state (HLA's) has do as its only cotangent.
  bool has_state = false;
  for (const TensorSpec& o : forward.outputs) has_state = has_state || o.name == "final_state";
  m.inputs = forward.inputs;
  m.inputs.push_back({"do", forward.output("o").dims, "cotangent of o"});
  if (has_state)
    m.inputs.push_back({.name = "dht", .dims = forward.output("final_state").dims,
                        .meaning = "cotangent of the final state (zero when absent)",
                        .always_fp32 = true, .optional = true});
  for (TensorSpec& g : gradients) g.gradient = true;
  m.outputs = std::move(gradients);
  m.knobs = forward.knobs;
  if (has_state)
    m.knobs.push_back({.name = "cotangents", .lo = 0, .hi = 2, .default_value = 0,
                       .meaning = "0 do and dht at matched magnitudes, 1 do only, 2 dht only", .integer = true});
  m.edge_regimes = forward.edge_regimes;
  m.parameters = forward.parameters;
  m.parameters["forward"] = forward.name;
  m.parameters["loss"] = has_state ? "sum(do * o) + sum(dht * final_state)" : "sum(do * o)";
  m.forms = {ref::Form::serial};
  m.generate = [generate_forward = forward.generate](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    ValueMap in = generate_forward(s, seed, kn);
    const auto regime = static_cast<CotangentRegime>(static_cast<int>(knob_or(kn, "cotangents", 0)));
    Rng rng(mix_seed(seed, kCotangentStream));
    // Matched magnitudes: ‖dht‖ ≈ ‖do‖ per (sequence, head), T·V entries of do against K·V of dht.
    const std::int64_t HV = s.value_heads();  // o and the final state have the value heads
    in["do"] = regime == CotangentRegime::state_only ? ref::Tensor<double>({s.B, s.T, HV, s.V})
                                                     : normal_tensor(rng, {s.B, s.T, HV, s.V}, 1.0);
    if (regime != CotangentRegime::output_only)
      in["dht"] = normal_tensor(rng, {s.B, HV, s.K, s.V}, std::sqrt(static_cast<double>(s.T) / static_cast<double>(s.K)));
    return in;
  };
  return m;
}

}  // namespace larc::harness::detail
