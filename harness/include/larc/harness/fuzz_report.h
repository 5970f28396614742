// The fuzzer's reports and corpus (`larc fuzz`, `larc merge`; docs/fuzzing.md). A report is the
// gate's JSON (gate.h: {"tree_hash", "shard", "results": [result_json ...]}) plus
//   "campaign": what identifies the campaign (seed, bound, filters, largest sizes, target), equal in
//               every shard of one campaign;
//   "summary":  cases, failures, seconds, cases_per_second;
//   per result: "index" (the campaign case) and, for a failure, "shrunk" (result_json of the shrunk
//               case), "shrink_steps", "shrink_evaluations", "fixture" (where it was saved);
//   "search":   for `--target error`: evaluations, restarts, worst_score (results then hold the worst
//               case found);
//   "unfinished": only in the report of a run that has not reached its bound: why ("interrupted by
//               SIGTERM", "checkpoint"); `larc fuzz --resume` continues it, `larc merge` refuses it.
// Merging the reports of shards 0..n-1 of one campaign gives the report of one unsharded run of the
// same cases (timings aside).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "larc/harness/fuzz.h"

namespace larc::harness {

// What a campaign is bound by and looks for; with the config it identifies a campaign.
struct CampaignBound {
  std::optional<std::uint64_t> cases;  // --cases
  std::optional<double> minutes;       // --minutes
  bool target_error = false;           // --target error
};

nlohmann::json campaign_json(const CampaignConfig& config, const CampaignBound& bound);

// The command that runs campaign case `index` alone: `larc fuzz --seed S --cases index+1 --shard
// index/(index+1)` with the campaign's filters.
std::string campaign_case_command(const CampaignConfig& config, std::uint64_t index);

nlohmann::json campaign_report(const nlohmann::json& campaign, const Shard& shard, const CampaignRun& run,
                               const std::string& tree_hash);
nlohmann::json error_search_report(const nlohmann::json& campaign, const Shard& shard, const ErrorSearch& search,
                                   double seconds, const std::string& tree_hash);

// The report of a run continued from `previous` (an unfinished report of the same campaign, tree hash
// and shard, named `name` in messages): its results and then `now`'s, in index order, the summary's
// seconds summed, no "unfinished". Throws std::invalid_argument naming the difference.
nlohmann::json continue_report(const nlohmann::json& previous, const nlohmann::json& now, const std::string& name);
// The campaign indices a report holds results for (the cases a resumed run skips).
std::set<std::uint64_t> finished_cases(const nlohmann::json& report);
// A --target error report's evaluations (search.scores) by reproduce command: the
// SearchLimits::recorded that resumes its search.
std::map<std::string, double> recorded_scores(const nlohmann::json& report);

// Joins the reports of every shard of one campaign (`names` name them in messages). Throws
// std::invalid_argument naming the problem: not a fuzz report, an unfinished one, a different
// campaign, tree hash or shard count, a shard given twice or missing.
nlohmann::json merge_reports(const std::vector<nlohmann::json>& reports, const std::vector<std::string>& names);

// A case result rebuilt from its result_json (gate.h): the spec, the verdict, the errors and each
// output's judgement figures (what failure_kinds and the report writers read; not the per-grade
// figures). Throws nlohmann::json's exceptions on a missing or mistyped key.
CaseResult result_of_json(const nlohmann::json& result);
// The case results of a report, rebuilt from its JSON (for the gate's JUnit and Markdown writers).
std::vector<CaseResult> results_of_report(const nlohmann::json& report);

// Saves a shrunk failure into `corpus` as a fixture (fixture.h) named for its case, with metadata
// "subject", "failure" (the errors), "reproduce" (the gate command replaying it) and "found_by" (the
// fuzz command that runs the original case); creates the folder; returns the file's path.
std::string save_to_corpus(const std::filesystem::path& corpus, const FuzzCase& failure, const std::string& found_by);

}  // namespace larc::harness
