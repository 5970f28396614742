// The case vocabulary's initial states (harness/mechanism.h, docs/gate.md "What a case is"): a
// kernel that ignores the initial state fails every case that has one and passes those that have
// none; subjects that take no initial state are not planned for such cases; the knob takes whole
// numbers only; the fuzzer draws every choice; a fixture keeps the state in float32. The edge regimes:
// the inputs are what their knobs say, the default grid and the fuzzer draw them, and kernels that
// assume them away (prefix-sum decays at g = −∞, β clamped to 1) fail only the cases that have them.
// The one shrinker (cases/shrink.h) that the claims' search and the fuzzer share.
// Raw queries and keys (the -qk-l2norm mechanisms): every token's norm is its own, spread over the knobs'
// range, around the plain case's directions; a bad range is refused by name; the grid and the fuzzer draw
// them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <optional>
#include <set>

#include "larc/cases/shrink.h"
#include "larc/harness/fixture.h"
#include "larc/harness/fuzz.h"
#include "larc/harness/gate.h"
#include "edited_subjects.h"

namespace {

namespace h = larc::harness;
using larc::ref::Dtype;

// GDN in float from the inputs as `edit` leaves them (a kernel that assumes something of its inputs).
void register_edited_gdn(const std::string& name, std::function<void(h::ValueMap&)> edit, bool takes_initial_state = true) {
  larc_test::register_edited({.name = name, .mechanism = "gdn", .edit = std::move(edit), .takes_initial_state = takes_initial_state});
}

// GDN in float from the inputs, the initial state dropped.
void register_ignoring_subject(const std::string& name, bool takes_initial_state) {
  register_edited_gdn(name, [](h::ValueMap& v) { v.erase("initial_state"); }, takes_initial_state);
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

// --- Edge regimes ---------------------------------------------------------------------------------

h::ValueMap gdn_inputs(const h::KnobValues& knobs, std::int64_t T = 256, std::int64_t K = 8) {
  const h::Mechanism& m = h::find_mechanism("gdn");
  return m.generate({2, T, 2, K, 8}, 11, m.resolve_knobs(knobs));
}

TEST(EdgeRegimes, TheInputsAreWhatTheKnobsSay) {
  const h::ValueMap plain = gdn_inputs({});
  // Hard and zero decays: the fractions asked for, everything else the plain case's.
  const h::ValueMap hard = gdn_inputs({{"hard_decay_fraction", 0.25}, {"zero_decay_fraction", 0.25}});
  std::int64_t minus_inf = 0, zeros = 0;
  for (double g : hard.at("g").data) minus_inf += std::isinf(g) && g < 0, zeros += g == 0;
  const auto n = static_cast<double>(hard.at("g").data.size());
  EXPECT_NEAR(minus_inf / n, 0.25, 0.06);
  EXPECT_NEAR(zeros / n, 0.25, 0.06);
  EXPECT_EQ(hard.at("q").data, plain.at("q").data);
  EXPECT_EQ(hard.at("beta").data, plain.at("beta").data);
  // Orthonormal key sets: within a head, keys t and t + j (j < K) are orthogonal, unit norm.
  const larc::ref::Mat<double> keys = larc::ref::head_rows(gdn_inputs({{"key_set", 1}}).at("k"), 0, 1);
  for (std::int64_t t = 0; t + 7 < 256; t += 37) {
    EXPECT_NEAR(keys.row(t).norm(), 1, 1e-12);
    for (std::int64_t j = 1; j < 8; ++j) EXPECT_NEAR(keys.row(t).dot(keys.row(t + j)), 0, 1e-12);
  }
  // Heavy tails: q's kurtosis far above the Gaussian's 3.
  auto kurtosis = [](const std::vector<double>& x) {
    double m2 = 0, m4 = 0;
    for (double v : x) m2 += v * v, m4 += v * v * v * v;
    m2 /= static_cast<double>(x.size()), m4 /= static_cast<double>(x.size());
    return m4 / (m2 * m2);
  };
  EXPECT_LT(kurtosis(plain.at("q").data), 3.5);
  EXPECT_GT(kurtosis(gdn_inputs({{"entries", 1}}).at("q").data), 5);
  // β up to 2, accepted by the input's range.
  const h::ValueMap steep = gdn_inputs({{"beta_lo", 1}, {"beta_hi", 2}});
  EXPECT_GT(*std::max_element(steep.at("beta").data.begin(), steep.at("beta").data.end()), 1.9);
}

TEST(EdgeRegimes, TheDefaultGridAndTheFuzzerDrawThem) {
  h::GateOptions o;
  o.mechanisms = {"gdn"};
  o.subjects = {"ref-serial-f32"};
  const h::GatePlan plan = h::plan_gate(o);
  std::set<double> hard, key_sets, entries;
  for (const h::GateGroup& g : plan.groups) {
    hard.insert(g.spec.knobs.at("hard_decay_fraction"));
    key_sets.insert(g.spec.knobs.at("key_set"));
    entries.insert(g.spec.knobs.at("entries"));
  }
  EXPECT_EQ(hard, (std::set<double>{0, 0.125}));
  EXPECT_EQ(key_sets, (std::set<double>{0, 1, 2}));
  EXPECT_EQ(entries, (std::set<double>{0, 1}));

  h::CampaignConfig cfg;
  cfg.mechanisms = {"gdn"};
  cfg.subjects = {"ref-serial-f32"};
  const h::Campaign c(cfg);
  int plain_key_set = 0, hard_decay = 0;
  std::set<double> drawn_key_sets;
  for (std::uint64_t i = 0; i < 200; ++i) {
    const h::CaseSpec s = c.case_at(i);
    drawn_key_sets.insert(s.knobs.at("key_set"));
    plain_key_set += s.knobs.at("key_set") == 0;
    hard_decay += s.knobs.at("hard_decay_fraction") > 0;
  }
  EXPECT_EQ(drawn_key_sets, (std::set<double>{0, 1, 2}));
  EXPECT_GT(plain_key_set, 100) << "regimes are drawn at their plain value half of the time and more";
  EXPECT_GT(hard_decay, 60);
  EXPECT_LT(hard_decay, 140);

  // A held knob: every case has it, searches never move it, a name no mechanism has is refused.
  cfg.knobs = {{"key_set", 1}};
  const h::Campaign held(cfg);
  for (std::uint64_t i = 0; i < 20; ++i) EXPECT_EQ(held.case_at(i).knobs.at("key_set"), 1);
  cfg.knobs = {{"no_such_knob", 1}};
  EXPECT_THROW(h::Campaign{cfg}, std::invalid_argument);
  cfg.knobs = {{"key_set", 7}};
  EXPECT_THROW(h::Campaign{cfg}, std::invalid_argument);
}

// Kernels that assume away an edge regime fail the cases that have it and pass the plain ones: decays
// taken as e^{G_i − G_j} from prefix sums of g (NaN where g = −∞), and β clamped to [0, 1].
TEST(EdgeRegimes, KernelsThatAssumeThemAwayFail) {
  register_edited_gdn("prefix-sum-decays", [](h::ValueMap& v) {
    for (double& g : v.at("g").data)
      if (std::isinf(g)) g = std::numeric_limits<double>::quiet_NaN();  // −∞ − (−∞)
  });
  register_edited_gdn("beta-clamped-to-one", [](h::ValueMap& v) {
    for (double& b : v.at("beta").data) b = std::min(b, 1.0);
  });
  for (Dtype d : {Dtype::bf16, Dtype::fp32}) {
    h::CaseSpec plain = gdn_case(0, d), hard = plain, steep = plain;
    hard.knobs["hard_decay_fraction"] = 0.125;
    steep.knobs["beta_lo"] = 1;
    steep.knobs["beta_hi"] = 2;
    const h::PreparedCase p = h::prepare_case(plain), ph = h::prepare_case(hard), ps = h::prepare_case(steep);
    EXPECT_TRUE(h::run_subject(p, h::find_subject("prefix-sum-decays", "gdn")).pass);
    EXPECT_FALSE(h::run_subject(ph, h::find_subject("prefix-sum-decays", "gdn")).pass);
    EXPECT_TRUE(h::run_subject(p, h::find_subject("beta-clamped-to-one", "gdn")).pass);
    const h::CaseResult clamped = h::run_subject(ps, h::find_subject("beta-clamped-to-one", "gdn"));
    EXPECT_FALSE(clamped.pass);
    EXPECT_GT(clamped.outputs.at(0).worst_ratio, 10);
    for (const h::PreparedCase* c : {&ph, &ps})
      EXPECT_TRUE(h::run_subject(*c, h::find_subject("ref-chunked-f32", "gdn")).pass);
  }
}

// Integers fail from 37 up; the candidates of x are 0, x/2 and x − 1, in that order.
TEST(OneShrinker, MovesToTheFirstCandidateThatStillFailsUntilNoneDoes) {
  const auto candidates_of = [](int x) { return larc::cases::CandidateList<int>({0, x / 2, x - 1}); };
  int tries_seen = 0;
  const auto still_fails = [&](int c) {
    ++tries_seen;
    return c >= 37 ? std::optional<int>(c) : std::nullopt;
  };
  int x = 1000;
  const larc::cases::ShrinkCount n = larc::cases::shrink_greedily(x, candidates_of, still_fails);
  EXPECT_EQ(x, 37);  // 1000 → 500 → 250 → 125 → 62 → 61 → … → 37: no candidate of 37 fails
  EXPECT_EQ(n.steps, 4 + (62 - 37));
  EXPECT_EQ(n.tries, tries_seen);
  int y = 1000;
  const larc::cases::ShrinkCount budget = larc::cases::shrink_greedily(y, candidates_of, still_fails, 5);
  EXPECT_EQ(budget.tries, 5);  // 0 (passes), 500 (fails), 0, 250 (fails), 0
  EXPECT_EQ(y, 250);
  EXPECT_EQ(budget.steps, 2);
}

// --- Raw queries and keys ---------------------------------------------------------------------------

TEST(RawQueryKeys, EveryTokenHasItsOwnNormAroundThePlainDirections) {
  const h::Shape s{2, 256, 2, 8, 8, 4};
  for (const std::string raw_name : {"gdn-qk-l2norm", "deltanet-qk-l2norm"}) {
    const h::Mechanism& raw = h::find_mechanism(raw_name);
    const h::Mechanism& plain = h::find_mechanism(raw_name.substr(0, raw_name.find("-qk-l2norm")));
    for (const auto& [lo, hi] : {std::pair{1e-2, 1e2}, std::pair{1e-4, 1e-2}, std::pair{5.0, 5.0}}) {
      const h::ValueMap r = raw.generate(s, 11, raw.resolve_knobs({{"qk_norm_lo", lo}, {"qk_norm_hi", hi}}));
      const h::ValueMap p = plain.generate(s, 11, plain.resolve_knobs({}));
      for (const char* x : {"q", "k"}) {
        double smallest = INFINITY, largest = 0;
        for (std::int64_t b = 0; b < s.B; ++b)
          for (std::int64_t hd = 0; hd < s.H; ++hd) {
            const larc::ref::Mat<double> raw_rows = larc::ref::head_rows(r.at(x), b, hd), rows = larc::ref::head_rows(p.at(x), b, hd);
            for (std::int64_t t = 0; t < s.T; ++t) {
              const double n = raw_rows.row(t).norm();
              smallest = std::min(smallest, n), largest = std::max(largest, n);
              EXPECT_NEAR((raw_rows.row(t) / n - rows.row(t) / rows.row(t).norm()).norm(), 0, 1e-12) << x << " direction";
            }
          }
        EXPECT_GE(smallest, lo * (1 - 1e-12)) << x;
        EXPECT_LE(largest, hi * (1 + 1e-12)) << x;
        if (lo < hi) {  // spread: 1024 log-uniform draws reach both ends of the range within 2 %
          EXPECT_LT(std::log(smallest / lo), 0.02 * std::log(hi / lo)) << x;
          EXPECT_LT(std::log(hi / largest), 0.02 * std::log(hi / lo)) << x;
        }
      }
      for (const char* other : {"v", "beta"}) EXPECT_EQ(r.at(other).data, p.at(other).data) << other;
    }
    for (const char* knob : {"qk_norm_lo", "qk_norm_hi"})
      for (double bad : {0.0, 1e5}) {
        try {
          raw.resolve_knobs({{knob, bad}});
          FAIL() << knob << " = " << bad << " must be refused";
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find(std::string("knob '") + knob + "'"), std::string::npos) << e.what();
        }
      }
  }
}

TEST(RawQueryKeys, TheGridAndTheFuzzerDrawTinyAndSpreadNorms) {
  h::GateOptions o;
  o.mechanisms = {"gdn-qk-l2norm"};
  o.subjects = {"ref-serial-f32"};
  std::set<std::pair<double, double>> ranges;
  for (const h::GateGroup& g : h::plan_gate(o).groups) ranges.insert({g.spec.knobs.at("qk_norm_lo"), g.spec.knobs.at("qk_norm_hi")});
  EXPECT_EQ(ranges, (std::set<std::pair<double, double>>{{1e-2, 1e2}, {1e-4, 1e-2}}));

  h::CampaignConfig cfg;
  cfg.mechanisms = {"gdn-qk-l2norm", "deltanet-qk-l2norm-backward"};
  cfg.subjects = {"ref-serial-f32"};
  const h::Campaign c(cfg);
  int below_1e2 = 0, above_1e2 = 0;
  for (std::uint64_t i = 0; i < 200; ++i) {
    const h::KnobValues k = c.case_at(i).knobs;
    below_1e2 += std::min(k.at("qk_norm_lo"), k.at("qk_norm_hi")) < 1e-2;
    above_1e2 += std::max(k.at("qk_norm_lo"), k.at("qk_norm_hi")) > 1e2;
  }
  EXPECT_GT(below_1e2, 40);
  EXPECT_GT(above_1e2, 40);
}

}  // namespace
