// Sequences of their own lengths (the varlen knob, the seq_lens input; docs/gate.md "Sequences of their
// own lengths"): the reference runs each sequence over its own tokens and leaves its padding rows at zero,
// so the honest float forms pass, and the defects the field's varlen kernels have shipped fail — the
// lengths ignored, one padding token read, padding rows written, a state carried from one sequence into
// the next, gradients past a sequence's end left nonzero — and padding rows left unwritten pass only when
// the subject declares it (ShapeLimits::padding_unwritten). gdn and gdn-backward [4, 100, 2, 16, 16]:
// sequence 0 empty, sequence 1 of one token, two of drawn lengths; a random initial state; fp32 and bf16.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>

#include "io_subjects.h"
#include "larc/harness/runner.h"

namespace {

namespace h = larc::harness;
using larc::ref::Dtype;

using Compute = std::function<h::ValueMap(const h::ValueMap&)>;

h::ValueMap honest(const std::string& mechanism, const h::ValueMap& in) {
  return h::find_mechanism(mechanism).compute(in, h::Precision::f32, larc::ref::Form::serial, 0);
}

void reg(const std::string& name, const std::string& mechanism, Compute compute, bool padding_unwritten = false,
         bool writes_padding = true) {
  for (const h::Subject& s : h::subjects())
    if (s.name == name) return;
  h::Subject s;
  s.name = name;
  s.mechanism = mechanism;
  s.dtypes = {Dtype::fp32, Dtype::bf16};
  s.limits.ragged = true;
  s.limits.padding_unwritten = padding_unwritten;
  s.launch = [mechanism, compute, writes_padding](const h::TensorMap& in, h::TensorMap& out) {
    const h::ValueMap x = h::decode_all(in);
    const h::ValueMap values = compute(x);
    if (writes_padding) return larc::harness::io_subjects::write_outputs(values, out);
    // Only each sequence's own rows of the per-token outputs ([B, T, …]); the rest stays poisoned.
    const larc::ref::Tensor<double>& lengths = x.at("seq_lens");
    for (auto& [name, t] : out) {
      const larc::ref::Tensor<double>& v = values.at(name);
      const bool per_token = h::find_mechanism(mechanism).output(name).dims.starts_with("BT");
      const std::size_t T = static_cast<std::size_t>(x.at("q").dim(1)), row = per_token ? t.size() / (t.shape()[0] * T) : 1;
      for (std::size_t i = 0; i < t.size(); ++i)
        if (!per_token || static_cast<double>(i / row % T) < lengths.data[i / (T * row)]) t.set(i, v.data[i]);
    }
  };
  h::register_subject(std::move(s));
}

// Rows t ≥ seq_lens[b] of a [B, T, …] tensor set to `value`.
void fill_padding(larc::ref::Tensor<double>& x, const larc::ref::Tensor<double>& lengths, double value) {
  const std::int64_t B = x.dim(0), T = x.dim(1), row = static_cast<std::int64_t>(x.data.size()) / (B * T);
  for (std::int64_t b = 0; b < B; ++b)
    for (auto t = static_cast<std::int64_t>(lengths.data[static_cast<std::size_t>(b)]); t < T; ++t)
      for (std::int64_t i = 0; i < row; ++i) x.data[static_cast<std::size_t>((b * T + t) * row + i)] = value;
}

void register_all() {
  for (const std::string m : {"gdn", "gdn-backward"}) {
    // Every sequence run over all T tokens: the lengths ignored.
    reg(m + "-lengths-ignored", m, [m](const h::ValueMap& in) {
      h::ValueMap x = in;
      x.erase("seq_lens");
      return honest(m, x);
    });
    // One padding token read after each sequence (an off-by-one end offset).
    reg(m + "-one-token-past", m, [m](const h::ValueMap& in) {
      h::ValueMap x = in;
      for (double& n : x.at("seq_lens").data) n = std::min(n + 1, static_cast<double>(in.at("q").dim(1)));
      return honest(m, x);
    });
    // Each sequence after the first starts from the one before's final state (the state not reset).
    reg(m + "-state-not-reset", m, [m](const h::ValueMap& in) {
      h::ValueMap forward_in = in;  // the forward's inputs: a gradient case's without its cotangents
      forward_in.erase("do");
      forward_in.erase("dht");
      const h::ValueMap forward = honest("gdn", forward_in);
      h::ValueMap x = in;
      larc::ref::Tensor<double>& s0 = x.at("initial_state");
      const std::size_t per_sequence = s0.data.size() / static_cast<std::size_t>(s0.dim(0));
      for (std::size_t i = per_sequence; i < s0.data.size(); ++i) s0.data[i] = forward.at("final_state").data[i - per_sequence];
      return honest(m, x);
    });
  }
  // Padding rows written (o), and gradients past a sequence's end left nonzero (dk).
  reg("gdn-padding-written", "gdn", [](const h::ValueMap& in) {
    h::ValueMap o = honest("gdn", in);
    fill_padding(o.at("o"), in.at("seq_lens"), 1e-3);
    return o;
  });
  reg("gdn-backward-padding-written", "gdn-backward", [](const h::ValueMap& in) {
    h::ValueMap o = honest("gdn-backward", in);
    fill_padding(o.at("dk"), in.at("seq_lens"), 1e-3);
    return o;
  });
  // Padding rows left unwritten, declared (ShapeLimits::padding_unwritten) and not.
  for (const std::string m : {"gdn", "gdn-backward"}) {
    reg(m + "-padding-unwritten-declared", m, [m](const h::ValueMap& in) { return honest(m, in); }, true, false);
    reg(m + "-padding-unwritten", m, [m](const h::ValueMap& in) { return honest(m, in); }, false, false);
  }
}

class VarlenCases : public ::testing::TestWithParam<std::tuple<std::string, Dtype>> {
 protected:
  static void SetUpTestSuite() { register_all(); }
};

TEST_P(VarlenCases, HonestFormsPassAndVarlenDefectsFail) {
  const auto& [mechanism, dtype] = GetParam();
  h::CaseSpec spec;
  spec.mechanism = mechanism;
  spec.dtype = dtype;
  spec.shape = {4, 100, 2, 16, 16};
  spec.seed = 3;
  spec.knobs = {{h::kVarlenKnob, 1}, {"initial_state", 2}};
  const h::PreparedCase p = h::prepare_case(spec);
  const larc::ref::Tensor<double> lengths = h::decode_all(p.inputs).at("seq_lens");
  ASSERT_EQ(lengths.data[0], 0);
  ASSERT_EQ(lengths.data[1], 1);
  auto run = [&](const std::string& subject) {
    const h::CaseResult r = h::run_subject(p, h::find_subject(subject, mechanism));
    std::string failed;
    double worst = 0;
    for (const h::Judgement& j : r.outputs) {
      worst = std::max(worst, j.worst_ratio);
      if (!j.pass) failed += j.output + " ";
    }
    std::printf("%-32s %-5s worst ratio %9.3g  %s %s\n", subject.c_str(), std::string(larc::ref::dtype_name(dtype)).c_str(),
                worst, r.pass ? "pass" : "FAIL", failed.c_str());
    return r.pass;
  };
  EXPECT_TRUE(run("ref-serial-f32"));
  EXPECT_TRUE(run("ref-chunked-f32"));
  EXPECT_TRUE(run(mechanism + "-padding-unwritten-declared"));
  EXPECT_FALSE(run(mechanism + "-padding-unwritten"));
  for (const char* defect : {"-lengths-ignored", "-one-token-past", "-state-not-reset", "-padding-written"})
    EXPECT_FALSE(run(mechanism + defect)) << defect;
}

INSTANTIATE_TEST_SUITE_P(GdnAndItsGradients, VarlenCases,
                         ::testing::Combine(::testing::Values("gdn", "gdn-backward"), ::testing::Values(Dtype::fp32, Dtype::bf16)),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, Dtype>>& info) {
                           const std::string m = std::get<0>(info.param) == "gdn" ? "gdn" : "gdn_backward";
                           return m + "_" + std::string(larc::ref::dtype_name(std::get<1>(info.param)));
                         });

// A length outside [0, T] or not whole is refused naming the input.
TEST(VarlenCases, BadLengthsAreRefusedNamingTheInput) {
  h::CaseSpec spec;
  spec.mechanism = "gdn";
  spec.shape = {2, 8, 1, 4, 4};
  spec.knobs = {{h::kVarlenKnob, 1}};
  const h::Mechanism& m = h::find_mechanism("gdn");
  for (double bad : {9.0, -1.0, 2.5}) {
    h::ValueMap in = m.generate(spec.shape, 1, m.resolve_knobs(spec.knobs));
    in.at("seq_lens").data[1] = bad;
    try {
      m.compute(in, h::Precision::f64, larc::ref::Form::serial, 0);
      FAIL() << bad;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'seq_lens'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
