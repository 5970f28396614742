// Pieces every mechanism's registration uses (internal to harness/): the case RNG, the input
// generators for FLA-layout tensors, and the conversion of float64 tensors to and from a rung of
// the precision ladder.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "larc/harness/mechanism.h"
#include "larc/reference/scalar.h"

namespace larc::harness::detail {

// splitmix64 over a counter: portable and seekable, so a case's inputs depend only on its seed.
class CaseRng {
 public:
  explicit CaseRng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t bits();
  double uniform();                         // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal();                          // Box–Muller, one value per call
  double log_uniform(double lo, double hi);  // lo, hi > 0

 private:
  std::uint64_t state_;
};

// Mixes a seed with a stream id (so q, k, v, ... and cases drawn from one base seed are independent).
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream);

ref::Tensor<double> normal_tensor(CaseRng& rng, std::vector<std::int64_t> shape, double sigma);
ref::Tensor<double> uniform_tensor(CaseRng& rng, std::vector<std::int64_t> shape, double lo, double hi);
// Keys [B,T,H,K]: per (b, h) a shared unit direction u; each key is norm · unit((1 − c) z + c u)
// with z a random unit vector and c = collinearity ∈ [0, 1) (near 1: near-collinear keys).
ref::Tensor<double> keys_tensor(CaseRng& rng, const Shape& s, double collinearity, double norm);

// The optional initial state of a mechanism whose state is a matrix (FLA's initial_state [B,H,K,V],
// float32): its input spec, the tensor its knob asks for (none, zeros or N(0, 1) entries, drawn from a
// stream of its own so that the other inputs do not depend on the knob), added to `in`.
TensorSpec initial_state_spec();
void add_initial_state(ValueMap& in, const Shape& s, std::uint64_t seed, const KnobValues& knobs);

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

// The case's initial state in scalar S, or none when the case has none.
template <class S>
std::optional<ref::Tensor<S>> initial_state_in(const ValueMap& in) {
  const auto it = in.find("initial_state");
  if (it == in.end()) return std::nullopt;
  return cast_tensor<S>(it->second);
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

// Registration functions, one per reference family; mechanisms() calls each once.
void register_delta_rule_mechanisms(std::vector<Mechanism>& out);
void register_linear_attention_mechanisms(std::vector<Mechanism>& out);
void register_gla_mechanisms(std::vector<Mechanism>& out);
void register_vla_mechanisms(std::vector<Mechanism>& out);
void register_hla_mechanisms(std::vector<Mechanism>& out);
void register_log_linear_mechanisms(std::vector<Mechanism>& out);
void register_ccq_mechanisms(std::vector<Mechanism>& out);  // after gla and gdn: CCQ takes their inputs

}  // namespace larc::harness::detail
