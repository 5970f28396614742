// The mechanism registry (DESIGN.md "The program"): for each mechanism the gate knows, its named
// inputs and outputs in FLA's layout ([B,T,H,D] sequences, [B,T,H] gates, [B,H,K,V] states) with
// their shapes as functions of (B, T, H, K, V), a seeded input generator with the parameters worth
// stressing ("knobs": key collinearity and norms, gate ranges), and the reference computation at any
// rung of the precision ladder (float for the same-precision baseline, double and f128 to estimate the
// oracle's error, dd for the oracle itself).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "larc/harness/typed_tensor.h"
#include "larc/reference/matmul_operands.h"

namespace larc::harness {

// The sizes of a case: batch, sequence length, heads, key and value head dimensions and, for a
// mechanism whose value heads may be grouped over its query/key heads (FLA's GVA: HV a multiple of H,
// value head j reading q/k head j / (HV/H)), the value heads HV; 0 means HV = H.
struct Shape {
  std::int64_t B = 1, T = 1, H = 1, K = 1, V = 1;
  std::int64_t HV = 0;
  // A log-linear case's level count L (dims letter L), 0 for ⌈log2 T⌉ + 1. A case continuing a sequence
  // after t0 tokens has level_count(t0 + T): its generator sets the inputs' L, and prepare_case and a
  // fixture's reader take it from them (str() and parse() leave it out: it follows from the case).
  std::int64_t L = 0;
  std::int64_t value_heads() const { return HV == 0 ? H : HV; }
  std::int64_t levels() const;
  // "B,T,H,K,V", e.g. "1,256,2,64,64", and "B,T,H,K,V,HV" when HV ≠ H, e.g. "1,256,2,64,64,8".
  std::string str() const;
  static Shape parse(const std::string& s);  // throws std::invalid_argument naming the field
  // Throws std::invalid_argument naming the first size below 1 ("shape: T must be at least 1, got 0")
  // or an HV that is not a multiple of H.
  void require_positive() const;
  bool operator==(const Shape& o) const {
    return B == o.B && T == o.T && H == o.H && K == o.K && V == o.V && value_heads() == o.value_heads() &&
           levels() == o.levels();
  }
};

// A tensor's dims as letters: B, T, H, K, V, W (the value heads HV, = H unless grouped), 1 (a dimension
// of size one) or L (the log-linear level count Shape::levels(), ⌈log2 T⌉ + 1 unless the case continues a
// sequence), e.g. "BTHK", "BHKV", "BTWV", "BT1K", "BTHL", "BHLKV".
std::vector<std::int64_t> dims_of(const std::string& letters, const Shape& s);

struct TensorSpec {
  std::string name;     // "q", "g", "o", "final_state", ...
  std::string dims;     // letters, see dims_of
  std::string meaning;  // one line for docs and `larc fixtures show`
  bool always_fp32 = false;  // kept in float32 whatever the case's dtype (FLA's initial and final states)
  // An input a case may leave out (the initial state: zero when absent); an output a case may not have
  // (a gradient of an optional input: present, and judged, only when the oracle computes it).
  bool optional = false;
  // The values an input may hold, bounds included (e.g. max = 0 for log-decays); Mechanism::shape_of
  // refuses a value outside them naming the input.
  double min = -std::numeric_limits<double>::infinity(), max = std::numeric_limits<double>::infinity();
  // A gradient output (a backward mechanism's): judged with the gradient policy (tolerance.h).
  bool gradient = false;
  bool minus_infinity = false;  // may hold −∞ (a log-decay: α = 0, the token forgets everything before it)
};

// A generator parameter worth stressing, with its range; drawn log-uniformly when log_scale.
struct Knob {
  std::string name;
  double lo = 0, hi = 1, default_value = 0;
  bool log_scale = false;
  std::string meaning;
  bool integer = false;  // takes whole numbers only (a choice among named values)
  bool regime = false;   // an edge regime, plain at its default: the fuzzer draws the default half of the time
};

using KnobValues = std::map<std::string, double>;

// The knob of every mechanism whose state is a matrix: 0 no initial state (the kernel gets none),
// 1 an all-zero initial state passed explicitly, 2 a random one.
inline constexpr const char* kInitialStateKnob = "initial_state";
enum class InitialState { none = 0, zero = 1, random = 2 };
Knob initial_state_knob();
// The case's initial-state choice (none when the mechanism has no such knob).
InitialState initial_state_of(const KnobValues& knobs);

// The knob of the mechanisms whose kernels take varlen batches: 1 gives each of the case's B sequences a
// length of its own (the optional input "seq_lens" [B], float32 whole numbers in [0, T]; the first
// sequence empty and the second of one token where B allows); a sequence's rows past its length are
// padding: the reference runs each sequence over its own tokens, and every output and gradient is zero on
// padding rows (FLA's cu_seqlens batches, packed, put every padding row after the last offset).
inline constexpr const char* kVarlenKnob = "varlen";
inline constexpr const char* kSeqLensInput = "seq_lens";

// The knob of every mechanism with a read scale: scale = scale_factor · K^{-1/2}. At 1 (the default)
// a case has no "scale" input and a kernel uses its own default K^{-1/2} (FLA's); otherwise the input
// "scale" [1] (float32) holds the scale.
inline constexpr const char* kScaleFactorKnob = "scale_factor";

enum class Precision { f32, f64, dd, f128 };
std::string_view precision_name(Precision p);  // "float", "double", "dd_real", "float128"

struct Mechanism {
  std::string name;  // "gdn", "deltanet", "kla", "la", "la-ratio", ...
  std::string description;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<Knob> knobs;
  // The edge regimes the default gate grid adds beside the plain case: knob sets, each over the
  // defaults (e.g. heavy-tailed entries with orthonormal keys; hard decay with β up to 2).
  std::vector<KnobValues> edge_regimes;
  nlohmann::json parameters;      // fixed parameters (scale, eps, feature map), written into fixtures
  std::vector<ref::Form> forms;   // the forms `compute` runs
  // The longest T at which the materialized form (O(T²) time and memory), when in `forms`, is a float
  // baseline beside the others (0: never; docs/gate.md "Gradient cases"): a second order of summation
  // where an output of few terms leaves one float baseline's error to luck.
  std::int64_t materialized_baseline_max_T = 0;
  // Inputs in float64 for a shape, a seed and knob values (every knob present); deterministic.
  std::function<ValueMap(const Shape&, std::uint64_t seed, const KnobValues&)> generate;
  // The reference outputs of `inputs` (exact values, e.g. already rounded to a dtype) computed at the
  // given precision and form, returned in float64 (rounded to nearest from the precision).
  std::function<ValueMap(const ValueMap& inputs, Precision, ref::Form, std::int64_t chunk)> compute;
  // The io grade's baseline (grade.h): the chunked form in float with every matrix-product operand
  // rounded to `operands`, outputs in float64. Empty for mechanisms without a chunked form, which can
  // only be judged at fp32.
  std::function<ValueMap(const ValueMap& inputs, ref::OperandFormat operands, std::int64_t chunk)> compute_io;
  // The float forms of `compute` with the gates the mechanism derives from its inputs (α = e^g, KLA's β)
  // under rounding draw `draw` ≥ 1 (reference/rounding_draw.h): more float baselines, one per draw and form,
  // where one run's error is one sample of a wide spread (docs/gate.md "Gradient baselines over honest
  // roundings"). Empty for mechanisms that derive none or whose baselines take no draws.
  std::function<ValueMap(const ValueMap& inputs, ref::Form, std::int64_t chunk, std::uint64_t draw)> compute_rounding_draw;

  const TensorSpec& output(std::string_view name) const;  // throws std::invalid_argument
  // A gradient twin's (its outputs are gradients, docs/gate.md "Gradient cases").
  bool computes_gradients() const { return !outputs.empty() && outputs.front().gradient; }
  // The index of the time axis (T) of an output, -1 for outputs without one (final states).
  int time_axis(std::string_view output_name) const;
  // Without a time axis, the slices of an output: per (sequence, head), 2, for a gradient [B,H,…];
  // else 0 (one slice).
  int leading_slice_axes(std::string_view output_name) const;
  // Every knob at its default, overridden by `given`; an unknown name or a value outside the knob's
  // range throws std::invalid_argument naming it.
  KnobValues resolve_knobs(const KnobValues& given) const;
  // Checks every input is present with the shape its spec gives and holds only finite numbers within
  // its spec's [min, max], and returns the shape; throws std::invalid_argument naming the input and
  // what was expected.
  Shape shape_of(const ValueMap& inputs) const;
  // Throws std::invalid_argument naming the size when one is below 1, when HV ≠ H for a mechanism
  // without grouped value heads, or naming the tensor when an input or output of this mechanism would
  // hold more than kMaxTensorElements elements.
  void check_shape(const Shape& s) const;
  // Whether its value heads may be grouped over its query/key heads (a tensor with W dims).
  bool groups_value_heads() const;
};

// The most elements a case's tensor may hold: 2^31 − 1, so that element offsets fit a signed 32-bit
// integer (and a case fits in memory).
inline constexpr std::int64_t kMaxTensorElements = 2147483647;

// Every registered mechanism, in a fixed order.
const std::vector<Mechanism>& mechanisms();
// Throws std::invalid_argument listing the known names when `name` is not registered.
const Mechanism& find_mechanism(std::string_view name);

}  // namespace larc::harness
