// Precision grades (harness/grade.h, docs/gate.md "Precision grades"): an honest kernel with bf16
// intermediates meets io and fails fp32 on its final state; an fp32-grade kernel meets fp32; each
// planted defect fails at the grade its kernel declares, except the documented blind spots of io
// (a bf16 state carry), which the fp32 grade catches. Declarations are validated by name. Prints
// every figure it checks (docs/gate.md quotes them).
#include <gtest/gtest.h>

#include <cstdio>

#include "io_subjects.h"
#include "larc/harness/runner.h"

namespace {

namespace h = larc::harness;
namespace io = larc::harness::io_subjects;
using larc::ref::Dtype;

// io:tf32 is io for bf16/fp16 inputs and the TF32 grade for fp32 inputs: what the io form's kernels
// (tf32 operands on fp32 inputs) must declare.
const h::GradeDeclaration kIo{.grade = h::Grade::io_tf32};

void register_all() {
  io::register_gdn("honest-io-c64", io::io_form(64), kIo);
  io::register_gdn("honest-io-c32", io::io_form(32), kIo);
  io::register_gdn("honest-fp32-c32", io::fp32_form(32), {});
  io::register_gdn("honest-io-declared-io", io::io_form(64), {.grade = h::Grade::io});
  // A TF32 kernel fed unconverted fp32 registers: its operands are truncated, not rounded.
  const auto truncated = [](const h::ValueMap& v, Dtype d) {
    return h::find_mechanism("gdn").compute_io(
        v, d == Dtype::fp32 ? larc::ref::OperandFormat::tf32_truncated : h::io_operand_format(h::Grade::io, d), 64);
  };
  io::register_gdn("truncating-tf32-declared-io:tf32", truncated, {.grade = h::Grade::io_tf32});
  io::register_gdn("truncating-tf32-declared-io:tf32-truncated", truncated, {.grade = h::Grade::io_tf32_truncated});
  io::register_gdn("io-carry-dropped", io::io_form(64), kIo, io::carry_scaled(0));
  io::register_gdn("io-carry-x0.99", io::io_form(64), kIo, io::carry_scaled(0.99));
  io::register_gdn("fp32-carry-x0.99", io::fp32_form(64), {}, io::carry_scaled(0.99));
  io::register_gdn("io-last-token-dropped", io::io_form(64), kIo, io::last_token_dropped);
  io::register_gdn("io-decay-slip", io::io_form(64), kIo, io::decay_slipped);
  io::register_gdn("io-chunk-of-o-off", io::io_form(64), kIo, {}, io::one_chunk_of_o_off);
  io::register_gdn("io-low-precision-carry", io::io_form_with_low_precision_carry, kIo);
  // A precision regression: an fp32-grade kernel whose products dropped to bf16 operands.
  io::register_gdn("fp32-regressed-to-io", io::io_form(64), {});
}

h::CaseSpec gdn_case(Dtype d, h::KnobValues knobs = {}, std::int64_t T = 256) {
  h::CaseSpec s;
  s.mechanism = "gdn";
  s.dtype = d;
  s.shape = {1, T, 2, 32, 32};
  s.seed = 3;
  s.knobs = std::move(knobs);
  return s;
}

struct Figures {
  bool pass;
  std::string met_o, met_state;
  double o_fp32, o_io, state_fp32, state_io;
};

std::string knobs_label(const h::CaseSpec& spec) {
  std::string label;
  const h::KnobValues defaults = h::find_mechanism(spec.mechanism).resolve_knobs({});
  for (const auto& [name, value] : spec.knobs)
    if (defaults.at(name) != value) label += name + "=" + std::to_string(value) + " ";
  return label.empty() ? "default knobs" : label;
}

Figures run(const h::PreparedCase& p, const std::string& subject) {
  const h::CaseResult r = h::run_subject(p, h::find_subject(subject, "gdn"));
  Figures f{r.pass, "", "", 0, 0, 0, 0};
  for (const h::Judgement& j : r.outputs) {
    const double fp32 = j.grades.at("fp32").worst_ratio;
    const double relaxed = j.grades.at(std::string(h::grade_name(h::relaxed_grades_for(p.spec.dtype).front()))).worst_ratio;
    if (j.output == "o") f.met_o = j.grade_met, f.o_fp32 = fp32, f.o_io = relaxed;
    else f.met_state = j.grade_met, f.state_fp32 = fp32, f.state_io = relaxed;
  }
  std::printf("%-24s %-5s %-30s o %-7s fp32 %9.3g io %7.3g | state %-7s fp32 %9.3g io %7.3g  %s\n", subject.c_str(),
              std::string(larc::ref::dtype_name(p.spec.dtype)).c_str(), knobs_label(p.spec).c_str(),
              f.met_o.c_str(), f.o_fp32, f.o_io, f.met_state.c_str(), f.state_fp32, f.state_io, r.pass ? "pass" : "FAIL");
  return f;
}

class Grades : public ::testing::TestWithParam<std::tuple<Dtype, int>> {
 protected:
  static void SetUpTestSuite() { register_all(); }
  h::PreparedCase prepared() const {
    const auto [d, regime] = GetParam();
    const h::KnobValues knobs[] = {{}, {{"decay_max", 0.01}}, {{"collinearity", 0.9}}};
    return h::prepare_case(gdn_case(d, knobs[regime]));
  }
};

TEST_P(Grades, HonestKernelsMeetTheirGrade) {
  const h::PreparedCase p = prepared();
  const Figures io64 = run(p, "honest-io-c64"), io32 = run(p, "honest-io-c32"), fp32 = run(p, "honest-fp32-c32");
  EXPECT_TRUE(io64.pass);
  EXPECT_TRUE(io32.pass);
  EXPECT_TRUE(fp32.pass);
  EXPECT_EQ(fp32.met_o, "fp32");
  EXPECT_EQ(fp32.met_state, "fp32");
  // bf16/fp16/tf32 intermediates cannot give an fp32-grade final state: the io grade is what it meets.
  EXPECT_EQ(io32.met_state, p.spec.dtype == Dtype::fp32 ? "io:tf32" : "io");
  EXPECT_GT(io32.state_fp32, 100);
  // On fp32 inputs, plain io is the fp32 grade: a TF32 kernel must declare io:tf32.
  EXPECT_EQ(run(p, "honest-io-declared-io").pass, p.spec.dtype != Dtype::fp32);
  // Truncated TF32 operands miss the rounded-TF32 baseline and meet the truncated one.
  if (p.spec.dtype == Dtype::fp32) {
    EXPECT_FALSE(run(p, "truncating-tf32-declared-io:tf32").pass);
    const Figures t = run(p, "truncating-tf32-declared-io:tf32-truncated");
    EXPECT_TRUE(t.pass);
    EXPECT_EQ(t.met_state, "io:tf32-truncated");
  }
}

TEST_P(Grades, PlantedDefectsFailAtTheDeclaredGrade) {
  const h::PreparedCase p = prepared();
  const int regime = std::get<1>(GetParam());
  EXPECT_FALSE(run(p, "io-carry-dropped").pass);
  EXPECT_FALSE(run(p, "io-last-token-dropped").pass);
  EXPECT_FALSE(run(p, "io-chunk-of-o-off").pass);
  EXPECT_FALSE(run(p, "fp32-regressed-to-io").pass);
  const Figures slip = run(p, "io-decay-slip");
  if (regime != 1) {  // at decay_max 0.01 the slip is itself bf16-sized: a known miss of io
    EXPECT_FALSE(slip.pass);
  }
}

// What io does not see: a state carried in the input dtype (the fp32 grade sees it on the final state
// by 10³×), and a carry damped by 1 % per chunk over a few chunks, which is bf16-sized at this length;
// under strong decay the damped carry fades before it shows at either grade, and under weak decay
// (decay_max 0.01) the fp32 grade sees it.
TEST_P(Grades, TheIoBlindSpotsAreCaughtAtFp32) {
  const h::PreparedCase p = prepared();
  if (p.spec.dtype == Dtype::fp32) GTEST_SKIP() << "fp32 inputs: a carry in the input dtype is no defect";
  const Figures carry = run(p, "io-low-precision-carry");
  EXPECT_TRUE(carry.pass) << "a state carried in the input dtype is expected to hide under io (docs/gate.md); if it "
                             "is now caught, update the docs";
  EXPECT_GT(carry.state_fp32, 100);
  run(p, "io-carry-x0.99");  // figures only: docs/gate.md quotes them
  const Figures damped = run(p, "fp32-carry-x0.99");
  if (std::get<1>(GetParam()) == 1) {
    EXPECT_FALSE(damped.pass);
  }
}

INSTANTIATE_TEST_SUITE_P(DtypesAndRegimes, Grades,
                         ::testing::Combine(::testing::Values(Dtype::bf16, Dtype::fp16, Dtype::fp32),
                                            ::testing::Values(0, 1, 2)));

TEST(GradeDeclarations, AreValidatedByName) {
  EXPECT_THROW(h::parse_grade("io32"), std::invalid_argument);
  try {
    h::parse_grade("bf16", "--grade");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--grade: unknown grade 'bf16' (accepted: fp32, io, io:tf32, io:tf32-truncated)"),
              std::string::npos);
  }
  h::GradeDeclaration bad_output{.outputs = {{"state", h::Grade::io}}};
  EXPECT_THROW(bad_output.validate(h::find_mechanism("gdn")), std::invalid_argument);
  h::GradeDeclaration bad_chunk{.grade = h::Grade::io, .chunk = 0};
  EXPECT_THROW(bad_chunk.validate(h::find_mechanism("gdn")), std::invalid_argument);
  // The gradient twins with a chunked backward in the reference have an io form; the others have none.
  for (const char* twin : {"gdn-backward", "deltanet-backward", "kla-backward", "gdn-qk-l2norm-backward",
                           "deltanet-qk-l2norm-backward", "gla-backward", "la-backward"})
    EXPECT_TRUE(h::find_mechanism(twin).compute_io) << twin;
  for (const char* twin : {"la-ratio-backward", "log-linear-backward", "hla-backward", "vla-backward", "ccq-gdn-backward"})
    EXPECT_FALSE(h::find_mechanism(twin).compute_io) << twin;
  // A mechanism without a chunked form has no io baseline.
  for (const h::Mechanism& m : h::mechanisms()) {
    if (m.compute_io) continue;
    try {
      kIo.validate(m);
      FAIL() << m.name;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("has no io form"), std::string::npos) << e.what();
    }
  }
}

TEST(GradeDeclarations, EffectiveGrades) {
  EXPECT_EQ(h::effective_grade(h::Grade::io, Dtype::fp32), h::Grade::fp32);
  EXPECT_EQ(h::effective_grade(h::Grade::io, Dtype::bf16), h::Grade::io);
  EXPECT_EQ(h::effective_grade(h::Grade::io_tf32, Dtype::fp32), h::Grade::io_tf32);
  EXPECT_EQ(h::effective_grade(h::Grade::io_tf32, Dtype::fp16), h::Grade::io);
  EXPECT_EQ(h::effective_grade(h::Grade::fp32, Dtype::bf16), h::Grade::fp32);
  EXPECT_EQ(h::effective_grade(h::Grade::io_tf32_truncated, Dtype::fp32), h::Grade::io_tf32_truncated);
  EXPECT_EQ(h::effective_grade(h::Grade::io_tf32_truncated, Dtype::bf16), h::Grade::io);
}

}  // namespace
