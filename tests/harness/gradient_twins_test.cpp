// Every gradient twin (docs/gate.md "Gradient cases") is the gradient of its forward mechanism's loss
// L = Σ⟨do, o⟩ + ⟨dht, final_state⟩: each gradient output is named and shaped as the input it is the
// gradient of, and agrees with central differences of the forward mechanism computed in double, at three
// elements of that input (in every form the twin has), with a random initial state, a read scale and grouped value heads wherever the
// mechanism has them. This checks the harness's plumbing of the reference's backward verbs (names,
// layouts, the scale, the group sums, the initial state's gradient, a composition's paths), which the
// gate — oracle and baseline from the same verb — cannot see. Planted plumbing defects must fail it.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "larc/harness/gate.h"
#include "larc/reference/ccq.h"
#include "qk_l2norm_front_ends.h"

namespace {

namespace h = larc::harness;
namespace ref = larc::ref;

// The input a gradient output is the gradient of.
std::string input_of(const std::string& gradient) {
  if (gradient == "dh0") return "initial_state";
  if (gradient == "dz0") return "initial_normalizer";
  if (gradient == "dc0") return "initial_key_gram";  // CCQ's initial key statistics
  if (gradient == "dm0") return "initial_key_sum";
  if (gradient == "dn0") return "initial_key_count";
  return gradient.substr(1);  // dq → q, dgk → gk, dbeta → beta, ...
}

double loss(const h::Mechanism& forward, const h::ValueMap& in) {
  const h::ValueMap out = forward.compute(in, h::Precision::f64, larc::ref::Form::serial, 0);
  double l = 0;
  for (const auto& [name, cotangent] : {std::pair<std::string, std::string>{"o", "do"}, {"final_state", "dht"}}) {
    const auto c = in.find(cotangent);
    if (c == in.end() || !out.count(name)) continue;
    for (std::size_t i = 0; i < c->second.data.size(); ++i) l += c->second.data[i] * out.at(name).data[i];
  }
  return l;
}

const h::TensorSpec* input_spec(const h::Mechanism& m, const std::string& name) {
  for (const h::TensorSpec& s : m.inputs)
    if (s.name == name) return &s;
  return nullptr;
}

// The disagreements of one form's gradients `grads` with central differences of the forward's loss.
template <class Note>
void check_form(const h::Mechanism& twin, const h::Mechanism& forward, const h::ValueMap& in, const h::ValueMap& grads,
                Note note) {
  for (const h::TensorSpec& g : twin.outputs) {
    const std::string x = input_of(g.name);
    const h::TensorSpec* spec = input_spec(forward, x);
    if (!spec || !in.count(x)) {
      note(g.name + " names no input " + x + " of " + forward.name);
      continue;
    }
    if (spec->dims != g.dims) note(g.name + " has dims " + g.dims + ", its input " + x + " " + spec->dims);
    const std::size_t n = in.at(x).data.size();
    if (!grads.count(g.name) || grads.at(g.name).data.size() != n) {
      note(g.name + " is missing or has another size than " + x);
      continue;
    }
    for (std::size_t i : {std::size_t{0}, n / 2, n - 1}) {
      const double xi = in.at(x).data[i], eps = 1e-6 * std::max(1.0, std::fabs(xi));
      h::ValueMap up = in, down = in;
      up.at(x).data[i] = xi + eps;
      down.at(x).data[i] = xi - eps;
      const double fd = (loss(forward, up) - loss(forward, down)) / (2 * eps), got = grads.at(g.name).data[i];
      if (!(std::fabs(got - fd) <= 1e-6 * (1 + std::fabs(fd)))) {
        std::ostringstream s;
        s << g.name << "[" << i << "] = " << got << ", central difference " << fd;
        note(s.str());
      }
    }
  }
}

// Every disagreement of `twin` (whose gradients are computed by `twin.compute`) with its forward
// mechanism's loss on one case: a gradient output that names no input of the forward or has another
// shape, or an element off the central difference by more than 1e-6·(1 + |fd|).
std::vector<std::string> disagreements(const h::Mechanism& twin, const h::Shape& shape) {
  const h::Mechanism& forward = h::find_mechanism(twin.parameters.at("forward").get<std::string>());
  h::KnobValues knobs;
  for (const h::Knob& k : twin.knobs) {
    if (k.name == h::kInitialStateKnob) knobs[k.name] = static_cast<double>(h::InitialState::random);
    if (k.name == h::kScaleFactorKnob) knobs[k.name] = 2;
  }
  const h::ValueMap in = twin.generate(shape, 7, twin.resolve_knobs(knobs));
  std::vector<std::string> found;
  // Every form the twin has: the serial adjoint and, where there is one, the chunk-kernel form (dβ and the
  // decays' gradient formed as chunk kernels form them; here in chunks of 4).
  for (const larc::ref::Form form : twin.forms) {
    const h::ValueMap grads = twin.compute(in, h::Precision::f64, form, 4);
    auto note = [&](const std::string& what) {
      found.push_back(twin.name + " [" + shape.str() + ", " + larc::ref::form_name(form) + "] " + what);
    };
    check_form(twin, forward, in, grads, note);
  }
  return found;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

TEST(GradientTwins, EveryTwinIsTheGradientOfItsForwardsLoss) {
  int twins = 0;
  for (const h::Mechanism& m : h::mechanisms()) {
    if (!m.computes_gradients()) continue;
    ++twins;
    std::vector<h::Shape> shapes = {{1, 6, 2, 4, 3}};
    if (m.groups_value_heads()) shapes.push_back({1, 6, 2, 4, 3, 4});
    for (const h::Shape& s : shapes) {
      const std::vector<std::string> found = disagreements(m, s);
      EXPECT_TRUE(found.empty()) << joined(found);
    }
  }
  EXPECT_GE(twins, 16);
}

// Every forward mechanism has a gradient twin, registered as "<forward>-backward".
TEST(GradientTwins, EveryForwardMechanismHasATwin) {
  for (const h::Mechanism& m : h::mechanisms()) {
    if (m.computes_gradients()) continue;
    const h::Mechanism& twin = h::find_mechanism(m.name + "-backward");
    EXPECT_EQ(twin.parameters.at("forward").get<std::string>(), m.name);
  }
}

// `twin` with its gradients computed by defect(case inputs, honest gradients), the honest gradients
// changed as a defective backward kernel would change them.
template <class Defect>
h::Mechanism planted(const h::Mechanism& twin, Defect defect) {
  h::Mechanism m = twin;
  m.compute = [honest = twin.compute, defect](const h::ValueMap& in, h::Precision p, ref::Form form, std::int64_t chunk) {
    h::ValueMap g = honest(in, p, form, chunk);
    defect(in, g);
    return g;
  };
  return m;
}

// Every disagreement the planted twin has is on `gradient`, and there is at least one.
void expect_fails_on(const h::Mechanism& defective, const std::string& gradient) {
  const std::vector<std::string> found = disagreements(defective, {1, 6, 2, 4, 3});
  EXPECT_FALSE(found.empty()) << defective.name << ": the planted defect passes";
  for (const std::string& f : found)
    EXPECT_NE(f.find("] " + gradient + "["), std::string::npos) << "a disagreement off " << gradient << ": " << f;
}

// The queries CCQ's backbone reads, q̃_t = (I − λ_t Σ_t) q_t per head (uniform covariance, the case's
// initial statistics and λ: the mechanism's conditioner, ccq.h), in place of q.
h::ValueMap with_conditioned_queries(h::ValueMap in) {
  const ref::Tensor<double> q = in.at("q"), k = in.at("k"), lambda = in.at("lambda");
  const std::int64_t H = q.dim(2), K = q.dim(3);
  for (std::int64_t b = 0; b < q.dim(0); ++b)
    for (std::int64_t hd = 0; hd < H; ++hd) {
      ref::ccq::KeyStats<double> start = ref::ccq::empty_stats<double>(K);
      if (in.count("initial_key_gram")) {
        start.c = ref::head_state(in.at("initial_key_gram"), b, hd);
        for (std::int64_t i = 0; i < K; ++i) start.m(i) = in.at("initial_key_sum").data[(b * H + hd) * K + i];
        start.n = in.at("initial_key_count").data[b * H + hd];
      }
      ref::set_head_rows(in.at("q"), b, hd,
                         ref::ccq::conditioned_queries_recurrent<double>(ref::head_rows(q, b, hd), ref::head_rows(k, b, hd),
                                                                         ref::head_gate(lambda, b, hd),
                                                                         ref::Vec<double>::Ones(q.dim(1)), start)
                             .q);
    }
  return in;
}

// A CCQ backward that runs the backbone's backward with q̃ and takes its dk as the whole of dk: the
// path of k through the key statistics into q̃ (the conditioner's adjoint, docs/gradients.md "CCQ")
// is dropped.
TEST(GradientTwins, CcqKeyGradientWithoutTheConditionerPathFails) {
  const h::Mechanism& backbone_twin = h::find_mechanism("gdn-backward");
  expect_fails_on(planted(h::find_mechanism("ccq-gdn-backward"),
                          [&backbone_twin](const h::ValueMap& in, h::ValueMap& g) {
                            g.at("dk") = backbone_twin.compute(with_conditioned_queries(in), h::Precision::f64,
                                                               ref::Form::serial, 0).at("dk");
                          }),
                  "dk");
}

// A CCQ backward that writes head 0's dλ to every head.
TEST(GradientTwins, CcqReadGateGradientOfOneHeadFails) {
  expect_fails_on(planted(h::find_mechanism("ccq-gla-backward"),
                          [](const h::ValueMap&, h::ValueMap& g) {
                            ref::Tensor<double>& dl = g.at("dlambda");
                            const std::int64_t rows = dl.dim(0) * dl.dim(1), H = dl.dim(2);
                            for (std::int64_t r = 0; r < rows; ++r)
                              for (std::int64_t hd = 1; hd < H; ++hd) dl.data[r * H + hd] = dl.data[r * H];
                          }),
                  "dlambda");
}

// A gdn-qk-l2norm backward whose dk is the chain rule of the normalisation without its projection
// term: dk = dk̂ / n, n = √(‖k‖² + ε), dk̂ the plain twin's on the normalised keys (docs/gradients.md
// "Front ends").
TEST(GradientTwins, RawKeyGradientWithoutTheProjectionTermFails) {
  namespace l2 = larc_test::qk_l2norm;
  const h::Mechanism& plain_twin = h::find_mechanism("gdn-backward");
  expect_fails_on(planted(h::find_mechanism("gdn-qk-l2norm-backward"),
                          [&plain_twin](const h::ValueMap& in, h::ValueMap& g) {
                            h::ValueMap normalized = in;
                            for (const char* x : {"q", "k"}) l2::normalize(normalized.at(x), in.at(x).dim(3));
                            g.at("dk") = plain_twin.compute(normalized, h::Precision::f64, ref::Form::serial, 0).at("dk");
                            l2::chain_rule_without_projection(in.at("k"), g.at("dk"));
                          }),
                  "dk");
}

// HLA twins that lose an initial summary's gradient: the normalised read's ∂L/∂h_0 written as zero, and
// AHLA's ∂L/∂P_0 taken as ∂L/∂E_0 (the two [B,H,K,V] summaries' gradients swapped for one).
TEST(GradientTwins, HlaInitialSummaryGradientsThatAreLostFail) {
  expect_fails_on(planted(h::find_mechanism("hla-normalized-backward"),
                          [](const h::ValueMap&, h::ValueMap& g) {
                            ref::Tensor<double>& d = g.at("dinitial_cross_sum");
                            d = ref::Tensor<double>(d.shape);
                          }),
                  "dinitial_cross_sum");
  expect_fails_on(planted(h::find_mechanism("ahla-backward"),
                          [](const h::ValueMap&, h::ValueMap& g) { g.at("dinitial_key_values") = g.at("dinitial_cross"); }),
                  "dinitial_key_values");
}

}  // namespace
