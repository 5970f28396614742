// The fuzzer (harness/fuzz.h): a campaign is a function of (seed, index); shards partition the
// indices; edge sizes are drawn often; a planted failure is found and shrunk to its smallest failing
// case; hill-climbing finds a larger error ratio than the same number of blind samples.
#include "larc/harness/fuzz.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "larc/harness/fuzz_report.h"
#include "planted_subjects.h"

namespace larc::harness {
namespace {
using namespace planted;

// A campaign over `subjects` (empty: all) with the given largest sizes.
CampaignConfig config(std::uint64_t seed, std::vector<std::string> subjects = {}, std::int64_t max_T = 256,
                      std::int64_t max_head_dim = 64, std::int64_t max_BH = 2) {
  CampaignConfig c;
  c.seed = seed;
  c.subjects = std::move(subjects);
  c.max_T = max_T;
  c.max_K = c.max_V = max_head_dim;
  c.max_B = c.max_H = max_BH;
  return c;
}

RunLimits first_cases(std::uint64_t n) {
  RunLimits l;
  l.cases = n;
  return l;
}

CaseResult passing(const CaseSpec& spec) {
  CaseResult r;
  r.spec = spec;
  r.pass = true;
  return r;
}

TEST(FuzzCampaign, CaseIsAFunctionOfSeedAndIndexOnly) {
  const Campaign a(config(7)), b(config(7)), other(config(8));
  int differs_from_other_seed = 0;
  for (std::uint64_t i = 0; i < 50; ++i) {
    const CaseSpec x = a.case_at(i), y = b.case_at(i);
    EXPECT_EQ(x.reproduce(), y.reproduce()) << "case " << i;
    EXPECT_EQ(x.knobs, y.knobs) << "case " << i;
    EXPECT_EQ(a.case_at(i).reproduce(), x.reproduce()) << "case " << i << " drawn twice";
    differs_from_other_seed += other.case_at(i).reproduce() != x.reproduce();
  }
  EXPECT_EQ(differs_from_other_seed, 50);
}

TEST(FuzzCampaign, DrawsEdgeSizesOftenAndKnobsFromTheirRanges) {
  const Campaign c(config(3));
  // Cells are drawn uniformly: 8 draws per cell leave one unseen with probability ≈ cells · e^{-8}.
  const int n = static_cast<int>(8 * c.cells().size());
  int t_one = 0, t_chunk_multiple = 0, t_ragged = 0, k_not_power = 0;
  std::vector<double> key_norms;
  std::set<std::string> cells;
  for (int i = 0; i < n; ++i) {
    const CaseSpec s = c.case_at(static_cast<std::uint64_t>(i));
    t_one += s.shape.T == 1;
    t_chunk_multiple += s.shape.T % 64 == 0;
    t_ragged += s.shape.T > 64 && s.shape.T % 64 != 0;
    k_not_power += (s.shape.K & (s.shape.K - 1)) != 0;
    ASSERT_LE(s.shape.T, 256);
    ASSERT_LE(s.shape.K, 64);
    cells.insert(s.subject + "/" + s.mechanism + "/" + std::string(ref::dtype_name(s.dtype)));
    const Mechanism& m = find_mechanism(s.mechanism);
    ASSERT_EQ(s.knobs.size(), m.knobs.size());
    for (const Knob& k : m.knobs) {
      ASSERT_GE(s.knobs.at(k.name), k.lo) << k.name;
      ASSERT_LE(s.knobs.at(k.name), k.hi) << k.name;
    }
    if (s.knobs.count("key_norm") && s.mechanism == "kla") key_norms.push_back(s.knobs.at("key_norm"));
  }
  EXPECT_GE(t_one, n / 6);
  EXPECT_GE(t_chunk_multiple, n / 6);
  EXPECT_GE(t_ragged, n / 10);
  EXPECT_GE(k_not_power, n / 3);
  EXPECT_EQ(cells.size(), c.cells().size()) << "every (subject, dtype) pair is drawn in " << n << " cases";
  // key_norm is log-uniform on [1e-4, 1e3]: median near 10^-0.5 (a uniform draw would give about 500);
  // the bounds are 2.5 decades either side, several standard deviations of the sample median.
  ASSERT_GE(key_norms.size(), 10u);
  std::nth_element(key_norms.begin(), key_norms.begin() + key_norms.size() / 2, key_norms.end());
  EXPECT_GT(key_norms[key_norms.size() / 2], 1e-3);
  EXPECT_LT(key_norms[key_norms.size() / 2], 100);
}

TEST(FuzzCampaign, FiltersSelectCellsAndRejectUnknownNames) {
  CampaignConfig one = config(1, {"ref-chunked-f32"});
  one.mechanisms = {"gdn"};
  one.dtypes = {Dtype::bf16};
  const Campaign c(one);
  ASSERT_EQ(c.cells().size(), 1u);
  EXPECT_EQ(c.case_at(5).subject, "ref-chunked-f32");
  EXPECT_EQ(c.case_at(5).dtype, Dtype::bf16);
  EXPECT_THROW(Campaign(config(1, {"no-such-kernel"})), std::invalid_argument);
  CampaignConfig bad = config(1);
  bad.mechanisms = {"no-such-mechanism"};
  EXPECT_THROW(Campaign{bad}, std::invalid_argument);
  bad = config(1);
  bad.dtypes = {Dtype::fp64};  // no subject takes fp64
  EXPECT_THROW(Campaign{bad}, std::invalid_argument);
}

// A subject's smallest K (vla-chunked takes K ≥ 16): ShapeLimits refuses the shapes below it (the gate's
// grid and the shrinker go by it) and every drawn case keeps to it; other subjects still draw K = 1.
TEST(FuzzCampaign, DrawsWithinASubjectsSmallestKeyDimension) {
  ShapeLimits at_least_16;
  at_least_16.min_K = 16;
  register_planted("planted-min-k-16", [](const TensorMap&, ValueMap&) {}, at_least_16);
  EXPECT_FALSE(limits_accept(at_least_16, {1, 8, 1, 15, 15}));
  EXPECT_TRUE(limits_accept(at_least_16, {1, 8, 1, 16, 1}));
  const Campaign c(config(5, {"planted-min-k-16"}));
  const Campaign all(config(5, {"ref-serial-f32"}));
  std::set<std::int64_t> ks, other_ks;
  for (std::uint64_t i = 0; i < 300; ++i) {
    const CaseSpec s = c.case_at(i);
    EXPECT_GE(s.shape.K, 16) << s.reproduce();
    ks.insert(s.shape.K);
    other_ks.insert(all.case_at(i).shape.K);
  }
  EXPECT_GE(ks.size(), 4u);  // still a spread of head dimensions
  EXPECT_EQ(other_ks.count(1), 1u);
}

TEST(FuzzCampaign, ShardsAreDisjointCoverTheCasesAndEqualTheUnshardedRun) {
  const Campaign c(config(11));
  const RunLimits limits = first_cases(20);
  const CampaignRun whole = run_campaign(c, {0, 1}, limits, {}, {}, passing);
  ASSERT_EQ(whole.cases.size(), 20u);
  std::vector<FuzzCase> merged;
  for (std::uint64_t j = 0; j < 3; ++j) {
    const CampaignRun part = run_campaign(c, {j, 3}, limits, {}, {}, passing);
    for (const FuzzCase& fc : part.cases) {
      EXPECT_EQ(fc.index % 3, j);
      merged.push_back(fc);
    }
  }
  std::sort(merged.begin(), merged.end(), [](const FuzzCase& a, const FuzzCase& b) { return a.index < b.index; });
  ASSERT_EQ(merged.size(), whole.cases.size());
  for (std::size_t i = 0; i < merged.size(); ++i) {
    EXPECT_EQ(merged[i].index, i) << "each index exactly once";
    EXPECT_EQ(merged[i].result.spec.reproduce(), whole.cases[i].result.spec.reproduce());
  }
  EXPECT_THROW(run_campaign(c, {3, 3}, limits, {}, {}, passing), std::invalid_argument);
  EXPECT_THROW(run_campaign(c, {0, 0}, limits, {}, {}, passing), std::invalid_argument);
}

TEST(FuzzCampaign, PlantedFailureIsFoundAndShrunkToItsSmallestFailingCase) {
  register_last_step_defect();
  const Campaign c(config(5, {kLastStep}, 128, 16));
  int saved = 0;
  const CampaignRun run = run_campaign(c, {0, 1}, first_cases(8), [&](const FuzzCase&) { return "saved-" + std::to_string(++saved); });
  ASSERT_GT(run.failures(), 0u) << "the planted defect fails every case with T >= 3";
  for (const FuzzCase& fc : run.cases) {
    EXPECT_EQ(fc.result.pass, fc.result.spec.shape.T < 3) << fc.result.spec.reproduce();
    if (fc.result.pass) continue;
    ASSERT_TRUE(fc.shrink.has_value());
    const CaseSpec& s = fc.shrink->shrunk.spec;
    EXPECT_FALSE(fc.shrink->shrunk.pass);
    EXPECT_EQ(failure_kinds(fc.shrink->shrunk), std::set<std::string>{"tolerance"});
    EXPECT_EQ(s.shape, (Shape{1, 3, 1, 1, 1})) << "from " << fc.result.spec.shape.str();
    EXPECT_EQ(s.knobs, find_mechanism("gdn").resolve_knobs({})) << "knobs moved to their defaults";
    EXPECT_EQ(s.seed, fc.result.spec.seed);
    // The path holds each accepted reduction; it ends at the shrunk case.
    ASSERT_EQ(fc.shrink->path.size(), static_cast<std::size_t>(fc.shrink->steps));
    if (!fc.shrink->path.empty()) {
      EXPECT_EQ(fc.shrink->path.back().reproduce(), s.reproduce());
    }
    EXPECT_FALSE(fc.fixture.empty());
    // The shrunk case reproduces from its spec alone.
    EXPECT_FALSE(run_case(s).pass);
  }
  EXPECT_EQ(saved, static_cast<int>(run.failures()));
}

TEST(FuzzCampaign, HonestSubjectPassesAndNothingIsShrunk) {
  CampaignConfig honest = config(2, {"ref-chunked-f32"}, 96, 16);
  honest.mechanisms = {"gdn"};
  honest.dtypes = {Dtype::fp32};
  const Campaign c(honest);
  const CampaignRun run = run_campaign(c, {0, 1}, first_cases(6));
  EXPECT_EQ(run.failures(), 0u);
  for (const FuzzCase& fc : run.cases) EXPECT_FALSE(fc.shrink.has_value());
}

// The edge regimes whose keys ignore the collinearity knob (orthonormal and heavy-tailed key sets),
// held at the plain key set for both searches: the comparison is about climbing one knob.
CampaignConfig collinear_config(std::uint64_t seed) {
  CampaignConfig cfg = config(seed, {kCollinear}, 24, 8, 1);
  cfg.knobs = {{"key_set", 0}};
  return cfg;
}

TEST(FuzzErrorSearch, HillClimbingBeatsTheSameNumberOfBlindSamples) {
  register_collinear_defect();
  for (std::uint64_t seed : {1, 2, 3, 4, 5}) {
    const Campaign c(collinear_config(seed));
    SearchLimits limits;
    limits.evaluations = 40;
    const ErrorSearch climb = hill_climb_error(c, {0, 1}, limits);
    const ErrorSearch blind = blind_sample_error(c, {0, 1}, limits);
    EXPECT_EQ(climb.evaluations, 40);
    EXPECT_EQ(blind.evaluations, 40);
    EXPECT_GT(climb.worst_score, blind.worst_score) << "seed " << seed;
    EXPECT_GT(climb.worst.spec.knobs.at("collinearity"), blind.worst.spec.knobs.at("collinearity")) << "seed " << seed;
    EXPECT_TRUE(std::is_sorted(climb.best_so_far.begin(), climb.best_so_far.end()));
    // The worst case is a real one: judging its spec again gives the same ratio.
    EXPECT_EQ(error_score(run_case(climb.worst.spec)), climb.worst_score);
  }
}

// --resume of a --target error search: an interrupted search's scores, replayed, retrace its steps
// without judging them again, and the search continues to the same end as an uninterrupted one.
TEST(FuzzErrorSearch, AResumedSearchEqualsAnUninterruptedOneAndJudgesOnlyTheRest) {
  register_collinear_defect();
  for (std::uint64_t seed : {3, 4}) {
    const Campaign c(collinear_config(seed));
    SearchLimits whole;
    whole.evaluations = 40;
    const ErrorSearch uninterrupted = hill_climb_error(c, {0, 1}, whole);
    SearchLimits first = whole;
    first.evaluations = 15;
    const ErrorSearch interrupted = hill_climb_error(c, {0, 1}, first);
    ASSERT_EQ(interrupted.scores.size(), 15u);

    SearchLimits resume = whole;
    resume.recorded = recorded_scores(error_search_report(nlohmann::json::object(), {0, 1}, interrupted, 1.0, "tree"));
    int judged = 0, checkpoints = 0;
    resume.after_each = [&](const ErrorSearch&) { ++checkpoints; };
    const CaseJudge counting = [&](const CaseSpec& spec) {
      ++judged;
      return run_case(spec);
    };
    const ErrorSearch resumed = hill_climb_error(c, {0, 1}, resume, counting);
    EXPECT_EQ(resumed.scores, uninterrupted.scores) << "seed " << seed;
    EXPECT_EQ(resumed.best_so_far, uninterrupted.best_so_far);
    EXPECT_EQ(resumed.restarts, uninterrupted.restarts);
    EXPECT_EQ(resumed.worst_score, uninterrupted.worst_score);
    EXPECT_EQ(resumed.worst.spec.reproduce(), uninterrupted.worst.spec.reproduce());
    EXPECT_EQ(error_score(resumed.worst), resumed.worst_score) << "the worst case's result is a real judgement";
    EXPECT_GE(resumed.replayed, 15);
    // Only the evaluations past the recorded ones are judged (+ the worst case once, when it was retraced).
    EXPECT_GE(judged, 40 - resumed.replayed);
    EXPECT_LE(judged, 40 - resumed.replayed + 1);
    EXPECT_EQ(checkpoints, 40 - resumed.replayed);
  }
}

TEST(FuzzErrorSearch, RecordedScoresRoundTripThroughTheReportInfinitiesIncluded) {
  ErrorSearch s;  // no worst case to report (evaluations = 0): the scores alone
  s.scores = {{"larc gate --a", 0.5}, {"larc gate --b", std::numeric_limits<double>::infinity()},
              {"larc gate --c", -std::numeric_limits<double>::infinity()}};
  const auto back = recorded_scores(error_search_report(nlohmann::json::object(), {0, 1}, s, 1.0, "tree"));
  EXPECT_EQ(back, (std::map<std::string, double>{s.scores.begin(), s.scores.end()}));
}

TEST(FuzzErrorSearch, ScoreIsTheWorstRatioAndInfiniteForBrokenOutputs) {
  CaseResult r;
  r.pass = true;
  Judgement o, s;
  o.output = "o", o.worst_ratio = 0.4;
  s.output = "final_state", s.worst_ratio = 0.7;
  r.outputs = {o, s};
  EXPECT_EQ(error_score(r), 0.7);
  r.pass = false;
  r.outputs[0].non_finite = 1;
  r.outputs[0].violations = {"o: nan"};
  r.errors = {"o: nan"};
  r.outputs[0].oracle_certified = r.outputs[1].oracle_certified = true;
  EXPECT_TRUE(std::isinf(error_score(r)) && error_score(r) > 0);
  r.outputs[0].non_finite = 0;
  r.outputs[0].baseline_non_finite = 1;
  EXPECT_TRUE(std::isinf(error_score(r)) && error_score(r) < 0) << "outside the dtype's range: no ratio means anything";
}

}  // namespace
}  // namespace larc::harness
