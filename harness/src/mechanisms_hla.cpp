// The HLA family (reference/hla.h, SPEC §5) as gate mechanisms, all without decay (γ = 1) and without
// a read scale (SPEC §5 has none); q, k [B,T,H,K], v [B,T,H,V]; output o [B,T,H,V]; zero initial
// state (the reference's streaming states start empty), so no state tensors:
//   "hla"            second-order masked:      o_t = q_tᵀ(S^K_t C_t − G_t) = row t of ((A Aᵀ) ⊙ L) V (HLA-C1)
//   "hla-normalized" the same over q_tᵀ(S^K_t m_t − h_t) + ε, ε = 1e-6 (HLA-C2)
//   "ahla"           asymmetric:               o_t = q_tᵀ E_t = row t of ((A A) ⊙ L) V (HLA-C6)
// Queries and keys are drawn with norm K^{-1/4} so that the outputs stay O(T) rather than O(T·K).
// The normalised variant has no feature map in SPEC §5: with signed q, k its denominator
// Σ_{i≤j≤t} (q_t·k_i)(k_i·q_j) crosses zero and o_t is unbounded, so its q and k have non-negative
// entries (the image of a positive feature map), which keeps every denominator ≥ (q_t·k_t)² > 0.
#include <cmath>

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

// The gradient twin's dq, dk, dv of L = Σ⟨do, o⟩ (the normalised read's denominator not an output, so its
// cotangent is zero), per head through hla_backward.h.
template <class S>
ValueMap hla_gradients(const ValueMap& in, Variant variant) {
  const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
  const ref::Tensor<S> d_o = cast_tensor<S>(in.at("do"));
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3), V = v.dim(3);
  hla::Options<S> opt;
  opt.normalized = variant == Variant::second_order_normalized;
  if (opt.normalized) opt.eps = ref::from_double<S>(kNormalizedEps);
  ref::Tensor<S> dq({B, T, H, K}), dk({B, T, H, K}), dv({B, T, H, V});
  ref::for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const hla::Problem<S> p{ref::head_rows(q, b, h), ref::head_rows(k, b, h), ref::head_rows(v, b, h), opt};
    const hla::Cotangents<S> c{ref::head_rows(d_o, b, h), std::nullopt};
    const hla::Gradients<S> g = variant == Variant::ahla ? hla::ahla_backward(p, c)
                                                         : hla::second_backward(p, hla::SecondOrder::masked, c);
    ref::set_head_rows(dq, b, h, g.dq);
    ref::set_head_rows(dk, b, h, g.dk);
    ref::set_head_rows(dv, b, h, g.dv);
  });
  return {{"dq", to_double_tensor(dq)}, {"dk", to_double_tensor(dk)}, {"dv", to_double_tensor(dv)}};
}

// |x| entrywise: the non-negative q, k of the normalised variant (see the file comment).
ref::Tensor<double> absolute(ref::Tensor<double> x) {
  for (double& e : x.data) e = std::fabs(e);
  return x;
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
  m.outputs = {{"o", "BTHV", "outputs", false}};
  m.knobs = {{"collinearity", 0, 0.999, 0, false, "keys c·u + (1−c)·z toward one shared direction u per head"},
             {"key_norm", 0.1, 10, 1, true, "‖k_t‖ in units of K^{-1/4}"}, entries_knob(), key_set_knob()};
  m.edge_regimes = edge_regimes(false);
  m.forms = variant == Variant::ahla ? ref::forms_of<hla::AhlaFamily>() : ref::forms_of<hla::SecondOrderFamily>();
  m.generate = [normalized](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    Rng rng(seed);
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
  };
  // The output in scalar S, in `form`, with the chunked form's operands rounded to `operands`
  // (compute and compute_io differ only in these).
  auto outputs = [variant, normalized]<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk,
                                                ref::OperandFormat operands) {
    const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
    if (variant == Variant::ahla)
      return ValueMap{{"o", to_double_tensor(hla::hla_batched<hla::AhlaFamily, S>(q, k, v, {}, form, chunk, operands))}};
    hla::Options<S> opt;
    opt.normalized = normalized;
    if (normalized) opt.eps = ref::from_double<S>(kNormalizedEps);
    return ValueMap{{"o", to_double_tensor(hla::hla_batched<hla::SecondOrderFamily, S>(q, k, v, opt, form, chunk, operands))}};
  };
  set_compute(m, outputs);
  return m;
}
}  // namespace

void register_hla_mechanisms(std::vector<Mechanism>& out) {
  for (Variant v : {Variant::second_order, Variant::second_order_normalized, Variant::ahla}) {
    out.push_back(hla_mechanism(v));
    // The gradient twin (docs/gate.md "Gradient cases"), through the reference's backward verbs.
    out.push_back(gradient_twin(out.back(),
                                {gradient_spec("dq", "BTHK", "∂L/∂q"), gradient_spec("dk", "BTHK", "∂L/∂k"),
                                 gradient_spec("dv", "BTHV", "∂L/∂v")},
                                [v]<class S>(const ValueMap& in) { return hla_gradients<S>(in, v); }));
  }
}

}  // namespace larc::harness::detail
