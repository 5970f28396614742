// Accuracy-regression profiles (harness/profile.h, docs/gate.md "Accuracy-regression profiles"): a
// profile of an accepted kernel passes honest changes of it (another chunk size, another form,
// another accumulation order) at k_reg and fails planted regressions, including ones that still meet
// the kernel's declared grade; a profile for other cases or another oracle is refused by name. Prints
// the largest ratio each honest change reaches (the false-alarm margin docs/gate.md quotes).
#include <gtest/gtest.h>

#include <cstdio>

#include "io_subjects.h"
#include "larc/harness/profile.h"

namespace {

namespace h = larc::harness;
namespace io = larc::harness::io_subjects;
using larc::ref::Dtype;

const h::GradeDeclaration kIo{.grade = h::Grade::io_tf32};  // io for bf16/fp16 inputs, TF32 for fp32

void register_all() {
  for (std::int64_t c : {16, 32, 64, 128}) {
    io::register_gdn("fp32-c" + std::to_string(c), io::fp32_form(c), {});
    io::register_gdn("io-c" + std::to_string(c), io::io_form(c), kIo);
  }
  io::register_gdn("f64-serial", [](const h::ValueMap& v, Dtype) {
    return h::find_mechanism("gdn").compute(v, h::Precision::f64, larc::ref::Form::serial, 0);
  }, {});
  io::register_gdn("io-c64-carry-x0.99", io::io_form(64), kIo, io::carry_scaled(0.99));
  io::register_gdn("io-c64-low-carry", io::io_form_with_low_precision_carry, kIo);
  io::register_gdn("fp32-c64-carry-x0.9999", io::fp32_form(64), {}, io::carry_scaled(0.9999));
  io::register_gdn("fp32-c64-regressed-to-io", io::io_form(64), {});
  io::register_gdn("fp32-c64-decay-slip", io::fp32_form(64), {}, io::decay_slipped);
}

std::vector<h::PreparedCase> cases() {
  std::vector<h::PreparedCase> out;
  const h::KnobValues regimes[] = {{}, {{"decay_max", 0.01}}, {{"collinearity", 0.9}}};
  for (Dtype d : {Dtype::bf16, Dtype::fp16, Dtype::fp32})
    for (const h::KnobValues& k : regimes)
      for (std::uint64_t seed : {1, 2}) {
        h::CaseSpec s;
        s.mechanism = "gdn";
        s.dtype = d;
        s.shape = {1, 200, 2, 16, 16};
        s.seed = seed;
        s.knobs = k;
        out.push_back(h::prepare_case(s));
      }
  return out;
}

class Profiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_all();
    prepared_ = new std::vector<h::PreparedCase>(cases());
  }
  static void TearDownTestSuite() { delete prepared_; }

  static std::vector<h::CaseResult> run_all(const std::string& subject) {
    std::vector<h::CaseResult> rs;
    for (const h::PreparedCase& p : *prepared_) rs.push_back(h::run_subject(p, h::find_subject(subject, "gdn")));
    return rs;
  }
  // The worst profile ratio of `subject` against `recorded`'s profile, and how many cases fail it.
  static std::pair<double, int> against(const std::string& recorded, const std::string& subject) {
    const h::Profile profile = h::Profile::from_json(h::record_profile(run_all(recorded), "test"));
    double worst = 0;
    int failed = 0;
    for (h::CaseResult& r : run_all(subject)) {
      r.pass = true;
      r.errors.clear();
      for (const h::RegressionCheck& c : profile.check(r, {.as_subject = recorded})) worst = std::max(worst, c.worst_ratio);
      failed += r.pass ? 0 : 1;
    }
    std::printf("%-26s against %-8s: worst ratio %.3g at k_reg %.3g, %d of %zu cases fail\n", subject.c_str(),
                recorded.c_str(), worst, h::kRegressionFactor, failed, prepared_->size());
    return {worst, failed};
  }
  static std::vector<h::PreparedCase>* prepared_;
};
std::vector<h::PreparedCase>* Profiles::prepared_ = nullptr;

TEST_F(Profiles, HonestChangesPass) {
  for (const char* variant : {"fp32-c16", "fp32-c32", "fp32-c128", "ref-serial-f32", "ref-streamed-f32"})
    EXPECT_EQ(against("fp32-c64", variant).second, 0) << variant;
  for (const char* variant : {"io-c16", "io-c32", "io-c128"}) EXPECT_EQ(against("io-c64", variant).second, 0) << variant;
}

TEST_F(Profiles, PlantedRegressionsFail) {
  EXPECT_GT(against("fp32-c64", "fp32-c64-regressed-to-io").second, 0);
  EXPECT_GT(against("fp32-c64", "fp32-c64-carry-x0.9999").second, 0);
  EXPECT_GT(against("fp32-c64", "fp32-c64-decay-slip").second, 0);
  EXPECT_GT(against("io-c64", "io-c64-carry-x0.99").second, 0);
}

// The cases where a defect still meets the grade its kernel declares and the profile fails it: what
// the profile adds to the grades.
TEST_F(Profiles, CatchesWhatTheGradeDoesNot) {
  auto caught_only_by_profile = [](const std::string& recorded, const std::string& defect) {
    const h::Profile profile = h::Profile::from_json(h::record_profile(run_all(recorded), "test"));
    int meets_grade = 0, only_profile = 0;
    for (h::CaseResult& r : run_all(defect)) {
      const bool grade_pass = r.pass;
      meets_grade += grade_pass ? 1 : 0;
      profile.check(r, {.as_subject = recorded});
      only_profile += grade_pass && !r.pass ? 1 : 0;
    }
    std::printf("%-26s meets its grade in %d of %zu cases; the profile fails %d of those\n", defect.c_str(), meets_grade,
                prepared_->size(), only_profile);
    return only_profile;
  };
  // A kernel well inside its grade (its state accumulated in double, like a compensated fp32 path)
  // that regresses to plain float accumulation: still within the fp32 grade, but its error grows.
  EXPECT_GT(caught_only_by_profile("f64-serial", "fp32-c64"), 0);
  // Kernels at the level of their grade's own baseline leave the profile no headroom over the grade:
  // figures only (docs/gate.md quotes them).
  caught_only_by_profile("io-c64", "io-c64-carry-x0.99");
  caught_only_by_profile("fp32-c64", "fp32-c64-carry-x0.9999");
  caught_only_by_profile("io-c64", "io-c64-low-carry");
}

TEST(ProfileRefusals, NameTheField) {
  register_all();
  h::CaseSpec s;
  s.mechanism = "gdn";
  s.dtype = Dtype::bf16;
  s.shape = {1, 70, 1, 4, 4};
  s.seed = 5;
  const h::PreparedCase p = h::prepare_case(s);
  const h::CaseResult r = h::run_subject(p, h::find_subject("fp32-c64", "gdn"));
  const nlohmann::json recorded = h::record_profile({r}, "test");
  auto refused = [](const std::function<void()>& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "expected a refusal mentioning " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  // Another seed: no record.
  h::CaseSpec other = s;
  other.seed = 6;
  h::CaseResult r_other = h::run_subject(h::prepare_case(other), h::find_subject("fp32-c64", "gdn"));
  refused([&] { h::Profile::from_json(recorded).check(r_other); }, "no record of the case");
  // The same key, another oracle (the record's oracle norm edited).
  nlohmann::json edited = recorded;
  edited["cases"][0]["outputs"]["o"]["oracle_norm"] = 1.0;
  h::CaseResult again = r;
  refused([&] { h::Profile::from_json(edited).check(again); }, "outputs.o.oracle_norm");
  // Malformed fields.
  nlohmann::json no_error = recorded;
  no_error["cases"][0]["outputs"]["o"].erase("error");
  refused([&] { h::Profile::from_json(no_error); }, "cases[0].outputs.o.error: missing");
  nlohmann::json bad_version = recorded;
  bad_version["larc_profile"] = 7;
  refused([&] { h::Profile::from_json(bad_version); }, "larc_profile: expected version 1");
  refused([] { h::Profile::read("/nonexistent/profile.json"); }, "cannot read");
  // The same case again passes its own profile with ratio ≤ 1/k_reg.
  h::CaseResult same = r;
  const auto checks = h::Profile::from_json(recorded).check(same);
  EXPECT_TRUE(same.pass);
  for (const h::RegressionCheck& c : checks) EXPECT_LE(c.worst_ratio, 1 / h::kRegressionFactor + 1e-12);
}

}  // namespace
