// CCQ, curvature-conditioned query (reference/ccq.h, SPEC §2), on the GLA and GDN backbones as gate
// mechanisms "ccq-gla" and "ccq-gdn". Inputs: the backbone's (mechanisms "gla", "gdn": FLA layout, the
// same generator and knobs) plus lambda [B,T,H], the read gates λ_t ∈ (0, 1) in FLA's gate layout — SPEC's
// λ_t = σ(wᵀq_t + b) is a projection computed upstream of the kernel, as FLA's β is, so the generator
// draws it that way (one w per head) and the mechanism takes λ itself (ccq.h's Options::lambda).
// Uniform covariance, zero initial state and statistics, scale K^{-1/2} (or the case's: the
// scale_factor knob). Outputs: o [B,T,H,V], the
// backbone's final state [B,H,K,V], and the key statistics C_T = Σ_t k_t k_tᵀ [B,H,K,K] and
// m_T = Σ_t k_t [B,H,K] (n_T = T), all but o in float32.
// Forms: q̃ by ccq.h's recurrent (serial, streamed) or chunkwise (chunked) conditioner, then the
// backbone's batched wrapper in the same form — the composition ccq.h's verbs make per head.
// Their gradient twins "ccq-gla-backward" and "ccq-gdn-backward" (docs/gate.md "Gradient cases"): the
// gradient of every required input (dq, dk, dv, the backbone's dgk or dg and dbeta, dlambda) of
// L = Σ⟨do, o⟩ + ⟨dht, final_state⟩ through ccq_backward.h; the key statistics' cotangents are zero.
#include <cmath>
#include <stdexcept>

#include "larc/reference/ccq_backward.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace ccq = ref::ccq;

constexpr std::uint64_t kReadGateStream = 0xcc0;  // mix_seed stream of λ's weights

// The conditioned queries q̃ [B,T,H,K] of every head (uniform covariance, empty initial statistics)
// and the final key statistics C_T [B,H,K,K], m_T [B,H,K]; `operands` rounds the chunkwise
// conditioner's product operands (ccq.h conditioned_queries_chunked).
template <class S>
struct ConditionedQueries {
  ref::Tensor<S> q_tilde, key_gram, key_sum;
};

template <class S>
ConditionedQueries<S> conditioned_queries(const ref::Tensor<S>& q, const ref::Tensor<S>& k, const ref::Tensor<S>& lambda,
                                          ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3);
  ConditionedQueries<S> r{ref::Tensor<S>(q.shape), ref::Tensor<S>({B, H, K, K}), ref::Tensor<S>({B, H, K})};
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < H; ++h) {
      const ref::Mat<S> qh = ref::head_rows(q, b, h), kh = ref::head_rows(k, b, h);
      const ref::Vec<S> lh = ref::head_gate(lambda, b, h), uniform = ref::Vec<S>::Ones(T);
      const ccq::Conditioned<S> c =
          form == ref::Form::chunked
              ? ccq::conditioned_queries_chunked<S>(qh, kh, lh, uniform, ccq::empty_stats<S>(K), chunk,
                                                    ref::MatmulOperands<S>(operands))
              : ccq::conditioned_queries_recurrent<S>(qh, kh, lh, uniform, ccq::empty_stats<S>(K));
      ref::set_head_rows(r.q_tilde, b, h, c.q);
      ref::set_head_state(r.key_gram, b, h, c.final_stats.c);
      for (std::int64_t i = 0; i < K; ++i) r.key_sum.data[(b * H + h) * K + i] = c.final_stats.m(i);
    }
  }
  return r;
}

// λ [B,T,H]: σ(w_hᵀ q_t + bias) with one w_h ~ N(0, gain²/K) per head, shared by the batch.
ref::Tensor<double> read_gates(Rng& rng, const ref::Tensor<double>& q, double gain, double bias) {
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3);
  const ref::Tensor<double> w = normal_tensor(rng, {H, K}, gain / std::sqrt(static_cast<double>(K)));
  ref::Tensor<double> lambda({B, T, H});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < H; ++h) {
        double logit = bias;
        for (std::int64_t i = 0; i < K; ++i) logit += w.data[h * K + i] * q.data[((b * T + t) * H + h) * K + i];
        lambda.data[(b * T + t) * H + h] = 1 / (1 + std::exp(-logit));
      }
  return lambda;
}

// The gradient twin's gradients per (sequence, head) through ccq::backward (docs/gradients.md, "CCQ"),
// with the forward's conditioner: λ given (the case's lambda), uniform covariance, empty initial
// statistics, and no cotangent of the final statistics. head_problem(q, k, v, b, h) is the backbone's
// problem of head (b, h) with the case's queries; finish(b, h, that problem, the backbone's gradients)
// writes the backbone's decay and step gradients. dq and dk are total: the read's path through q̃ and
// the conditioner's through Σ_t (dk's path through the key statistics).
template <class S, class HeadProblem, class Finish>
ValueMap ccq_gradients(const ValueMap& in, HeadProblem head_problem, Finish finish) {
  const ref::Tensor<S> q = cast_tensor<S>(in.at("q")), k = cast_tensor<S>(in.at("k")), v = cast_tensor<S>(in.at("v"));
  const ref::Tensor<S> lambda = cast_tensor<S>(in.at("lambda"));
  const ref::BatchedCotangents<S> cot = cotangents_in<S>(in);
  ref::Tensor<S> dq(q.shape), dk(k.shape), dv(v.shape), dlambda(lambda.shape);
  for (std::int64_t b = 0; b < q.dim(0); ++b) {
    for (std::int64_t h = 0; h < q.dim(2); ++h) {
      ccq::Problem<S, decltype(head_problem(q, k, v, b, h))> p{head_problem(q, k, v, b, h), {}, std::nullopt};
      p.opt.lambda = ref::head_gate(lambda, b, h);
      const auto g = ccq::backward(p, ccq::Cotangents<S>{cot.head_d_o(b, h), cot.head_d_final_state(b, h), std::nullopt});
      ref::set_head_rows(dq, b, h, g.backbone.dq);
      ref::set_head_rows(dk, b, h, g.backbone.dk);
      ref::set_head_rows(dv, b, h, g.backbone.dv);
      ref::set_head_gate(dlambda, b, h, g.dlambda);
      finish(b, h, p.backbone, g.backbone);
    }
  }
  return ValueMap{{"dq", to_double_tensor(dq)}, {"dk", to_double_tensor(dk)}, {"dv", to_double_tensor(dv)},
                  {"dlambda", to_double_tensor(dlambda)}};
}

const Mechanism& registered(const std::vector<Mechanism>& out, const std::string& name) {
  for (const Mechanism& m : out)
    if (m.name == name) return m;
  throw std::logic_error("ccq: the backbone mechanism '" + name + "' must be registered before the CCQ mechanisms");
}

// CCQ over `backbone`; run_backbone(inputs, q̃, form, chunk, operands) is the backbone's batched wrapper
// with q̃.
template <class RunBackbone>
Mechanism ccq_on(const Mechanism& backbone, std::vector<ref::Form> forms, RunBackbone run_backbone) {
  Mechanism m;
  m.name = "ccq-" + backbone.name;
  m.description = "curvature-conditioned query on " + backbone.name +
                  " (SPEC §2): q̃_t = (I − λ_t Σ_t) q_t, Σ_t the uniform key covariance; the backbone's write, its read with q̃";
  // CCQ's forms start from a zero state: the backbone's optional initial state and its knob are not
  // CCQ's; its read scale is. One value head per query/key head: the conditioner is per head.
  for (const TensorSpec& in : backbone.inputs)
    if (!in.optional) m.inputs.push_back(with_head_axis(in, 'H'));
  m.inputs.push_back({"lambda", "BTH", "read gates λ_t ∈ (0, 1), drawn as σ(wᵀq_t + b)"});
  m.inputs.push_back(scale_spec());
  m.outputs = {{"o", "BTHV", "outputs o_t = scale · S_tᵀ q̃_t", false},
               {"final_state", "BHKV", "the backbone's state after the last token", true},
               {"final_key_gram", "BHKK", "C_T = Σ_t k_t k_tᵀ", true},
               {"final_key_sum", "BHK", "m_T = Σ_t k_t", true}};
  for (const Knob& k : backbone.knobs)
    if (k.name != kInitialStateKnob) m.knobs.push_back(k);
  m.knobs.push_back({"lambda_gain", 0, 4, 1, false, "per-head w ~ N(0, gain²/K) in λ_t = σ(wᵀq_t + b)"});
  m.knobs.push_back({"lambda_bias", -6, 6, 0, false, "b in λ_t = σ(wᵀq_t + b)"});
  m.edge_regimes = backbone.edge_regimes;
  m.parameters = backbone.parameters;
  m.parameters.erase("fla_function");  // FLA has no CCQ
  m.parameters["backbone"] = backbone.name;
  m.parameters["covariance"] = "uniform";
  m.parameters["lambda"] = "input [B,T,H]; generated as sigmoid(w_h . q_t + lambda_bias), w_h ~ N(0, lambda_gain^2/K)";
  m.forms = std::move(forms);
  m.generate = [generate_backbone = backbone.generate](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    ValueMap in = generate_backbone(s, seed, kn);
    Rng rng(mix_seed(seed, kReadGateStream));
    in["lambda"] = read_gates(rng, in.at("q"), kn.at("lambda_gain"), kn.at("lambda_bias"));
    return in;
  };
  // The outputs in scalar S, in `form`, with the chunked form's operands (the conditioner's and the
  // backbone's) rounded to `operands` (compute and compute_io differ only in these).
  auto outputs = [run_backbone]<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const ConditionedQueries<S> c = conditioned_queries<S>(cast_tensor<S>(in.at("q")), cast_tensor<S>(in.at("k")),
                                                           cast_tensor<S>(in.at("lambda")), form, chunk, operands);
    const auto r = run_backbone(in, c.q_tilde, form, chunk, operands);
    return ValueMap{{"o", to_double_tensor(r.o)},
                    {"final_state", to_double_tensor(r.final_state)},
                    {"final_key_gram", to_double_tensor(c.key_gram)},
                    {"final_key_sum", to_double_tensor(c.key_sum)}};
  };
  set_compute(m, outputs);
  return m;
}
}  // namespace

void register_ccq_mechanisms(std::vector<Mechanism>& out) {
  Mechanism on_gla = ccq_on(registered(out, "gla"), {ref::Form::serial, ref::Form::chunked},
                            []<class S>(const ValueMap& in, const ref::Tensor<S>& q_tilde, ref::Form form, std::int64_t chunk,
                                        ref::OperandFormat operands) {
                              return ref::gla::gla_batched<S>(q_tilde, cast_tensor<S>(in.at("k")), cast_tensor<S>(in.at("v")),
                                                              cast_tensor<S>(in.at("gk")), scale_in<S>(in), {}, form, chunk,
                                                              operands);
                            });
  Mechanism on_gdn = ccq_on(registered(out, "gdn"), {ref::Form::serial, ref::Form::chunked, ref::Form::streamed},
                            []<class S>(const ValueMap& in, const ref::Tensor<S>& q_tilde, ref::Form form, std::int64_t chunk,
                                        ref::OperandFormat operands) {
                              return ref::delta_rule::gdn_batched<S>(q_tilde, cast_tensor<S>(in.at("k")),
                                                                     cast_tensor<S>(in.at("v")), cast_tensor<S>(in.at("g")),
                                                                     cast_tensor<S>(in.at("beta")), scale_in<S>(in), {}, form,
                                                                     chunk, operands);
                            });
  // The gradient twins (after both forwards, so that the forwards keep their places in the registry).
  Mechanism gla_twin = gradient_twin(on_gla, required_input_gradient_specs(on_gla), []<class S>(const ValueMap& in) {
    const ref::Tensor<S> gk = cast_tensor<S>(in.at("gk"));
    const std::optional<S> scale = scale_in<S>(in);
    ref::Tensor<S> dgk(gk.shape);
    ValueMap out = ccq_gradients<S>(
        in,
        [&](const ref::Tensor<S>& q, const ref::Tensor<S>& k, const ref::Tensor<S>& v, std::int64_t b, std::int64_t h) {
          return ref::gla::head_problem<S>(q, k, v, gk, scale, std::nullopt, b, h);
        },
        [&](std::int64_t b, std::int64_t h, const ref::gla::Problem<S>& p, const ref::gla::Gradients<S>& g) {
          ref::set_head_rows(dgk, b, h, ref::gla::log_decay_gradient(p.a, g.da));
        });
    out.emplace("dgk", to_double_tensor(dgk));
    return out;
  });
  Mechanism gdn_twin = gradient_twin(on_gdn, required_input_gradient_specs(on_gdn), []<class S>(const ValueMap& in) {
    const ref::Tensor<S> g = cast_tensor<S>(in.at("g")), beta = cast_tensor<S>(in.at("beta"));
    const std::optional<S> scale = scale_in<S>(in);
    ref::Tensor<S> dg(g.shape), dbeta(beta.shape);
    ValueMap out = ccq_gradients<S>(
        in,
        [&](const ref::Tensor<S>& q, const ref::Tensor<S>& k, const ref::Tensor<S>& v, std::int64_t b, std::int64_t h) {
          return ref::delta_rule::head_problem<S>(q, k, v, ref::delta_rule::gdn_head_gates(g, beta, b, h), scale,
                                                  std::nullopt, b, h);
        },
        [&](std::int64_t b, std::int64_t h, const ref::delta_rule::Problem<S>& p, const ref::delta_rule::Gradients<S>& gr) {
          ref::set_head_gate(dg, b, h, ref::delta_rule::log_decay_gradient(p.alpha, gr.dalpha));
          ref::set_head_gate(dbeta, b, h, gr.dbeta);
        });
    out.emplace("dg", to_double_tensor(dg));
    out.emplace("dbeta", to_double_tensor(dbeta));
    return out;
  });
  out.push_back(std::move(on_gla));
  out.push_back(std::move(on_gdn));
  out.push_back(std::move(gla_twin));
  out.push_back(std::move(gdn_twin));
}

}  // namespace larc::harness::detail
