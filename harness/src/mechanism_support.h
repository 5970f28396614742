// Pieces every mechanism's registration uses (internal to harness/): the case vocabulary's regimes as
// knobs (cases/), and the conversion of float64 tensors to and from a rung of
// the precision ladder.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "larc/cases/fla_tensors.h"
#include "larc/cases/rng.h"
#include "larc/harness/mechanism.h"
#include "larc/reference/scalar.h"

namespace larc::harness::detail {

using cases::mix_seed;
using cases::Rng;

// The case generators' Gaussian and uniform tensors, drawn in runs on the idle cores of the budget
// (cores.h parallel_runs): the same values as one pass in order (cases::draw_in_runs).
ref::Tensor<double> normal_tensor(Rng& rng, std::vector<std::int64_t> shape, double sigma);
ref::Tensor<double> uniform_tensor(Rng& rng, std::vector<std::int64_t> shape, double lo, double hi);

// The edge regimes as knobs (DESIGN.md "Randomized inputs"), each at its plain value by default and
// marked `regime`, so the fuzzer draws the plain value half of the time:
//   entries              0 Gaussian q and v, 1 heavy-tailed (t(3), unit variance)
//   key_set              0 random keys pulled together by `collinearity`, 1 orthonormal sets,
//                        2 heavy-tailed directions
//   hard_decay_fraction  the fraction of tokens with g = −∞ (the token forgets everything before it)
//   zero_decay_fraction  the fraction of tokens with g = 0 exactly (no decay)
inline constexpr const char* kEntriesKnob = "entries";
inline constexpr const char* kKeySetKnob = "key_set";
inline constexpr const char* kHardDecayKnob = "hard_decay_fraction";
inline constexpr const char* kZeroDecayKnob = "zero_decay_fraction";
Knob entries_knob();
Knob key_set_knob();
Knob hard_decay_knob();
Knob zero_decay_knob();

// The default grid's edge regimes (Mechanism::edge_regimes) of a mechanism with the entries and
// key_set knobs: heavy-tailed entries with orthonormal keys; heavy-tailed keys. With `decays` (it also
// has the hard- and zero-decay knobs) the first adds g = 0 exactly on a quarter of the tokens and the
// second g = −∞ on an eighth. `extra` is merged into the second (e.g. β up to 2).
std::vector<KnobValues> edge_regimes(bool decays, const KnobValues& extra = {});

// Entries of q or v with the case's `entries` knob (Gaussian when the mechanism has none).
ref::Tensor<double> entries_in(Rng& rng, std::vector<std::int64_t> shape, double sigma, const KnobValues& knobs);
// Keys [B,T,H,K] of norm `norm` with the case's key_set and collinearity knobs (collinear with
// collinearity 0 when the mechanism has neither).
ref::Tensor<double> keys_in(Rng& rng, const Shape& s, const KnobValues& knobs, double norm);
// q [B,T,H,K] and v [B,T,H,V] with the case's entries, and k of norm `key_norm` with its key set.
void add_qkv(ValueMap& in, Rng& rng, const Shape& s, const KnobValues& knobs, double key_norm);
// Keys of norm `norm` with no structure: the plain draw for queries that must be directions.
ref::Tensor<double> plain_directions(Rng& rng, const Shape& s, double norm);
// Raw queries and keys, for a kernel that l2-normalises them itself (FLA's use_qk_l2norm_in_kernel):
// the knobs qk_norm_lo and qk_norm_hi, and q and k of `in` rescaled so that every token of every head
// has a norm of its own, log-uniform in [qk_norm_lo, qk_norm_hi], drawn from a stream of its own (so the
// directions, and every other input, are the plain case's). By default [1e-2, 1e2]: the raw dk is
// (dk̂ − k̂(k̂·dk̂)) / √(‖k‖² + ε), up to 1/√ε = 1e3 × dk̂, and from 1e-3 on the default grid's DeltaNet
// twin in fp16 (heavy-tailed keys, β ∈ [1, 2], T = 160) has an oracle dk beyond fp16's range; tiny
// norms are an edge regime of the mechanisms instead.
inline constexpr const char* kQkNormLoKnob = "qk_norm_lo";
inline constexpr const char* kQkNormHiKnob = "qk_norm_hi";
std::vector<Knob> raw_qk_norm_knobs();
void spread_qk_norms(ValueMap& in, std::uint64_t seed, const KnobValues& knobs);
// Log-decays U(−decay_max, 0) of the given shape, then the case's hard- and zero-decay fractions,
// drawn from a stream of their own (so every other input is the same with or without them).
ref::Tensor<double> log_decays_in(Rng& rng, std::vector<std::int64_t> shape, double decay_max, std::uint64_t seed,
                                  const KnobValues& knobs);

// The optional initial state of a mechanism whose state is a matrix (FLA's initial_state [B,H,K,V],
// float32): its input spec, the tensor its knob asks for (none, zeros or N(0, 1) entries, drawn from a
// stream of its own so that the other inputs do not depend on the knob), added to `in`.
TensorSpec initial_state_spec();
void add_initial_state(ValueMap& in, const Shape& s, std::uint64_t seed, const KnobValues& knobs);
// The read scale as a case parameter (kScaleFactorKnob): its knob (log-uniform in [1/16, 16], 1 by
// default, an edge regime), its input spec ("scale" [1], float32, optional), the input added when the
// factor is not 1, and the case's scale in scalar S (none: the mechanism's default K^{-1/2}).
Knob scale_knob();
TensorSpec scale_spec();
void add_scale(ValueMap& in, const Shape& s, const KnobValues& knobs);
template <class S>
std::optional<S> scale_in(const ValueMap& in) {
  const auto it = in.find("scale");
  if (it == in.end()) return std::nullopt;
  return ref::from_double<S>(it->second.data.at(0));
}

// Sequences of their own lengths (kVarlenKnob, kSeqLensInput): adds the knob (an edge regime) and the
// optional input seq_lens [B] to `m` and wraps its generator to draw the lengths when the knob is 1 (from a
// stream of their own: every other input is the same either way). The per-sequence cut and the zero
// padding of the outputs are head_split.cpp's, for every mechanism that has the input.
void with_sequence_lengths(Mechanism& m);

// A ratio read's normaliser z_0 [B,H,K] beside its initial state (float32, ≥ 0 as a sum of positive
// features is): none, zeros or U(0, 2) entries by the same knob, from a stream of its own.
TensorSpec initial_normalizer_spec();
void add_initial_normalizer(ValueMap& in, const Shape& s, std::uint64_t seed, const KnobValues& knobs);

template <class S>
ref::Tensor<S> cast_tensor(const ref::Tensor<double>& x) {
  ref::Tensor<S> r;
  r.shape = x.shape;
  r.data.reserve(x.data.size());
  for (double v : x.data) r.data.push_back(ref::from_double<S>(v));
  return r;
}

template <class S>
ref::Tensor<double> to_double_tensor(const ref::Tensor<S>& x) {
  ref::Tensor<double> r;
  r.shape = x.shape;
  r.data.reserve(x.data.size());
  for (const S& v : x.data) r.data.push_back(ref::to_double(v));
  return r;
}

// The case's optional input `name` in scalar S, or none when the case has none.
template <class S>
std::optional<ref::Tensor<S>> optional_input(const ValueMap& in, const std::string& name) {
  const auto it = in.find(name);
  if (it == in.end()) return std::nullopt;
  return cast_tensor<S>(it->second);
}
template <class S>
std::optional<ref::Tensor<S>> initial_state_in(const ValueMap& in) {
  return optional_input<S>(in, "initial_state");
}

// Calls fn.template operator()<S>() with the scalar of precision p.
template <class Fn>
ValueMap at_precision(Precision p, Fn&& fn) {
  switch (p) {
    case Precision::f32: return fn.template operator()<float>();
    case Precision::f64: return fn.template operator()<double>();
    case Precision::dd: return fn.template operator()<ref::dd>();
    case Precision::f128: return fn.template operator()<ref::f128>();
  }
  throw std::invalid_argument("unknown precision");
}

// Sets m.compute (every rung of the ladder, products unrounded) and m.compute_io (the chunked form in
// float with rounded operands) from one generic callable outputs.template operator()<S>(inputs, form,
// chunk, operands): the two differ only in the scalar, the form and the operand format.
template <class Outputs>
void set_compute(Mechanism& m, Outputs outputs) {
  m.compute = [outputs](const ValueMap& in, Precision p, ref::Form form, std::int64_t chunk) {
    return at_precision(p, [&]<class S>() { return outputs.template operator()<S>(in, form, chunk, ref::OperandFormat::none); });
  };
  m.compute_io = [outputs](const ValueMap& in, ref::OperandFormat operands, std::int64_t chunk) {
    return outputs.template operator()<float>(in, ref::Form::chunked, chunk, operands);
  };
}

// The gradient twin of a forward mechanism whose outputs are o [B,T,H,V] and final_state [B,H,K,V]
// (docs/gate.md "Gradient cases"): named "<forward>-backward", its inputs are the forward's plus the
// cotangents do (o's dims and dtype) and dht ([B,H,K,V], float32, optional), drawn by the
// `cotangents` knob (0 both at matched magnitudes, 1 do only, 2 dht only); its outputs are
// `gradients` (each marked as a gradient), computed by gradients_at.template operator()<S>(inputs)
// at each rung of the ladder. Its one form is the serial adjoint; it has no io baseline (the io form:
// gradient_twin_with_io_form).
template <class GradientsAt>
Mechanism gradient_twin(const Mechanism& forward, std::vector<TensorSpec> gradients, GradientsAt gradients_at);
Mechanism gradient_twin_shell(const Mechanism& forward, std::vector<TensorSpec> gradients);

// `spec` with its head axis (H or W) over `axis`: W, the value heads (Shape::HV), for a mechanism whose
// value heads may be grouped over its query/key heads; H, one value head per query/key head.
TensorSpec with_head_axis(TensorSpec spec, char axis);

// q or k [B,T,H,K] repeated to the value heads HV = G·H (value head j reads head j / G), and the
// adjoint: dq or dk [B,T,HV,K] summed over each group back to [B,T,H,K]. G = 1 returns the tensor.
template <class S>
ref::Tensor<S> repeat_heads(const ref::Tensor<S>& x, std::int64_t G) {
  if (G == 1) return x;
  const std::int64_t rows = x.dim(0) * x.dim(1), H = x.dim(2), D = x.dim(3);
  ref::Tensor<S> r({x.dim(0), x.dim(1), H * G, D});
  for (std::int64_t n = 0; n < rows; ++n)
    for (std::int64_t j = 0; j < H * G; ++j)
      for (std::int64_t d = 0; d < D; ++d) r.data[(n * H * G + j) * D + d] = x.data[(n * H + j / G) * D + d];
  return r;
}
template <class S>
ref::Tensor<S> sum_head_groups(const ref::Tensor<S>& x, std::int64_t G) {
  if (G == 1) return x;
  const std::int64_t rows = x.dim(0) * x.dim(1), HV = x.dim(2), D = x.dim(3);
  ref::Tensor<S> r({x.dim(0), x.dim(1), HV / G, D});
  for (std::int64_t n = 0; n < rows; ++n)
    for (std::int64_t j = 0; j < HV; ++j)
      for (std::int64_t d = 0; d < D; ++d) r.data[(n * (HV / G) + j / G) * D + d] += x.data[(n * HV + j) * D + d];
  return r;
}
// The case's group size G = HV / H, from v's and q's heads.
inline std::int64_t head_group(const ValueMap& in) { return in.at("v").dim(2) / in.at("q").dim(2); }

// A gradient output's spec, and dh0's ([B,H,K,V], float32 like the initial state); gradient_twin marks
// each as a gradient.
TensorSpec gradient_spec(std::string name, std::string dims, std::string meaning);
TensorSpec initial_state_gradient_spec();
// The gradient of each of the forward's required inputs, d<name> in the input's dims and the case's dtype
// (the optional ones — the read scale, a fixed parameter; an initial state, whose gradient is dh0 —
// have none here): the outputs of a twin whose forward takes no initial state, named and shaped from
// the forward's inputs so that the two cannot drift apart.
std::vector<TensorSpec> required_input_gradient_specs(const Mechanism& forward);

// The cotangents of a gradient case in scalar S: do, and dht when the case has one.
template <class S>
ref::BatchedCotangents<S> cotangents_in(const ValueMap& in) {
  ref::BatchedCotangents<S> c{cast_tensor<S>(in.at("do")), std::nullopt};
  if (const auto it = in.find("dht"); it != in.end()) c.d_final_state = cast_tensor<S>(it->second);
  return c;
}

template <class GradientsAt>
Mechanism gradient_twin(const Mechanism& forward, std::vector<TensorSpec> gradients, GradientsAt gradients_at) {
  Mechanism m = gradient_twin_shell(forward, std::move(gradients));
  m.compute = [gradients_at](const ValueMap& in, Precision p, ref::Form, std::int64_t) {
    return at_precision(p, [&]<class S>() { return gradients_at.template operator()<S>(in); });
  };
  return m;
}

// A gradient twin with a chunked form beside its serial one, as baselines (docs/gate.md "Gradient
// cases"): gradients_at(in, chunk) in scalar S gives the backward verb's gradients for chunk = nullopt,
// and for a chunk size the gradients that chunk kernels form another way (dβ, the decays' gradient:
// reference/chunk_local_decay_gradient.h) formed their way.
template <class GradientsAt>
Mechanism gradient_twin_with_chunked_form(const Mechanism& forward, std::vector<TensorSpec> gradients,
                                          GradientsAt gradients_at) {
  Mechanism m = gradient_twin_shell(forward, std::move(gradients));
  m.forms = {ref::Form::serial, ref::Form::chunked};
  m.compute = [gradients_at](const ValueMap& in, Precision p, ref::Form form, std::int64_t chunk) {
    return at_precision(p, [&]<class S>() {
      return form == ref::Form::chunked ? gradients_at.template operator()<S>(in, std::optional(chunk))
                                        : gradients_at.template operator()<S>(in, std::nullopt);
    });
  };
  return m;
}

// A gradient twin with a chunked form and an io form: gradients_at(in, chunk, operands) in scalar S is
// gradients_at of gradient_twin_with_chunked_form for operands = none, and for an operand format the
// chunked backward with every matrix-product operand rounded to it (the io grade's gradient baseline,
// docs/gate.md "Precision grades").
template <class GradientsAt>
Mechanism gradient_twin_with_io_form(const Mechanism& forward, std::vector<TensorSpec> gradients, GradientsAt gradients_at) {
  Mechanism m = gradient_twin_with_chunked_form(
      forward, std::move(gradients), [gradients_at]<class S>(const ValueMap& in, std::optional<std::int64_t> chunk) {
        return gradients_at.template operator()<S>(in, chunk, ref::OperandFormat::none);
      });
  m.compute_io = [gradients_at](const ValueMap& in, ref::OperandFormat operands, std::int64_t chunk) {
    return gradients_at.template operator()<float>(in, std::optional(chunk), operands);
  };
  return m;
}

// gradient_twin_with_io_form whose float baselines also run under rounding draws of the gates the mechanism
// derives from its inputs (Mechanism::compute_rounding_draw): gradients_at(in, chunk, operands, draw), with
// draw 0 the gradients of gradient_twin_with_io_form.
template <class GradientsAt>
Mechanism gradient_twin_with_rounding_draws(const Mechanism& forward, std::vector<TensorSpec> gradients,
                                            GradientsAt gradients_at) {
  Mechanism m = gradient_twin_with_io_form(forward, std::move(gradients), gradients_at);
  m.compute_rounding_draw = [gradients_at](const ValueMap& in, ref::Form form, std::int64_t chunk, std::uint64_t draw) {
    return form == ref::Form::chunked
               ? gradients_at.template operator()<float>(in, std::optional(chunk), ref::OperandFormat::none, draw)
               : gradients_at.template operator()<float>(in, std::nullopt, ref::OperandFormat::none, draw);
  };
  return m;
}

// The checkpoint interval of the reference's float adjoints (the serial baselines of the gradient twins).
inline constexpr Eigen::Index kBackwardCheckpoint = 64;

// Registration functions, one per reference family; mechanisms() calls each once.
void register_delta_rule_mechanisms(std::vector<Mechanism>& out);
void register_linear_attention_mechanisms(std::vector<Mechanism>& out);
void register_gla_mechanisms(std::vector<Mechanism>& out);
void register_vla_mechanisms(std::vector<Mechanism>& out);
void register_hla_mechanisms(std::vector<Mechanism>& out);
void register_log_linear_mechanisms(std::vector<Mechanism>& out);
void register_ccq_mechanisms(std::vector<Mechanism>& out);  // after gla and gdn: CCQ takes their inputs


}  // namespace larc::harness::detail
