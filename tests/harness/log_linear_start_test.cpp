// Log-linear attention continuing a sequence in the gate (harness/src/mechanisms_log_linear.cpp, docs/gate.md
// "Initial states"): with the initial_state knob a log-linear case has start_offset t0 ∈ [1, 64] and
// initial_level_states [B,H,L,K,V] with L = level_count(t0 + T) (float32), the reference's forms pass it,
// and a kernel that loses part of the start fails it and passes the cases without one: one that drops the
// carried states (t0 kept), one that ignores t0 (levels from position 0, nothing carried), one that reads
// a carried bucket at the wrong level (its state added to the next carried level's). Subjects that take no
// initial state are not planned for such cases. The gradient twin's dinitial_level_states is present only
// in cases with a start.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <functional>
#include <iostream>
#include <vector>

#include "edited_subjects.h"
#include "larc/harness/gate.h"
#include "larc/reference/fenwick.h"

namespace {

namespace h = larc::harness;
using larc::ref::Dtype;
namespace fenwick = larc::ref::fenwick;

h::CaseSpec case_of(const std::string& mechanism, int initial_state, std::uint64_t seed) {
  h::CaseSpec s;
  s.mechanism = mechanism;
  s.dtype = Dtype::bf16;
  s.shape = {2, 70, 2, 8, 8};
  s.seed = seed;
  s.knobs = {{h::kInitialStateKnob, initial_state}};
  return s;
}

std::uint64_t offset_of(const h::ValueMap& in) { return static_cast<std::uint64_t>(in.at("start_offset").data.at(0)); }

// Adds slot `from` of every (b, h) of initial_level_states into slot `to` and zeroes it.
void move_slot(larc::ref::Tensor<double>& x, std::int64_t from, std::int64_t to) {
  const std::int64_t BH = x.dim(0) * x.dim(1), L = x.dim(2), KV = x.dim(3) * x.dim(4);
  for (std::int64_t bh = 0; bh < BH; ++bh)
    for (std::int64_t i = 0; i < KV; ++i) {
      double& src = x.data[static_cast<std::size_t>((bh * L + from) * KV + i)];
      x.data[static_cast<std::size_t>((bh * L + to) * KV + i)] += src;
      src = 0;
    }
}

TEST(LogLinearStart, TheCaseCarriesTheOffsetAndOneStatePerBucket) {
  for (const char* mechanism : {"log-linear", "log-linear-gdn"}) {
    const h::PreparedCase none = h::prepare_case(case_of(mechanism, 0, 4));
    EXPECT_FALSE(none.inputs.count("start_offset") || none.inputs.count("initial_level_states")) << mechanism;
    for (int knob : {1, 2}) {
      const h::PreparedCase p = h::prepare_case(case_of(mechanism, knob, 4));
      const h::ValueMap in = h::decode_all(p.inputs);
      const std::uint64_t t0 = offset_of(in);
      EXPECT_GE(t0, 1u);
      EXPECT_LE(t0, 64u);
      const std::int64_t L = fenwick::level_count(t0 + 70);
      EXPECT_EQ(p.spec.shape.levels(), L);
      EXPECT_EQ(in.at("level_scales").dim(3), L);
      EXPECT_EQ(in.at("initial_level_states").shape, (std::vector<std::int64_t>{2, 2, L, 8, 8}));
      EXPECT_EQ(p.inputs.at("initial_level_states").dtype(), Dtype::fp32);
      double carried = 0;
      for (double x : in.at("initial_level_states").data) carried += x * x;
      if (knob == 1) EXPECT_EQ(carried, 0) << mechanism;
      else EXPECT_GT(carried, 0) << mechanism;
    }
  }
}

TEST(LogLinearStart, AKernelThatLosesPartOfTheStartFails) {
  struct Defect {
    const char* name;
    std::function<void(h::ValueMap&)> edit;
  };
  const Defect defects[] = {
      {"drops-initial_level_states",
       [](h::ValueMap& v) {
         if (v.count("initial_level_states")) v.at("initial_level_states") = larc::ref::Tensor<double>(v.at("initial_level_states").shape);
       }},
      {"ignores-start_offset",
       [](h::ValueMap& v) {
         v.erase("start_offset");
         v.erase("initial_level_states");
       }},
      {"reads-a-bucket-at-the-wrong-level",
       [](h::ValueMap& v) {
         if (!v.count("start_offset")) return;
         const std::vector<int> levels = fenwick::carried_levels(offset_of(v));
         if (levels.size() >= 2) move_slot(v.at("initial_level_states"), levels[0], levels[1]);
       }},
  };
  for (const char* mechanism : {"log-linear", "log-linear-gdn"}) {
    std::uint64_t seed = 4;  // a case whose t0 has two buckets at least (the wrong-level defect needs two)
    while (std::popcount(offset_of(h::decode_all(h::prepare_case(case_of(mechanism, 2, seed)).inputs))) < 2) ++seed;
    const h::PreparedCase none = h::prepare_case(case_of(mechanism, 0, seed));
    const h::PreparedCase random = h::prepare_case(case_of(mechanism, 2, seed));
    for (const Defect& d : defects) {
      larc_test::register_edited({.name = d.name, .mechanism = mechanism, .edit = d.edit});
      const h::Subject& defective = h::find_subject(d.name, mechanism);
      EXPECT_TRUE(h::run_subject(none, defective).pass) << mechanism << " " << d.name;
      const h::CaseResult r = h::run_subject(random, defective);
      ASSERT_NE(r.main_output(), nullptr) << mechanism << " " << d.name;
      EXPECT_FALSE(r.pass) << mechanism << " " << d.name;
      EXPECT_GT(r.main_output()->worst_ratio, 10) << mechanism << " " << d.name;
      RecordProperty(std::string(mechanism) + "_" + d.name + "_worst_ratio", std::to_string(r.main_output()->worst_ratio));
      std::cout << mechanism << " " << d.name << " (t0 = " << offset_of(h::decode_all(random.inputs))
                << "): worst ratio " << r.main_output()->worst_ratio << "\n";
    }
    for (const h::Subject& s : h::subjects())
      if (s.mechanism == mechanism && s.name.rfind("ref-", 0) == 0) {
        EXPECT_TRUE(h::run_subject(random, s).pass) << mechanism << " " << s.name;
      }
  }
}

TEST(LogLinearStart, SubjectsThatTakeNoInitialStateAreNotPlannedForCasesWithOne) {
  larc_test::register_edited(
      {.name = "takes-no-start", .mechanism = "log-linear", .edit = [](h::ValueMap&) {}, .takes_initial_state = false});
  h::GateOptions o;
  o.subjects = {"takes-no-start", "ref-serial-f32"};
  o.mechanisms = {"log-linear"};
  o.grid = false;
  o.random = 24;
  bool drawn = false;
  for (const h::GateGroup& g : h::plan_gate(o).groups) {
    const double knob = h::find_mechanism("log-linear").resolve_knobs(g.spec.knobs).at(h::kInitialStateKnob);
    drawn = drawn || knob != 0;
    for (const h::Subject* s : g.subjects) {
      if (s->name == "takes-no-start") {
        EXPECT_EQ(knob, 0);
      }
    }
  }
  EXPECT_TRUE(drawn) << "the random cases draw a start";
}

TEST(LogLinearStart, TheTwinsGradientOfTheCarriedStatesIsPresentOnlyWithAStart) {
  for (const char* twin : {"log-linear-backward", "log-linear-gdn-backward"}) {
    const h::PreparedCase none = h::prepare_case(case_of(twin, 0, 4));
    const h::PreparedCase random = h::prepare_case(case_of(twin, 2, 4));
    EXPECT_FALSE(none.oracle.count("dinitial_level_states")) << twin;
    ASSERT_TRUE(random.oracle.count("dinitial_level_states")) << twin;
    EXPECT_EQ(random.oracle.at("dinitial_level_states").shape, h::decode_all(random.inputs).at("initial_level_states").shape);
    EXPECT_TRUE(h::run_subject(none, h::find_subject("ref-serial-f32", twin)).pass) << twin;
    EXPECT_TRUE(h::run_subject(random, h::find_subject("ref-serial-f32", twin)).pass) << twin;
  }
}

}  // namespace
