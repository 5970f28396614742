// The case vocabulary's initial states (harness/mechanism.h, docs/gate.md "What a case is"): a
// kernel that ignores the initial state fails every case that has one and passes those that have
// none; subjects that take no initial state are not planned for such cases; the knob takes whole
// numbers only; the fuzzer draws every choice; a fixture keeps the state in float32.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "larc/harness/fixture.h"
#include "larc/harness/fuzz.h"
#include "larc/harness/gate.h"

namespace {

namespace h = larc::harness;
using larc::ref::Dtype;

// GDN in float from the inputs, the initial state dropped.
void register_ignoring_subject(const std::string& name, bool takes_initial_state) {
  for (const h::Subject& s : h::subjects())
    if (s.name == name) return;
  h::Subject s;
  s.name = name;
  s.mechanism = "gdn";
  s.dtypes = {Dtype::bf16, Dtype::fp32};
  s.takes_initial_state = takes_initial_state;
  s.launch = [](const h::TensorMap& in, h::TensorMap& out) {
    h::ValueMap values = h::decode_all(in);
    values.erase("initial_state");
    const h::ValueMap o = h::find_mechanism("gdn").compute(values, h::Precision::f32, larc::ref::Form::serial, 0);
    for (auto& [n, t] : out)
      for (std::size_t i = 0; i < t.size(); ++i) t.set(i, o.at(n).data[i]);
  };
  h::register_subject(std::move(s));
}

// Weak decay (decay_max 0.01), so that the initial state still shapes the final state.
h::CaseSpec gdn_case(double initial_state, Dtype d = Dtype::bf16) {
  h::CaseSpec s;
  s.mechanism = "gdn";
  s.dtype = d;
  s.shape = {2, 70, 2, 8, 8};
  s.seed = 9;
  s.knobs = {{h::kInitialStateKnob, initial_state}, {"decay_max", 0.01}};
  return s;
}

TEST(InitialStates, AKernelThatIgnoresThemFailsOnlyWhereThereIsOne) {
  register_ignoring_subject("ignores-initial-state", true);
  for (Dtype d : {Dtype::bf16, Dtype::fp32}) {
    const h::PreparedCase none = h::prepare_case(gdn_case(0, d)), zero = h::prepare_case(gdn_case(1, d)),
                          random = h::prepare_case(gdn_case(2, d));
    EXPECT_FALSE(none.inputs.count("initial_state"));
    EXPECT_EQ(zero.inputs.at("initial_state").dtype(), Dtype::fp32);
    const h::Subject& s = h::find_subject("ignores-initial-state", "gdn");
    EXPECT_TRUE(h::run_subject(none, s).pass);
    EXPECT_TRUE(h::run_subject(zero, s).pass);
    const h::CaseResult r = h::run_subject(random, s);
    EXPECT_FALSE(r.pass);
    EXPECT_GT(r.outputs.at(0).worst_ratio, 100) << "o";
    EXPECT_GT(r.outputs.at(1).worst_ratio, 100) << "final_state";
    // The reference's own forms take it.
    EXPECT_TRUE(h::run_subject(random, h::find_subject("ref-chunked-f32", "gdn")).pass);
  }
}

TEST(InitialStates, SubjectsThatTakeNoneAreNotPlannedForThem) {
  register_ignoring_subject("takes-no-initial-state", false);
  h::GateOptions o;
  o.subjects = {"takes-no-initial-state", "ref-serial-f32"};
  o.mechanisms = {"gdn"};
  o.random = 40;
  const h::GatePlan plan = h::plan_gate(o);
  std::set<int> seen;
  for (const h::GateGroup& g : plan.groups) {
    const h::KnobValues knobs = h::find_mechanism("gdn").resolve_knobs(g.spec.knobs);
    seen.insert(static_cast<int>(knobs.at(h::kInitialStateKnob)));
    for (const h::Subject* s : g.subjects)
      if (s->name == "takes-no-initial-state") {
        EXPECT_EQ(knobs.at(h::kInitialStateKnob), 0);
      }
  }
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2})) << "the grid and the random cases draw every initial-state choice";
}

TEST(InitialStates, TheKnobTakesWholeNumbersOnly) {
  const h::Mechanism& gdn = h::find_mechanism("gdn");
  try {
    gdn.resolve_knobs({{h::kInitialStateKnob, 1.5}});
    FAIL() << "1.5 must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("knob 'initial_state': expected a whole number in [0, 2], got 1.5"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(gdn.resolve_knobs({{h::kInitialStateKnob, 3}}), std::invalid_argument);
}

TEST(InitialStates, AFixtureKeepsTheStateInFloat32) {
  const h::PreparedCase p = h::prepare_case(gdn_case(2));
  const auto path = std::filesystem::temp_directory_path() / "larc_case_vocabulary_h0.safetensors";
  h::write_fixture(path, p);
  const h::PreparedCase back = h::read_fixture(path);
  ASSERT_TRUE(back.inputs.count("initial_state"));
  EXPECT_EQ(back.inputs.at("initial_state").dtype(), Dtype::fp32);
  EXPECT_EQ(back.inputs.at("initial_state").decode().data, p.inputs.at("initial_state").decode().data);
  EXPECT_EQ(back.oracle.at("final_state").data, p.oracle.at("final_state").data);
  std::filesystem::remove(path);
}

}  // namespace
