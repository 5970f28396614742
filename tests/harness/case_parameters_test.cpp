// The case vocabulary's read scale, grouped value heads and the initial states of the ratio read, VLA
// and CCQ (harness/mechanism.h, docs/gate.md "What a case is"): a kernel that ignores the case's scale fails
// every case whose scale_factor is not 1 and passes the others; subjects that take no scale are not
// planned for such cases; a kernel that maps value heads to the wrong query/key heads fails the grouped
// cases; a kernel that loses part of an initial state (la-ratio's normaliser, VLA's memory, CCQ's memory,
// key statistics or key count, HLA's summaries or its cross summary) fails the cases that have one; the
// reference's own forms pass all of them; subjects that take no initial state are not planned for them.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <vector>

#include "edited_subjects.h"
#include "larc/harness/gate.h"

namespace {

namespace h = larc::harness;
using larc::ref::Dtype;

h::CaseSpec case_of(const std::string& mechanism, const h::KnobValues& knobs, Dtype d = Dtype::bf16) {
  h::CaseSpec s;
  s.mechanism = mechanism;
  s.dtype = d;
  s.shape = {2, 70, 2, 8, 8};
  s.seed = 4;
  s.knobs = knobs;
  return s;
}

TEST(ReadScale, TheCaseCarriesItOnlyWhenItIsNotTheDefault) {
  const h::Mechanism& gdn = h::find_mechanism("gdn");
  const h::ValueMap plain = gdn.generate({1, 5, 1, 16, 4}, 1, gdn.resolve_knobs({}));
  EXPECT_FALSE(plain.count("scale"));
  const h::ValueMap scaled = gdn.generate({1, 5, 1, 16, 4}, 1, gdn.resolve_knobs({{h::kScaleFactorKnob, 4}}));
  ASSERT_TRUE(scaled.count("scale"));
  EXPECT_EQ(scaled.at("scale").data.at(0), 1.0);  // 4 · 16^-1/2
  EXPECT_EQ(scaled.at("q").data, plain.at("q").data) << "the scale moves no other input";
  EXPECT_THROW(gdn.resolve_knobs({{h::kScaleFactorKnob, 100}}), std::invalid_argument);
}

TEST(ReadScale, AKernelThatIgnoresItFailsOnlyWhereTheCaseHasOne) {
  for (const std::string mechanism : {"gdn", "deltanet", "kla", "gla", "la", "ccq-gdn", "gdn-backward", "gla-backward"}) {
    larc_test::register_edited({.name = "ignores-scale", .mechanism = mechanism, .edit = [](h::ValueMap& v) { v.erase("scale"); }});
    const h::Subject& ignores = h::find_subject("ignores-scale", mechanism);
    for (Dtype d : {Dtype::bf16, Dtype::fp32}) {
      EXPECT_TRUE(h::run_subject(h::prepare_case(case_of(mechanism, {}, d)), ignores).pass) << mechanism;
      for (double factor : {4.0, 0.125}) {
        const h::PreparedCase p = h::prepare_case(case_of(mechanism, {{h::kScaleFactorKnob, factor}}, d));
        const h::CaseResult r = h::run_subject(p, ignores);
        EXPECT_FALSE(r.pass) << mechanism << " scale_factor " << factor;
        EXPECT_GT(r.main_output()->worst_ratio, 10) << mechanism << " scale_factor " << factor;
        EXPECT_TRUE(h::run_subject(p, h::find_subject("ref-serial-f32", mechanism)).pass) << mechanism;
      }
    }
  }
}

TEST(ReadScale, SubjectsThatTakeNoneAreNotPlannedForCasesWithOne) {
  larc_test::register_edited({.name = "takes-no-scale", .mechanism = "gdn", .edit = [](h::ValueMap&) {}, .takes_scale = false});
  h::GateOptions o;
  o.subjects = {"takes-no-scale", "ref-serial-f32"};
  o.mechanisms = {"gdn"};
  o.grid = false;
  o.random = 40;
  bool drawn = false;
  for (const h::GateGroup& g : h::plan_gate(o).groups) {
    const double factor = h::find_mechanism("gdn").resolve_knobs(g.spec.knobs).at(h::kScaleFactorKnob);
    drawn = drawn || factor != 1;
    for (const h::Subject* s : g.subjects) {
      if (s->name == "takes-no-scale") {
        EXPECT_EQ(factor, 1);
      }
    }
  }
  EXPECT_TRUE(drawn) << "the random cases draw the scale";
}

// q or k [B,T,H,K] spread over HV value heads, value head j reading head map(j).
larc::ref::Tensor<double> spread_heads(const larc::ref::Tensor<double>& x, std::int64_t HV,
                                       const std::function<std::int64_t(std::int64_t)>& map) {
  const std::int64_t rows = x.dim(0) * x.dim(1), H = x.dim(2), D = x.dim(3);
  larc::ref::Tensor<double> r({x.dim(0), x.dim(1), HV, D});
  for (std::int64_t n = 0; n < rows; ++n)
    for (std::int64_t j = 0; j < HV; ++j)
      for (std::int64_t d = 0; d < D; ++d) r.data[(n * HV + j) * D + d] = x.data[(n * H + map(j)) * D + d];
  return r;
}

// Grouped value heads: a kernel that maps value head j to q/k head j mod H (the interleaved reading
// of FLA's layout) fails every grouped case and passes the ungrouped ones; mapping j to j / (HV/H) —
// FLA's — passes both, as the reference's forms do.
TEST(GroupedValueHeads, AKernelThatMapsValueHeadsModuloHFailsOnlyGroupedCases) {
  for (const bool modulo : {true, false}) {
    const std::string name = modulo ? "value-heads-modulo-h" : "value-heads-divided";
    larc_test::register_edited({.name = name, .mechanism = "gdn", .edit = [modulo](h::ValueMap& v) {
                                  const std::int64_t H = v.at("q").dim(2), HV = v.at("v").dim(2), G = HV / H;
                                  auto map = [&](std::int64_t j) { return modulo ? j % H : j / G; };
                                  v["q"] = spread_heads(v.at("q"), HV, map);
                                  v["k"] = spread_heads(v.at("k"), HV, map);
                                },
                                .value_head_groups = true});
    const h::Subject& s = h::find_subject(name, "gdn");
    h::CaseSpec grouped = case_of("gdn", {{h::kInitialStateKnob, 2}});
    grouped.shape.HV = 6;
    EXPECT_TRUE(h::run_subject(h::prepare_case(case_of("gdn", {})), s).pass) << name;
    const h::CaseResult r = h::run_subject(h::prepare_case(grouped), s);
    EXPECT_EQ(r.pass, !modulo) << name;
    if (modulo) {
      EXPECT_GT(r.main_output()->worst_ratio, 10) << name;
    }
    EXPECT_TRUE(h::run_subject(h::prepare_case(grouped), h::find_subject("ref-chunked-f32", "gdn")).pass);
  }
}

// A kernel that loses part of an initial state: la-ratio's normaliser (the memory kept), VLA's memory,
// CCQ's key statistics (the memory kept), CCQ's memory (the statistics kept), CCQ's key count (n_0 read
// as 0: the Gram and sum kept).
TEST(InitialStates, TheRatioReadVlaAndCcqTakeThemAndAKernelThatLosesPartOfOneFails) {
  struct Defect {
    const char* name;
    const char* mechanism;
    const char* input;  // an input of the case's initial state
    std::function<void(h::ValueMap&)> edit;
  };
  const auto erase = [](std::vector<std::string> names) { return [names](h::ValueMap& v) { for (const auto& n : names) v.erase(n); }; };
  const Defect defects[] = {
      {"drops-initial_normalizer", "la-ratio", "initial_normalizer", erase({"initial_normalizer"})},
      {"drops-initial_state", "vla", "initial_state", erase({"initial_state"})},
      {"drops-initial-key-stats", "ccq-gdn", "initial_key_gram",
       erase({"initial_key_gram", "initial_key_sum", "initial_key_count"})},
      {"drops-initial_state", "ccq-gla", "initial_state", erase({"initial_state"})},
      {"zero-initial-key-count", "ccq-gdn", "initial_key_count",
       [](h::ValueMap& v) {
         if (v.count("initial_key_count")) v.at("initial_key_count") = larc::ref::Tensor<double>(v.at("initial_key_count").shape);
       }},
  };
  for (const Defect& d : defects) {
    larc_test::register_edited({.name = d.name, .mechanism = d.mechanism, .edit = d.edit});
    const h::Subject& defective = h::find_subject(d.name, d.mechanism);
    const h::PreparedCase none = h::prepare_case(case_of(d.mechanism, {{h::kInitialStateKnob, 0}}));
    const h::PreparedCase random = h::prepare_case(case_of(d.mechanism, {{h::kInitialStateKnob, 2}}));
    EXPECT_FALSE(none.inputs.count(d.input));
    ASSERT_TRUE(random.inputs.count(d.input)) << d.mechanism;
    EXPECT_EQ(random.inputs.at(d.input).dtype(), Dtype::fp32);
    EXPECT_TRUE(h::run_subject(none, defective).pass) << d.mechanism << " " << d.name;
    const h::CaseResult r = h::run_subject(random, defective);
    EXPECT_FALSE(r.pass) << d.mechanism << " " << d.name;
    EXPECT_GT(r.main_output()->worst_ratio, 10) << d.mechanism << " " << d.name;
    RecordProperty(std::string(d.mechanism) + "_" + d.name + "_worst_ratio", std::to_string(r.main_output()->worst_ratio));
    for (const h::Subject& s : h::subjects()) {
      if (s.mechanism == d.mechanism && s.name.rfind("ref-", 0) == 0) {
        EXPECT_TRUE(h::run_subject(random, s).pass) << d.mechanism << " " << s.name;
      }
    }
  }
}

// HLA's initial summaries (mechanisms_hla.cpp): a kernel that drops them all, or reads the cross summary
// G_0 (AHLA: E_0) as 0, fails the cases with a random one at more than 10× the tolerance on o (the gradient
// twin: on its first gradient) and passes the others; the reference's forms pass both.
TEST(InitialStates, HlaTakesItsSummariesAndAKernelThatLosesPartOfThemFails) {
  struct Defect {
    const char* name;
    const char* mechanism;
    std::vector<std::string> inputs;  // erased, or zeroed
    bool zero;
  };
  const std::vector<std::string> second = {"initial_key_moment", "initial_query_values", "initial_cross"};
  std::vector<std::string> normalized = second;
  normalized.insert(normalized.end(), {"initial_query_sum", "initial_cross_sum"});
  const std::vector<std::string> ahla = {"initial_key_values", "initial_cross"};
  const Defect defects[] = {
      {"drops-initial-summaries", "hla", second, false},
      {"drops-initial-summaries", "hla-normalized", normalized, false},
      {"drops-initial-summaries", "ahla", ahla, false},
      {"drops-initial-summaries", "hla-backward", second, false},
      {"drops-initial-summaries", "ahla-backward", ahla, false},
      {"zero-initial-cross", "hla", {"initial_cross"}, true},
      {"zero-initial-cross", "hla-normalized", {"initial_cross"}, true},
      {"zero-initial-cross", "ahla", {"initial_cross"}, true},
  };
  for (const Defect& d : defects) {
    larc_test::register_edited({.name = d.name, .mechanism = d.mechanism, .edit = [d](h::ValueMap& v) {
                                  for (const std::string& n : d.inputs) {
                                    if (!v.count(n)) continue;
                                    if (d.zero) v.at(n) = larc::ref::Tensor<double>(v.at(n).shape);
                                    else v.erase(n);
                                  }
                                }});
    const h::Subject& defective = h::find_subject(d.name, d.mechanism);
    for (Dtype dtype : {Dtype::bf16, Dtype::fp32}) {
      const std::string what = std::string(d.mechanism) + " " + d.name + " " + std::string(larc::ref::dtype_name(dtype));
      const h::PreparedCase none = h::prepare_case(case_of(d.mechanism, {{h::kInitialStateKnob, 0}}, dtype));
      const h::PreparedCase random = h::prepare_case(case_of(d.mechanism, {{h::kInitialStateKnob, 2}}, dtype));
      for (const std::string& n : d.inputs) {
        EXPECT_FALSE(none.inputs.count(n)) << what;
        ASSERT_TRUE(random.inputs.count(n)) << what << " " << n;
        EXPECT_EQ(random.inputs.at(n).dtype(), Dtype::fp32) << what << " " << n;
      }
      EXPECT_TRUE(h::run_subject(none, defective).pass) << what;
      const h::CaseResult r = h::run_subject(random, defective);
      EXPECT_FALSE(r.pass) << what;
      EXPECT_GT(r.main_output()->worst_ratio, 10) << what;
      RecordProperty(std::string(d.mechanism) + "_" + d.name + "_" + std::string(larc::ref::dtype_name(dtype)) + "_worst_ratio",
                     std::to_string(r.main_output()->worst_ratio));
      for (const h::Subject& s : h::subjects()) {
        if (s.mechanism == d.mechanism && s.name.rfind("ref-", 0) == 0) {
          EXPECT_TRUE(h::run_subject(random, s).pass) << what << ": " << s.name;
        }
      }
    }
  }
}

// A subject that takes no initial state (larc's HLA kernels: ShapeLimits::initial_state = false) is not
// planned for the HLA cases that have one; the random cases draw them.
TEST(InitialStates, HlaSubjectsThatTakeNoneAreNotPlannedForCasesWithOne) {
  for (const char* mechanism : {"hla", "ahla-backward"}) {
    larc_test::register_edited({.name = "takes-no-initial-state", .mechanism = mechanism, .edit = [](h::ValueMap&) {},
                                .takes_initial_state = false});
    h::GateOptions o;
    o.subjects = {"takes-no-initial-state", "ref-serial-f32"};
    o.mechanisms = {mechanism};
    o.grid = false;
    o.random = 30;
    bool drawn = false;
    for (const h::GateGroup& g : h::plan_gate(o).groups) {
      const double initial = h::find_mechanism(mechanism).resolve_knobs(g.spec.knobs).at(h::kInitialStateKnob);
      drawn = drawn || initial != 0;
      for (const h::Subject* s : g.subjects) {
        if (s->name == "takes-no-initial-state") {
          EXPECT_EQ(initial, 0) << mechanism;
        }
      }
    }
    EXPECT_TRUE(drawn) << mechanism << ": the random cases draw the initial state";
  }
}

}  // namespace
