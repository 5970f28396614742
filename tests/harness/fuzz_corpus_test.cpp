// The fuzzer's corpus and reports (harness/fuzz_report.h): a planted failure found by a campaign is
// saved as a fixture with its reproduce commands, and the gate's fixture replay (what `larc gate
// --fixtures DIR` runs) fails it again while the honest subjects pass it; reports survive a JSON
// round trip; merge joins shards into the unsharded report and rejects shards of different campaigns,
// duplicates and gaps, naming the problem; an interrupted campaign keeps its finished cases and saved
// failures, and resumed it equals the uninterrupted run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "larc/harness/fixture.h"
#include "larc/harness/fuzz_report.h"
#include "larc/harness/gate.h"
#include "planted_subjects.h"

namespace larc::harness {
namespace {
namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("larc_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

CampaignConfig planted_campaign() {
  CampaignConfig c;
  c.seed = 5;
  c.subjects = {planted::kLastStep};
  c.max_T = 96;
  c.max_K = c.max_V = 16;
  return c;
}

// The limits of a campaign of cases 0..n-1.
RunLimits first_cases(std::uint64_t n) {
  RunLimits l;
  l.cases = n;
  return l;
}

// Strips the timings (the only fields two runs of the same cases may differ in).
nlohmann::json without_timings(nlohmann::json j) {
  if (j.is_object()) {
    j.erase("seconds");
    j.erase("cases_per_second");
    for (auto& [k, v] : j.items()) v = without_timings(v);
  } else if (j.is_array()) {
    for (auto& v : j) v = without_timings(v);
  }
  return j;
}

TEST(FuzzCorpus, PlantedFailureIsSavedAndReplayedByTheGate) {
  planted::register_last_step_defect();
  // LARC_FUZZ_CORPUS_OUT keeps the corpus for the CLI test that replays it through `larc gate`.
  const char* keep = std::getenv("LARC_FUZZ_CORPUS_OUT");
  const fs::path corpus = keep && *keep ? fs::path(keep) : fresh_dir("corpus");
  fs::remove_all(corpus);
  const CampaignConfig cfg = planted_campaign();
  const Campaign campaign(cfg);
  const CampaignRun run = run_campaign(campaign, Shard{}, first_cases(6), [&](const FuzzCase& f) {
    return save_to_corpus(corpus, f, campaign_case_command(cfg, f.index));
  });
  ASSERT_GT(run.failures(), 0u);
  // Every failure shrinks to T = 3, B = H = K = V = 1 with default knobs: one file per case seed.
  std::set<std::string> files;
  for (const FuzzCase& f : run.cases)
    if (!f.result.pass) files.insert(f.fixture);
  EXPECT_EQ(fixture_files({corpus.string()}).size(), files.size());

  for (const std::string& file : files) {
    const fixtures::SafetensorsFile raw = fixtures::read_safetensors(file);
    EXPECT_EQ(raw.metadata.at("subject"), planted::kLastStep);
    EXPECT_NE(raw.metadata.at("reproduce").find("larc gate --fixtures " + file), std::string::npos);
    EXPECT_NE(raw.metadata.at("found_by").find("larc fuzz --seed 5 --cases "), std::string::npos);
    EXPECT_NE(raw.metadata.at("failure").find("timestep 2"), std::string::npos) << raw.metadata.at("failure");
    const PreparedCase p = read_fixture(file);
    EXPECT_EQ(p.spec.shape, (Shape{1, 3, 1, 1, 1}));
  }

  // The gate's replay of the corpus (larc gate --fixtures DIR --no-grid --random 0).
  GateOptions o;
  o.grid = false;
  o.random = 0;
  o.mechanisms = {"gdn"};
  o.fixtures = {corpus.string()};
  const std::vector<CaseResult> replay = run_gate(plan_gate(o), Shard{});
  std::size_t planted_failed = 0, honest = 0;
  for (const CaseResult& r : replay) {
    if (r.spec.subject == planted::kLastStep) {
      planted_failed += r.pass ? 0 : 1;
      EXPECT_EQ(failure_kinds(r), std::set<std::string>{"tolerance"});
    } else {
      ++honest;
      EXPECT_TRUE(r.pass) << r.spec.subject << ": " << (r.errors.empty() ? "" : r.errors[0]);
    }
  }
  EXPECT_EQ(planted_failed, files.size()) << "the replay fails the planted subject on every saved fixture";
  EXPECT_GT(honest, 0u);
  if (!keep || !*keep) fs::remove_all(corpus);
}

TEST(FuzzReports, ShardsMergeIntoTheUnshardedReport) {
  planted::register_last_step_defect();
  const CampaignConfig cfg = planted_campaign();
  const Campaign campaign(cfg);
  const nlohmann::json id = campaign_json(cfg, {.cases = 7, .minutes = {}, .target_error = false});
  const RunLimits limits = first_cases(7);
  const nlohmann::json whole = campaign_report(id, Shard{}, run_campaign(campaign, Shard{}, limits), "tree");
  std::vector<nlohmann::json> shards;
  for (std::uint64_t j : {2, 0, 1})  // any order
    shards.push_back(campaign_report(id, {j, 3}, run_campaign(campaign, {j, 3}, limits), "tree"));
  const nlohmann::json merged = merge_reports(shards, {"c.json", "a.json", "b.json"});
  EXPECT_EQ(without_timings(merged["results"]), without_timings(whole["results"]));
  EXPECT_EQ(merged["campaign"], whole["campaign"]);
  EXPECT_EQ(merged["shard"], "0/1");
  EXPECT_EQ(merged["policy"], tolerance_policy_json(ToleranceConfig{}));
  EXPECT_EQ(merged["summary"]["cases"], 7);
  EXPECT_EQ(merged["summary"]["failures"], whole["summary"]["failures"]);
  EXPECT_GT(merged["summary"]["failures"].get<int>(), 0);

  // The results rebuilt from the merged JSON give the same JUnit as the unsharded run's, timings aside.
  const std::vector<CaseResult> back = results_of_report(whole);
  ASSERT_EQ(back.size(), 7u);
  for (const CaseResult& r : back) EXPECT_EQ(r.spec.shape.T == 3 || r.pass, true) << r.spec.shape.str();
  const std::regex time_attribute(" time=\"[^\"]*\"");
  EXPECT_EQ(std::regex_replace(gate_junit(back, "x"), time_attribute, ""),
            std::regex_replace(gate_junit(results_of_report(merged), "x"), time_attribute, ""));
}

TEST(FuzzReports, InterruptedCampaignKeepsItsCasesAndCorpusAndResumesToTheWholeRun) {
  planted::register_last_step_defect();
  const CampaignConfig cfg = planted_campaign();
  const Campaign campaign(cfg);
  const nlohmann::json id = campaign_json(cfg, {.cases = 8, .minutes = {}, .target_error = false});
  const fs::path corpus = fresh_dir("resume_corpus");
  const FailureSaver save = [&](const FuzzCase& f) { return save_to_corpus(corpus, f, campaign_case_command(cfg, f.index)); };
  const nlohmann::json whole = campaign_report(id, Shard{}, run_campaign(campaign, Shard{}, first_cases(8), save), "tree");

  // Stopped once 3 cases are done (as a signal does): the case under way is dropped whole.
  std::size_t done = 0;
  RunLimits first = first_cases(8);
  first.stop = [&] { return done >= 3; };
  const CampaignRun cut = run_campaign(campaign, Shard{}, first, save, [&](std::size_t n, const FuzzCase&) { done = n; });
  EXPECT_TRUE(cut.interrupted);
  ASSERT_EQ(cut.cases.size(), 3u);
  for (const FuzzCase& f : cut.cases) {
    if (!f.result.pass) {
      EXPECT_EQ(read_fixture(f.fixture).spec.shape, (Shape{1, 3, 1, 1, 1})) << f.fixture;
    }
  }
  nlohmann::json partial = campaign_report(id, Shard{}, cut, "tree");
  partial["unfinished"] = "interrupted by SIGTERM";
  EXPECT_EQ(finished_cases(partial), (std::set<std::uint64_t>{0, 1, 2}));

  RunLimits rest = first_cases(8);
  rest.skip = finished_cases(partial);
  const CampaignRun resumed = run_campaign(campaign, Shard{}, rest, save);
  ASSERT_EQ(resumed.cases.size(), 5u);
  EXPECT_EQ(resumed.cases.front().index, 3u);
  const nlohmann::json joined = continue_report(partial, campaign_report(id, Shard{}, resumed, "tree"), "partial.json");
  EXPECT_FALSE(joined.contains("unfinished"));
  EXPECT_EQ(without_timings(joined), without_timings(whole));
  std::set<std::string> saved;  // one file per distinct shrunk failure, from both runs
  for (const CampaignRun* r : {&cut, &resumed})
    for (const FuzzCase& f : r->cases)
      if (!f.result.pass) saved.insert(f.fixture);
  EXPECT_EQ(fixture_files({corpus.string()}).size(), saved.size());
  fs::remove_all(corpus);
}

TEST(FuzzReports, MergeRejectsShardsOfDifferentCampaignsDuplicatesAndGaps) {
  const auto report = [](std::uint64_t seed, Shard s, const std::string& tree = "tree") {
    CampaignConfig cfg;
    cfg.seed = seed;
    return campaign_report(campaign_json(cfg, {.cases = 4, .minutes = {}, .target_error = false}), s, CampaignRun{}, tree);
  };
  const auto message = [](const std::vector<nlohmann::json>& rs, const std::vector<std::string>& names) -> std::string {
    try {
      merge_reports(rs, names);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "merged";
  };
  EXPECT_EQ(message({report(1, {0, 2}), report(1, {1, 2})}, {"a", "b"}), "merged");
  EXPECT_EQ(message({report(1, {0, 2}), report(2, {1, 2})}, {"a", "b"}), "b: a different campaign from a: seed (1 vs 2)");
  EXPECT_EQ(message({report(1, {0, 2}), report(1, {0, 2})}, {"a", "b"}), "shard 0/2 given twice: a and b");
  EXPECT_EQ(message({report(1, {0, 3}), report(1, {2, 3})}, {"a", "b"}), "shards missing: 1/3");
  EXPECT_EQ(message({report(1, {0, 2}), report(1, {1, 3})}, {"a", "b"}), "b: shard 1/3 of 3 shards, a is one of 2");
  EXPECT_EQ(message({report(1, {0, 2}), report(1, {1, 2}, "other")}, {"a", "b"}), "b: built from source tree other, a from tree");
  // Judged under another tolerance policy (here fewer rounding draws): not one campaign's verdict.
  nlohmann::json four_draws = report(1, {1, 2});
  ASSERT_EQ(four_draws["policy"]["rounding_draws"], 8);
  four_draws["policy"]["rounding_draws"] = 4;
  EXPECT_EQ(message({report(1, {0, 2}), four_draws}, {"a", "b"}).rfind("b: judged under the tolerance policy ", 0), 0u);
  EXPECT_EQ(message({nlohmann::json{{"results", nlohmann::json::array()}}}, {"x"}),
            "x: not a larc fuzz report (it lacks \"campaign\", \"results\" or \"summary\")");
}

}  // namespace
}  // namespace larc::harness
