// CCQ, curvature-conditioned query (reference/ccq.h, SPEC §2), on the GLA and GDN backbones as gate
// mechanisms "ccq-gla" and "ccq-gdn". Inputs: the backbone's (mechanisms "gla", "gdn": FLA layout, the
// same generator and knobs) plus lambda [B,T,H], the read gates λ_t ∈ (0, 1) in FLA's gate layout — SPEC's
// λ_t = σ(wᵀq_t + b) is a projection computed upstream of the kernel, as FLA's β is, so the generator
// draws it that way (one w per head) and the mechanism takes λ itself (ccq.h's Options::lambda).
// Uniform covariance, scale K^{-1/2} (or the case's: the scale_factor knob). CCQ's state is the
// backbone's memory and the key statistics (C, m, n): with the initial_state knob a case continues a
// sequence from the memory initial_state [B,H,K,V] and the statistics initial_key_gram C_0 [B,H,K,K],
// initial_key_sum m_0 [B,H,K] and initial_key_count n_0 [B,H] (zeros, or a random memory and the
// statistics of 1 to 16 earlier unit keys), all float32. Outputs: o [B,T,H,V], the
// backbone's final state [B,H,K,V], and the key statistics C_T = C_0 + Σ_t k_t k_tᵀ [B,H,K,K] and
// m_T = m_0 + Σ_t k_t [B,H,K] (n_T = n_0 + T), all but o in float32.
// Forms: ccq.h's family (serial, chunked, streamed) per head: q̃ by the recurrent or chunkwise
// conditioner, then the backbone's form with q̃ (streamed: both advance token by token).
// Their gradient twins "ccq-gla-backward" and "ccq-gdn-backward" (docs/gate.md "Gradient cases"): the
// gradient of every required input (dq, dk, dv, the backbone's dgk or dg and dbeta, dlambda) of
// L = Σ⟨do, o⟩ + ⟨dht, final_state⟩ through ccq_backward.h, and of the initial state: dh0 and the
// initial statistics' dC0, dm0, dn0 (zeros without one); the final statistics' cotangents are zero.
#include <cmath>
#include <stdexcept>

#include "larc/reference/ccq_backward.h"
#include "mechanism_support.h"

namespace larc::harness::detail {

namespace {
namespace ccq = ref::ccq;

constexpr std::uint64_t kReadGateStream = 0xcc0;      // mix_seed stream of λ's weights
constexpr std::uint64_t kInitialStatsStream = 0xcc1;  // mix_seed stream of the initial statistics' keys
constexpr std::int64_t kMaxInitialKeys = 16;          // a random initial state summarises 1 to 16 keys

const char* const kInitialGram = "initial_key_gram";
const char* const kInitialSum = "initial_key_sum";
const char* const kInitialCount = "initial_key_count";

std::vector<TensorSpec> initial_stats_specs() {
  return {{.name = kInitialGram, .dims = "BHKK", .meaning = "C_0, the key Gram before the first token (zero when absent)",
           .always_fp32 = true, .optional = true},
          {.name = kInitialSum, .dims = "BHK", .meaning = "m_0, the key sum before the first token (zero when absent)",
           .always_fp32 = true, .optional = true},
          {.name = kInitialCount, .dims = "BH", .meaning = "n_0 ≥ 0, the keys counted before the first token (zero when absent)",
           .always_fp32 = true, .optional = true, .min = 0}};
}

// The initial statistics the initial_state knob asks for: zeros, or per (sequence, head) those of
// n_0 ~ U{1, …, 16} unit keys (a valid state: n_0 > 0 and C_0 − m_0 m_0ᵀ/n_0 positive semidefinite), from
// a stream of their own.
void add_initial_stats(ValueMap& in, const Shape& s, std::uint64_t seed, const KnobValues& knobs) {
  const InitialState choice = initial_state_of(knobs);
  if (choice == InitialState::none) return;
  ref::Tensor<double> gram({s.B, s.H, s.K, s.K}), sum({s.B, s.H, s.K}), count({s.B, s.H});
  if (choice == InitialState::random) {
    Rng rng(mix_seed(seed, kInitialStatsStream));
    for (std::int64_t bh = 0; bh < s.B * s.H; ++bh) {
      const auto n = 1 + static_cast<std::int64_t>(rng.uniform() * kMaxInitialKeys);
      const ref::Tensor<double> keys = plain_directions(rng, {1, n, 1, s.K, s.V}, 1.0);
      count.data[bh] = static_cast<double>(n);
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t a = 0; a < s.K; ++a) {
          sum.data[bh * s.K + a] += keys.data[j * s.K + a];
          for (std::int64_t c = 0; c < s.K; ++c) gram.data[(bh * s.K + a) * s.K + c] += keys.data[j * s.K + a] * keys.data[j * s.K + c];
        }
    }
  }
  in[kInitialGram] = std::move(gram);
  in[kInitialSum] = std::move(sum);
  in[kInitialCount] = std::move(count);
}

// The statistics every head starts from, in scalar S: the case's initial ones (cast once), or none.
template <class S>
class StartStats {
 public:
  StartStats(const ValueMap& in, std::int64_t K) : K_(K), gram_(optional_input<S>(in, kInitialGram)) {
    if (gram_) sum_ = cast_tensor<S>(in.at(kInitialSum)), count_ = cast_tensor<S>(in.at(kInitialCount));
  }
  ccq::KeyStats<S> of(std::int64_t b, std::int64_t h) const {
    if (!gram_) return ccq::empty_stats<S>(K_);
    return {ref::head_state(*gram_, b, h), ref::head_vector(sum_, b, h), count_.data[b * gram_->dim(1) + h]};
  }

 private:
  std::int64_t K_;
  std::optional<ref::Tensor<S>> gram_;
  ref::Tensor<S> sum_, count_;
};

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

// The case's CCQ problems, in scalar S: head (b, h)'s is the backbone's problem from
// backbone_problem(q, k, v, b, h) (its gates, scale and initial memory), the case's λ (given, so no w),
// uniform covariance and the case's initial statistics.
template <class S, class BackboneProblem>
class HeadProblems {
 public:
  HeadProblems(const ValueMap& in, BackboneProblem backbone_problem)
      : q(cast_tensor<S>(in.at("q"))), k(cast_tensor<S>(in.at("k"))), v(cast_tensor<S>(in.at("v"))),
        lambda_(cast_tensor<S>(in.at("lambda"))), backbone_problem_(std::move(backbone_problem)), starts_(in, q.dim(3)) {}
  auto operator()(std::int64_t b, std::int64_t h) const {
    ccq::Problem<S, decltype(backbone_problem_(q, k, v, b, h))> p{backbone_problem_(q, k, v, b, h), {}, starts_.of(b, h)};
    p.opt.lambda = ref::head_gate(lambda_, b, h);
    return p;
  }
  const ref::Tensor<S> q, k, v;

 private:
  ref::Tensor<S> lambda_;
  BackboneProblem backbone_problem_;
  StartStats<S> starts_;
};

// The gradient twin's gradients per (sequence, head) through ccq::backward (docs/gradients.md, "CCQ"),
// with the forward's problems (HeadProblems) and no cotangent of the final statistics. finish(b, h, the
// backbone's problem, the backbone's gradients) writes the backbone's decay and step gradients. dq and
// dk are total: the read's path through q̃ and the conditioner's through Σ_t (dk's path through the key
// statistics).
template <class S, class BackboneProblem, class Finish>
ValueMap ccq_gradients(const ValueMap& in, BackboneProblem backbone_problem, Finish finish) {
  const HeadProblems<S, BackboneProblem> problems(in, std::move(backbone_problem));
  const ref::Tensor<S>&q = problems.q, &k = problems.k, &v = problems.v;
  const ref::BatchedCotangents<S> cot = cotangents_in<S>(in);
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3);
  ref::Tensor<S> dq(q.shape), dk(k.shape), dv(v.shape), dlambda({B, T, H}), dh0({B, H, K, v.dim(3)}),
      dc0({B, H, K, K}), dm0({B, H, K}), dn0({B, H});
  ref::for_each_head(B, H, [&](std::int64_t b, std::int64_t h) {
    const auto p = problems(b, h);
    const auto g = ccq::backward(p, ccq::Cotangents<S>{cot.head_d_o(b, h), cot.head_d_final_state(b, h), std::nullopt});
    ref::set_head_rows(dq, b, h, g.backbone.dq);
    ref::set_head_rows(dk, b, h, g.backbone.dk);
    ref::set_head_rows(dv, b, h, g.backbone.dv);
    ref::set_head_gate(dlambda, b, h, g.dlambda);
    ref::set_head_state(dh0, b, h, g.backbone.d_initial_state);
    ref::set_head_state(dc0, b, h, g.d_initial_stats.c);
    ref::set_head_vector(dm0, b, h, g.d_initial_stats.m);
    dn0.data[b * H + h] = g.d_initial_stats.n;
    finish(b, h, p.backbone, g.backbone);
  });
  return ValueMap{{"dq", to_double_tensor(dq)},   {"dk", to_double_tensor(dk)},   {"dv", to_double_tensor(dv)},
                  {"dlambda", to_double_tensor(dlambda)}, {"dh0", to_double_tensor(dh0)}, {"dc0", to_double_tensor(dc0)},
                  {"dm0", to_double_tensor(dm0)}, {"dn0", to_double_tensor(dn0)}};
}

// A twin's gradients: one per required input, dh0 and the initial statistics'.
std::vector<TensorSpec> ccq_gradient_specs(const Mechanism& forward) {
  std::vector<TensorSpec> g = required_input_gradient_specs(forward);
  g.push_back(initial_state_gradient_spec());
  g.push_back({.name = "dc0", .dims = "BHKK", .meaning = "∂L/∂initial_key_gram (float32)", .always_fp32 = true});
  g.push_back({.name = "dm0", .dims = "BHK", .meaning = "∂L/∂initial_key_sum (float32)", .always_fp32 = true});
  g.push_back({.name = "dn0", .dims = "BH", .meaning = "∂L/∂initial_key_count (float32)", .always_fp32 = true});
  return g;
}

const Mechanism& registered(const std::vector<Mechanism>& out, const std::string& name) {
  for (const Mechanism& m : out)
    if (m.name == name) return m;
  throw std::logic_error("ccq: the backbone mechanism '" + name + "' must be registered before the CCQ mechanisms");
}

// CCQ over `backbone` (of reference family Backbone); backbone_problems<S>(inputs) gives the callable
// (q, k, v, b, h) → the backbone's problem of head (b, h) that HeadProblems takes.
template <class Backbone, class BackboneProblems>
Mechanism ccq_on(const Mechanism& backbone, BackboneProblems backbone_problems) {
  Mechanism m;
  m.name = "ccq-" + backbone.name;
  m.description = "curvature-conditioned query on " + backbone.name +
                  " (SPEC §2): q̃_t = (I − λ_t Σ_t) q_t, Σ_t the uniform key covariance; the backbone's write, its read with q̃";
  // The backbone's inputs (its initial state is CCQ's memory; the statistics are CCQ's own). One value
  // head per query/key head: the conditioner is per head.
  for (const TensorSpec& in : backbone.inputs)
    if (!in.optional) m.inputs.push_back(with_head_axis(in, 'H'));
  m.inputs.push_back({"lambda", "BTH", "read gates λ_t ∈ (0, 1), drawn as σ(wᵀq_t + b)"});
  m.inputs.push_back(initial_state_spec());
  for (const TensorSpec& t : initial_stats_specs()) m.inputs.push_back(t);
  m.inputs.push_back(scale_spec());
  m.outputs = {{"o", "BTHV", "outputs o_t = scale · S_tᵀ q̃_t", false},
               {"final_state", "BHKV", "the backbone's state after the last token", true},
               {"final_key_gram", "BHKK", "C_T = Σ_t k_t k_tᵀ", true},
               {"final_key_sum", "BHK", "m_T = Σ_t k_t", true}};
  m.knobs = backbone.knobs;
  m.knobs.push_back({"lambda_gain", 0, 4, 1, false, "per-head w ~ N(0, gain²/K) in λ_t = σ(wᵀq_t + b)"});
  m.knobs.push_back({"lambda_bias", -6, 6, 0, false, "b in λ_t = σ(wᵀq_t + b)"});
  m.edge_regimes = backbone.edge_regimes;
  m.parameters = backbone.parameters;
  m.parameters.erase("fla_function");  // FLA has no CCQ
  m.parameters["backbone"] = backbone.name;
  m.parameters["covariance"] = "uniform";
  m.parameters["lambda"] = "input [B,T,H]; generated as sigmoid(w_h . q_t + lambda_bias), w_h ~ N(0, lambda_gain^2/K)";
  m.forms = ref::forms_of<ccq::Family<Backbone>>();
  m.generate = [generate_backbone = backbone.generate](const Shape& s, std::uint64_t seed, const KnobValues& kn) {
    ValueMap in = generate_backbone(s, seed, kn);
    Rng rng(mix_seed(seed, kReadGateStream));
    in["lambda"] = read_gates(rng, in.at("q"), kn.at("lambda_gain"), kn.at("lambda_bias"));
    add_initial_stats(in, s, seed, kn);  // the backbone's generator added the memory
    return in;
  };
  // The outputs in scalar S, in `form`, with the chunked form's operands (the conditioner's and the
  // backbone's) rounded to `operands` (compute and compute_io differ only in these).
  auto outputs = [backbone_problems]<class S>(const ValueMap& in, ref::Form form, std::int64_t chunk, ref::OperandFormat operands) {
    const HeadProblems<S, decltype(backbone_problems.template operator()<S>(in))> problems(
        in, backbone_problems.template operator()<S>(in));
    const std::int64_t B = problems.q.dim(0), T = problems.q.dim(1), H = problems.q.dim(2), K = problems.q.dim(3),
                       V = problems.v.dim(3);
    ref::Tensor<S> o({B, T, H, V}), final_state({B, H, K, V}), key_gram({B, H, K, K}), key_sum({B, H, K});
    ref::run_each_head<ccq::Family<Backbone>, S>(B, H, form, chunk, operands, problems,
                                                 [&](std::int64_t b, std::int64_t h, const ccq::Result<S>& r) {
                                                   ref::set_head_rows(o, b, h, r.o);
                                                   ref::set_head_state(final_state, b, h, r.final_state);
                                                   ref::set_head_state(key_gram, b, h, r.final_stats.c);
                                                   ref::set_head_vector(key_sum, b, h, r.final_stats.m);
                                                 });
    return ValueMap{{"o", to_double_tensor(o)},
                    {"final_state", to_double_tensor(final_state)},
                    {"final_key_gram", to_double_tensor(key_gram)},
                    {"final_key_sum", to_double_tensor(key_sum)}};
  };
  set_compute(m, outputs);
  return m;
}

// The backbones' problems of head (b, h) with the case's gates, scale and initial memory, and q, k, v
// given (the conditioned queries' head problems and the gradient twins').
struct GlaProblems {
  template <class S>
  auto operator()(const ValueMap& in) const {
    return [gk = cast_tensor<S>(in.at("gk")), scale = scale_in<S>(in), h0 = initial_state_in<S>(in)](
               const ref::Tensor<S>& q, const ref::Tensor<S>& k, const ref::Tensor<S>& v, std::int64_t b, std::int64_t h) {
      return ref::gla::head_problem<S>(q, k, v, gk, scale, h0, b, h);
    };
  }
};
struct GdnProblems {
  template <class S>
  auto operator()(const ValueMap& in) const {
    return [g = cast_tensor<S>(in.at("g")), beta = cast_tensor<S>(in.at("beta")), scale = scale_in<S>(in),
            h0 = initial_state_in<S>(in)](const ref::Tensor<S>& q, const ref::Tensor<S>& k, const ref::Tensor<S>& v,
                                          std::int64_t b, std::int64_t h) {
      return ref::delta_rule::head_problem<S>(q, k, v, ref::delta_rule::gdn_head_gates(g, beta, b, h), scale, h0, b, h);
    };
  }
};
}  // namespace

void register_ccq_mechanisms(std::vector<Mechanism>& out) {
  Mechanism on_gla = ccq_on<ref::gla::Family>(registered(out, "gla"), GlaProblems{});
  Mechanism on_gdn = ccq_on<ref::delta_rule::Family>(registered(out, "gdn"), GdnProblems{});
  // The gradient twins (after both forwards, so that the forwards keep their places in the registry).
  Mechanism gla_twin = gradient_twin(on_gla, ccq_gradient_specs(on_gla), []<class S>(const ValueMap& in) {
    ref::Tensor<S> dgk(in.at("gk").shape);
    ValueMap out = ccq_gradients<S>(in, GlaProblems{}.operator()<S>(in),
                                    [&](std::int64_t b, std::int64_t h, const ref::gla::Problem<S>& p, const ref::gla::Gradients<S>& g) {
                                      ref::set_head_rows(dgk, b, h, ref::gla::log_decay_gradient(p.a, g.da));
                                    });
    out.emplace("dgk", to_double_tensor(dgk));
    return out;
  });
  Mechanism gdn_twin = gradient_twin(on_gdn, ccq_gradient_specs(on_gdn), []<class S>(const ValueMap& in) {
    ref::Tensor<S> dg(in.at("g").shape), dbeta(in.at("beta").shape);
    ValueMap out = ccq_gradients<S>(
        in, GdnProblems{}.operator()<S>(in),
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
