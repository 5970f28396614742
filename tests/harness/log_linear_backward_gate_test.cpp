// Log-linear attention's gradient cases up to T = 256 (docs/gate.md "Gradient cases"): the materialized
// adjoint is a float baseline beside the serial one, a second order of summation for the few-term
// gradients of short sequences (at T = 1, dλ is one dot product of K and V terms). The honest float adjoint
// passes, and realistic backward defects planted in its gradients still fail with both baselines — at
// T = 1, 5, 64 and 200, fp32 and bf16 — while from T = 257 on the serial adjoint is the only baseline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "io_subjects.h"
#include "larc/harness/runner.h"
#include "larc/reference/low_precision.h"

namespace {

namespace h = larc::harness;
using larc::ref::Dtype;
using Edit = h::io_subjects::Edit;

constexpr const char* kTwin = "log-linear-backward";

// Registers (once) a subject of the log-linear twin: the reference's serial adjoint in float, then `edit`.
void register_backward(const std::string& name, Edit edit = {}) {
  for (const h::Subject& s : h::subjects())
    if (s.name == name) return;
  h::Subject s;
  s.name = name;
  s.mechanism = kTwin;
  s.dtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};
  s.launch = [edit](const h::TensorMap& in, h::TensorMap& out) {
    h::ValueMap o = h::find_mechanism(kTwin).compute(h::decode_all(in), h::Precision::f32, larc::ref::Form::serial, 0);
    if (edit) edit(o);
    h::io_subjects::write_outputs(o, out);
  };
  h::register_subject(std::move(s));
}

// dλ without the read scale (K = 16: 4× too large).
void dlevel_scales_unscaled(h::ValueMap& o) {
  for (double& x : o.at("dlevel_scales").data) x *= 4;
}
// dλ computed and kept in bf16 (a precision regression of the level gradients alone).
void dlevel_scales_in_bf16(h::ValueMap& o) {
  for (double& x : o.at("dlevel_scales").data) x = larc::ref::round_to(Dtype::bf16, x);
}
// dv of token t read from token t + 1 (the last token's zero): an off-by-one in the reverse walk.
void dv_one_token_late(h::ValueMap& o) {
  larc::ref::Tensor<double>& dv = o.at("dv");
  const std::size_t row = static_cast<std::size_t>(dv.dim(2) * dv.dim(3)), T = static_cast<std::size_t>(dv.dim(1));
  for (std::size_t t = 0; t < T; ++t)
    for (std::size_t i = 0; i < row; ++i) dv.data[t * row + i] = t + 1 < T ? dv.data[(t + 1) * row + i] : 0;
}
// dg returned as dα instead of dα·α (the decay's chain rule dropped): dg / e^g.
h::ValueMap* g_of_case = nullptr;
void dg_without_the_decay(h::ValueMap& o) {
  larc::ref::Tensor<double>& dg = o.at("dg");
  for (std::size_t i = 0; i < dg.data.size(); ++i) dg.data[i] /= std::exp(g_of_case->at("g").data[i]);
}

class LogLinearBackwardGate : public ::testing::TestWithParam<std::tuple<Dtype, int>> {
 protected:
  static void SetUpTestSuite() {
    register_backward("ll-bwd-honest");
    register_backward("ll-bwd-dlevel-unscaled", dlevel_scales_unscaled);
    register_backward("ll-bwd-dlevel-in-bf16", dlevel_scales_in_bf16);
    register_backward("ll-bwd-dv-one-token-late", dv_one_token_late);
    register_backward("ll-bwd-dg-without-decay", dg_without_the_decay);
  }
  static h::PreparedCase prepared(Dtype dtype, std::int64_t T) {
    h::CaseSpec s;
    s.mechanism = kTwin;
    s.dtype = dtype;
    s.shape = {1, T, 2, 16, 16};
    s.seed = 1;
    return h::prepare_case(s);
  }
  static h::CaseResult run(const h::PreparedCase& p, const std::string& subject) {
    h::ValueMap inputs = h::decode_all(p.inputs);
    g_of_case = &inputs;
    h::CaseResult r = h::run_subject(p, h::find_subject(subject, kTwin));
    g_of_case = nullptr;
    std::string failed;
    double worst = 0;
    for (const h::Judgement& j : r.outputs) {
      worst = std::max(worst, j.worst_ratio);
      if (!j.pass) failed += j.output + " ";
    }
    std::printf("%-26s %-5s T = %-4lld worst ratio %9.3g  %s %s\n", subject.c_str(),
                std::string(larc::ref::dtype_name(p.spec.dtype)).c_str(), static_cast<long long>(p.spec.shape.T),
                worst, r.pass ? "pass" : "FAIL", failed.c_str());
    return r;
  }
};

TEST_P(LogLinearBackwardGate, TheHonestAdjointPassesAndPlantedDefectsFailWithBothBaselines) {
  const auto [dtype, T] = GetParam();
  const h::PreparedCase p = prepared(dtype, T);
  const h::CaseResult honest = run(p, "ll-bwd-honest");
  EXPECT_TRUE(honest.pass);
  for (const h::Judgement& j : honest.outputs)
    EXPECT_EQ(j.baseline_errors.count("materialized"), 1u) << j.output << ": the materialized adjoint is a baseline up to T = 256";
  EXPECT_FALSE(run(p, "ll-bwd-dlevel-unscaled").pass);
  if (dtype == Dtype::fp32) {  // in a bf16 case dλ is bf16 already
    EXPECT_FALSE(run(p, "ll-bwd-dlevel-in-bf16").pass);
  }
  EXPECT_FALSE(run(p, "ll-bwd-dv-one-token-late").pass);
  if (T > 1) {  // at T = 1 the state before the token is zero: dα = 0 and dg is 0 either way
    EXPECT_FALSE(run(p, "ll-bwd-dg-without-decay").pass);
  }
}

std::string case_name(const ::testing::TestParamInfo<std::tuple<Dtype, int>>& info) {
  return std::string(larc::ref::dtype_name(std::get<0>(info.param))) + "_T" + std::to_string(std::get<1>(info.param));
}
INSTANTIATE_TEST_SUITE_P(DtypesAndLengths, LogLinearBackwardGate,
                         ::testing::Combine(::testing::Values(Dtype::fp32, Dtype::bf16), ::testing::Values(1, 5, 64, 200)),
                         case_name);

TEST(LogLinearBackwardBaselines, FromT257TheSerialAdjointIsTheOnlyBaseline) {
  h::CaseSpec s;
  s.mechanism = kTwin;
  s.dtype = Dtype::fp32;
  s.shape = {1, 257, 1, 8, 8};
  s.seed = 2;
  s.subject = "ref-serial-f32";
  const h::CaseResult r = h::run_case(s);
  ASSERT_FALSE(r.outputs.empty());
  for (const h::Judgement& j : r.outputs)  // per-form errors are reported only beside a second baseline
    EXPECT_TRUE(j.baseline_errors.empty()) << j.output;
}

}  // namespace
