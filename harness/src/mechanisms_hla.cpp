// The HLA family (reference/hla.h, SPEC §5) as gate mechanisms, all without decay (γ = 1) and without
// a read scale (SPEC §5 has none); q, k [B,T,H,K], v [B,T,H,V]; output o [B,T,H,V]:
//   "hla"            second-order masked:      o_t = q_tᵀ(S^K_t C_t − G_t) = row t of ((A Aᵀ) ⊙ L) V (HLA-C1)
//   "hla-normalized" the same over q_tᵀ(S^K_t m_t − h_t) + ε, ε = 1e-6 (HLA-C2)
//   "ahla"           asymmetric:               o_t = q_tᵀ E_t = row t of ((A A) ⊙ L) V (HLA-C6)
// Initial state (the initial_state knob): the summaries before the first token, float32 and optional
// (empty when absent) — second order initial_key_moment S^K_0 [B,H,K,K], initial_query_values C_0 and
// initial_cross G_0 [B,H,K,V], and for the normalised variant initial_query_sum m_0 and initial_cross_sum
// h_0 [B,H,K]; AHLA initial_key_values P_0 and initial_cross E_0 [B,H,K,V]. Zeros, or the summaries of
// 1 to 16 earlier tokens per (sequence, head), drawn as the case's own q, k, v are (from a stream of their
// own) and streamed through the reference's state in double — a state some sequence reaches, so the
// normalised denominators stay positive. No final state is an output.
// Queries and keys are drawn with norm K^{-1/4} so that the outputs stay O(T) rather than O(T·K).
// The normalised variant has no feature map in SPEC §5: with signed q, k its denominator
// Σ_{i≤j≤t} (q_t·k_i)(k_i·q_j) crosses zero and o_t is unbounded, so its q and k have non-negative
// entries (the image of a positive feature map), which keeps every denominator ≥ (q_t·k_t)² > 0.
#include <algorithm>
#include <cmath>
#include <map>
#include <type_traits>

#include "larc/common/mechanism_constants.h"
#include "larc/reference/hla.h"
#include "larc/reference/hla_backward.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace hla = ref::hla;

enum class Variant { second_order, second_order_normalized, ahla };

// ε of the normalised read, the kernels' too.
constexpr double kNormalizedEps = mechanism_constants::hla_normalized_eps;

constexpr std::uint64_t kInitialSummariesStream = 0x4a0;  // mix_seed stream of the earlier tokens
constexpr std::int64_t kMaxInitialTokens = 16;              // a random initial state summarises 1 to 16 tokens

const char* const kKeyMoment = "initial_key_moment";      // S^K_0 [B,H,K,K]
const char* const kQueryValues = "initial_query_values";  // C_0 [B,H,K,V]
const char* const kQuerySum = "initial_query_sum";        // m_0 [B,H,K], normalised
const char* const kCross = "initial_cross";               // G_0 or E_0 [B,H,K,V]
const char* const kCrossSum = "initial_cross_sum";        // h_0 [B,H,K], normalised
const char* const kKeyValues = "initial_key_values";      // P_0 [B,H,K,V]

// One initial tensor of a variant: its name, dims and meaning.
struct InitialTensor {
  const char* name;
  const char* dims;
  const char* meaning;
};

std::vector<InitialTensor> initial_tensors(Variant variant) {
  switch (variant) {
    case Variant::second_order:
      return {{kKeyMoment, "BHKK", "S^K_0, the key moment before the first token (zero when absent)"},
              {kQueryValues, "BHKV", "C_0, the query-value summary before the first token (zero when absent)"},
              {kCross, "BHKV", "G_0, the cross summary before the first token (zero when absent)"}};
    case Variant::second_order_normalized: {
      auto t = initial_tensors(Variant::second_order);
      t.push_back({kQuerySum, "BHK", "m_0, the query sum before the first token (zero when absent)"});
      t.push_back({kCrossSum, "BHK", "h_0, the cross sum before the first token (zero when absent)"});
      return t;
    }
    case Variant::ahla:
      return {{kKeyValues, "BHKV", "P_0, the key-value summary before the first token (zero when absent)"},
              {kCross, "BHKV", "E_0, the cross summary before the first token (zero when absent)"}};
  }
  return {};
}

// An initial tensor's (or its gradient's) zeros: [B,H,K,K], [B,H,K,V] or [B,H,K] by its dims.
template <class S>
ref::Tensor<S> zeros_of(const InitialTensor& t, std::int64_t B, std::int64_t H, std::int64_t K, std::int64_t V) {
  const std::string dims = t.dims;
  return ref::Tensor<S>(dims == "BHKK"   ? std::vector<std::int64_t>{B, H, K, K}
                        : dims == "BHKV" ? std::vector<std::int64_t>{B, H, K, V}
                                         : std::vector<std::int64_t>{B, H, K});
}

// [B,H,K,V] with the normaliser [B,H,K] as column V: the reference's [C | m] layout (hla_common.h).
template <class S>
ref::Tensor<S> with_normaliser_column(const ref::Tensor<S>& x, const ref::Tensor<S>& normaliser) {
  const std::int64_t rows = x.dim(0) * x.dim(1) * x.dim(2), V = x.dim(3);
  ref::Tensor<S> r({x.dim(0), x.dim(1), x.dim(2), V + 1});
  for (std::int64_t n = 0; n < rows; ++n) {
    std::copy_n(x.data.begin() + n * V, V, r.data.begin() + n * (V + 1));
    r.data[static_cast<std::size_t>(n * (V + 1) + V)] = normaliser.data[static_cast<std::size_t>(n)];
  }
  return r;
}

// The summary [X | x] of one (sequence, head) written back as X into `values` and x into `normaliser`.
template <class S>
void set_head_summary(ref::Tensor<S>& values, std::type_identity_t<ref::Tensor<S>>* normaliser, std::int64_t b, std::int64_t h, const ref::Mat<S>& m) {
  ref::set_head_state(values, b, h, ref::Mat<S>(m.leftCols(values.dim(3))));
  if (normaliser) ref::set_head_vector(*normaliser, b, h, ref::Vec<S>(m.col(m.cols() - 1)));
}

// The case's initial summaries in scalar S, as the family's batched memory (none without them).
template <class S>
std::optional<hla::BatchedSecondOrderMemory<S>> second_order_memory_in(const ValueMap& in, bool normalized) {
  if (!in.count(kKeyMoment)) return std::nullopt;
  ref::Tensor<S> c = cast_tensor<S>(in.at(kQueryValues)), g = cast_tensor<S>(in.at(kCross));
  if (normalized) {
    c = with_normaliser_column(c, cast_tensor<S>(in.at(kQuerySum)));
    g = with_normaliser_column(g, cast_tensor<S>(in.at(kCrossSum)));
  }
  return hla::BatchedSecondOrderMemory<S>{cast_tensor<S>(in.at(kKeyMoment)), std::move(c), std::move(g)};
}
template <class S>
std::optional<hla::BatchedAhlaMemory<S>> ahla_memory_in(const ValueMap& in) {
  if (!in.count(kKeyValues)) return std::nullopt;
  return hla::BatchedAhlaMemory<S>{cast_tensor<S>(in.at(kKeyValues)), cast_tensor<S>(in.at(kCross))};
}

hla::Options<double> options_of(Variant variant) {
  hla::Options<double> opt;
  opt.normalized = variant == Variant::second_order_normalized;
  if (opt.normalized) opt.eps = kNormalizedEps;
  return opt;
}

// |x| entrywise: the non-negative q, k of the normalised variant (see the file comment).
ref::Tensor<double> absolute(ref::Tensor<double> x) {
  for (double& e : x.data) e = std::fabs(e);
  return x;
}

// q, k, v of `s` drawn as the mechanism draws them (the file comment).
ValueMap draw_qkv(Rng& rng, const Shape& s, const KnobValues& kn, bool normalized) {
  const double unit = std::pow(static_cast<double>(s.K), -0.25);
  ValueMap in;
  in["q"] = plain_directions(rng, s, unit);
  in["k"] = keys_in(rng, s, kn, unit * kn.at("key_norm"));
  in["v"] = entries_in(rng, {s.B, s.T, s.H, s.V}, 1.0, kn);
  if (normalized) {
    in["q"] = absolute(std::move(in["q"]));
    in["k"] = absolute(std::move(in["k"]));
  }
  return in;
}

// The initial summaries the initial_state knob asks for: zeros, or per (sequence, head) the summaries of
// 1 to 16 earlier tokens (the file comment), from a stream of their own.
void add_initial_summaries(ValueMap& in, const Shape& s, std::uint64_t seed, const KnobValues& kn, Variant variant) {
  const InitialState choice = initial_state_of(kn);
  if (choice == InitialState::none) return;
  const bool normalized = variant == Variant::second_order_normalized;
  for (const InitialTensor& t : initial_tensors(variant)) in[t.name] = zeros_of<double>(t, s.B, s.H, s.K, s.V);
  if (choice != InitialState::random) return;
  Rng rng(mix_seed(seed, kInitialSummariesStream));
  const hla::Options<double> opt = options_of(variant);
  ref::for_each_head(s.B, s.H, [&](std::int64_t b, std::int64_t h) {
    const auto n = 1 + static_cast<std::int64_t>(rng.uniform() * kMaxInitialTokens);
    const ValueMap earlier = draw_qkv(rng, {1, n, 1, s.K, s.V}, kn, normalized);
    const ref::Mat<double> q = ref::head_rows(earlier.at("q"), 0, 0), k = ref::head_rows(earlier.at("k"), 0, 0),
                           v = ref::head_rows(earlier.at("v"), 0, 0);
    auto normaliser = [&](const char* name) { return normalized ? &in.at(name) : nullptr; };
    if (variant == Variant::ahla) {
      hla::AhlaState<double> st(opt, s.K, s.V);
      for (std::int64_t t = 0; t < n; ++t) st.step(q.row(t).transpose(), k.row(t).transpose(), v.row(t).transpose());
      set_head_summary(in.at(kKeyValues), nullptr, b, h, st.P_and_mK());
      set_head_summary(in.at(kCross), nullptr, b, h, st.E_and_n());
      return;
    }
    hla::SecondOrderState<double> st(opt, hla::SecondOrder::masked, s.K, s.V);
    for (std::int64_t t = 0; t < n; ++t) st.step(q.row(t).transpose(), k.row(t).transpose(), v.row(t).transpose());
    ref::set_head_state(in.at(kKeyMoment), b, h, st.SK());
    set_head_summary(in.at(kQueryValues), normaliser(kQuerySum), b, h, st.C_and_m());
    set_head_summary(in.at(kCross), normaliser(kCrossSum), b, h, st.G_and_h());
  });
}

// The gradient twin's dq, dk, dv of L = Σ⟨do, o⟩ (the normalised read's denominator not an output, so its
// cotangent is zero) and of each initial tensor (zeros without them), per head through hla_backward.h.
template <class S>
ValueMap hla_gradients(const ValueMap& in, Variant variant) {
  const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
  const ref::Tensor<S> d_o = cast_tensor<S>(in.at("do"));
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3), V = v.dim(3);
  hla::Options<S> opt;
  opt.normalized = variant == Variant::second_order_normalized;
  if (opt.normalized) opt.eps = ref::from_double<S>(kNormalizedEps);
  const auto second_start = second_order_memory_in<S>(in, opt.normalized);
  const auto ahla_start = ahla_memory_in<S>(in);
  ref::Tensor<S> dq({B, T, H, K}), dk({B, T, H, K}), dv({B, T, H, V});
  std::map<std::string, ref::Tensor<S>> d_initial;
  for (const InitialTensor& t : initial_tensors(variant)) d_initial.emplace(t.name, zeros_of<S>(t, B, H, K, V));
  auto normaliser = [&](const char* name) { return opt.normalized ? &d_initial.at(name) : nullptr; };
  ref::for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    hla::Problem<S> p{ref::head_rows(q, b, h), ref::head_rows(k, b, h), ref::head_rows(v, b, h), opt};
    if (second_start) hla::SecondOrderFamily::set_initial(p, *second_start, b, h);
    if (ahla_start) hla::AhlaFamily::set_initial(p, *ahla_start, b, h);
    const hla::Cotangents<S> c{ref::head_rows(d_o, b, h), std::nullopt};
    const hla::Gradients<S> g = variant == Variant::ahla ? hla::ahla_backward(p, c)
                                                         : hla::second_backward(p, hla::SecondOrder::masked, c);
    ref::set_head_rows(dq, b, h, g.dq);
    ref::set_head_rows(dk, b, h, g.dk);
    ref::set_head_rows(dv, b, h, g.dv);
    if (const auto& d = g.d_second_order_initial) {
      ref::set_head_state(d_initial.at(kKeyMoment), b, h, d->sk);
      set_head_summary(d_initial.at(kQueryValues), normaliser(kQuerySum), b, h, d->c);
      set_head_summary(d_initial.at(kCross), normaliser(kCrossSum), b, h, d->g);
    }
    if (const auto& d = g.d_ahla_initial) {
      set_head_summary(d_initial.at(kKeyValues), nullptr, b, h, d->p);
      set_head_summary(d_initial.at(kCross), nullptr, b, h, d->e);
    }
  });
  ValueMap out{{"dq", to_double_tensor(dq)}, {"dk", to_double_tensor(dk)}, {"dv", to_double_tensor(dv)}};
  for (const auto& [name, d] : d_initial) out.emplace("d" + name, to_double_tensor(d));
  return out;
}

// The twin's gradients: dq, dk, dv and d<name> of each initial tensor (float32, as the tensor is).
std::vector<TensorSpec> hla_gradient_specs(Variant variant) {
  std::vector<TensorSpec> g = {gradient_spec("dq", "BTHK", "∂L/∂q"), gradient_spec("dk", "BTHK", "∂L/∂k"),
                               gradient_spec("dv", "BTHV", "∂L/∂v")};
  for (const InitialTensor& t : initial_tensors(variant))
    g.push_back({.name = std::string("d") + t.name, .dims = t.dims, .meaning = std::string("∂L/∂") + t.name + " (float32)",
                 .always_fp32 = true});
  return g;
}

Mechanism hla_mechanism(Variant variant) {
  const bool normalized = variant == Variant::second_order_normalized;
  Mechanism m;
  switch (variant) {
    case Variant::second_order:
      m.name = "hla";
      m.description = "second-order masked higher-order linear attention: o_t = row t of ((A Aᵀ) ⊙ L) V, A = L ⊙ Q Kᵀ";
      m.parameters = {{"order", 2}, {"masked", true}, {"gamma", 1}, {"normalized", false}};
      break;
    case Variant::second_order_normalized:
      m.name = "hla-normalized";
      m.description = "second-order masked HLA, normalised: row t of ((A Aᵀ) ⊙ L) V over row t of ((A Aᵀ) ⊙ L) 1 + ε, "
                      "q and k non-negative";
      m.parameters = {{"order", 2}, {"masked", true}, {"gamma", 1}, {"normalized", true}, {"eps", kNormalizedEps},
                      {"inputs", "q, k with non-negative entries"}};
      break;
    case Variant::ahla:
      m.name = "ahla";
      m.description = "asymmetric higher-order linear attention: o_t = row t of ((A A) ⊙ L) V, A = L ⊙ Q Kᵀ";
      m.parameters = {{"order", 2}, {"asymmetric", true}, {"gamma", 1}, {"normalized", false}};
      break;
  }
  m.inputs = {{"q", "BTHK", "queries"}, {"k", "BTHK", "keys"}, {"v", "BTHV", "values"}};
  for (const InitialTensor& t : initial_tensors(variant))
    m.inputs.push_back({.name = t.name, .dims = t.dims, .meaning = t.meaning, .always_fp32 = true, .optional = true});
  m.parameters["initial_state"] =
      variant == Variant::ahla ? "optional summaries before the first token: initial_key_values P_0, initial_cross E_0"
      : normalized ? "optional summaries before the first token: initial_key_moment S^K_0, initial_query_values C_0, "
                     "initial_cross G_0, initial_query_sum m_0, initial_cross_sum h_0"
                   : "optional summaries before the first token: initial_key_moment S^K_0, initial_query_values C_0, initial_cross G_0";
  m.outputs = {{"o", "BTHV", "outputs", false}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖ in units of K^{-1/4}"}, entries_knob(), key_set_knob(), initial_state_knob()};
  m.edge_regimes = edge_regimes(false);
  m.forms = variant == Variant::ahla ? ref::forms_of<hla::AhlaFamily>() : ref::forms_of<hla::SecondOrderFamily>();
  m.generate = [variant, normalized](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
    ValueMap in = draw_qkv(rng, s, kn, normalized);
    add_initial_summaries(in, s, seed, kn, variant);
    return in;
  };
  // The output in scalar S, in `form`, with the chunked form's operands rounded to `operands`
  // (compute and compute_io differ only in these).
  auto outputs = [variant, normalized]<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk,
                                                ref::OperandFormat operands) {
    const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
    if (variant == Variant::ahla)
      return ValueMap{{"o", to_double_tensor(hla::hla_batched<hla::AhlaFamily, S>(q, k, v, {}, form, chunk, operands,
                                                                                   ahla_memory_in<S>(in)))}};
    hla::Options<S> opt;
    opt.normalized = normalized;
    if (normalized) opt.eps = ref::from_double<S>(kNormalizedEps);
    return ValueMap{{"o", to_double_tensor(hla::hla_batched<hla::SecondOrderFamily, S>(
                              q, k, v, opt, form, chunk, operands, second_order_memory_in<S>(in, normalized)))}};
  };
  set_compute(m, outputs);
  return m;
}
}  // namespace

void register_hla_mechanisms(std::vector<Mechanism>& out) {
  for (Variant v : {Variant::second_order, Variant::second_order_normalized, Variant::ahla}) {
    out.push_back(hla_mechanism(v));
    // The gradient twin (docs/gate.md "Gradient cases"), through the reference's backward verbs.
    out.push_back(gradient_twin(out.back(), hla_gradient_specs(v),
                                [v]<class S>(const ValueMap& in) { return hla_gradients<S>(in, v); }));
  }
}

}  // namespace larc::harness::detail
