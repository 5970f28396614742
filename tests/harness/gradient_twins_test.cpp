// Every gradient twin (docs/gate.md "Gradient cases") is the gradient of its
// forward mechanism's loss L = Σ⟨do, o⟩ + ⟨dht, final_state⟩: each gradient
// output agrees with central differences of the forward mechanism computed in
// double, at three elements of its input, with a random initial state, a read
// scale and grouped value heads wherever the mechanism has them; in every form
// the twin has (the chunked one forms dβ and the decays' gradient as chunk
// kernels do, here in chunks of 4). This checks the harness's plumbing of the
// reference's backward verbs (names, layouts, the scale, the group sums, the
// initial state's gradient), which the gate — oracle and baseline from the same
// verb — cannot see.
#include <gtest/gtest.h>

#include <cmath>

#include "larc/harness/gate.h"

namespace {

namespace h = larc::harness;

// The input a gradient output is the gradient of.
std::string input_of(const std::string &gradient) {
  if (gradient == "dh0")
    return "initial_state";
  if (gradient == "dz0")
    return "initial_normalizer";
  return gradient.substr(1); // dq → q, dgk → gk, dbeta → beta, ...
}

double loss(const h::Mechanism &forward, const h::ValueMap &in) {
  const h::ValueMap out =
      forward.compute(in, h::Precision::f64, larc::ref::Form::serial, 0);
  double l = 0;
  for (const auto &[name, cotangent] :
       {std::pair<std::string, std::string>{"o", "do"},
        {"final_state", "dht"}}) {
    const auto c = in.find(cotangent);
    if (c == in.end() || !out.count(name))
      continue;
    for (std::size_t i = 0; i < c->second.data.size(); ++i)
      l += c->second.data[i] * out.at(name).data[i];
  }
  return l;
}

void expect_twin_matches_central_differences(const h::Mechanism &twin,
                                             const h::Shape &shape) {
  const h::Mechanism &forward =
      h::find_mechanism(twin.parameters.at("forward").get<std::string>());
  h::KnobValues knobs;
  for (const h::Knob &k : twin.knobs) {
    if (k.name == h::kInitialStateKnob)
      knobs[k.name] = static_cast<double>(h::InitialState::random);
    if (k.name == h::kScaleFactorKnob)
      knobs[k.name] = 2;
  }
  const h::ValueMap in = twin.generate(shape, 7, twin.resolve_knobs(knobs));
  for (const larc::ref::Form form :
       twin.forms) { // the serial adjoint, and the chunk-kernel form where
                     // there is one
    const h::ValueMap grads = twin.compute(in, h::Precision::f64, form, 4);
    for (const h::TensorSpec &g : twin.outputs) {
      const std::string x = input_of(g.name);
      ASSERT_TRUE(in.count(x))
          << twin.name << ": " << g.name << " names no input " << x;
      const std::size_t n = in.at(x).data.size();
      ASSERT_EQ(grads.at(g.name).data.size(), n) << twin.name << " " << g.name;
      for (std::size_t i : {std::size_t{0}, n / 2, n - 1}) {
        const double xi = in.at(x).data[i],
                     eps = 1e-6 * std::max(1.0, std::fabs(xi));
        h::ValueMap up = in, down = in;
        up.at(x).data[i] = xi + eps;
        down.at(x).data[i] = xi - eps;
        const double fd = (loss(forward, up) - loss(forward, down)) / (2 * eps),
                     got = grads.at(g.name).data[i];
        EXPECT_NEAR(got, fd, 1e-6 * (1 + std::fabs(fd)))
            << twin.name << " (" << larc::ref::form_name(form) << ") "
            << shape.str() << " " << g.name << "[" << i << "]";
      }
    }
  }
}

TEST(GradientTwins, EveryTwinIsTheGradientOfItsForwardsLoss) {
  int twins = 0;
  for (const h::Mechanism &m : h::mechanisms()) {
    if (!m.computes_gradients())
      continue;
    ++twins;
    expect_twin_matches_central_differences(m, {1, 6, 2, 4, 3});
    if (m.groups_value_heads())
      expect_twin_matches_central_differences(m, {1, 6, 2, 4, 3, 4});
  }
  EXPECT_GE(twins, 6);
}

} // namespace
