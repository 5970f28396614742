// `larc gate` as a library (DESIGN.md "The program"): the plan (every registered subject × dtype ×
// shape grid, randomized cases, fixture replays), its execution over a shard, and the reports
// (JSON, JUnit XML, Markdown; docs/gate.md gives their schema). An out-of-tree program registers its
// kernel (subject.h) and calls plan_gate + run_gate the same way the command does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "larc/harness/runner.h"
#include "larc/harness/shard.h"

namespace larc::harness {

struct GateOptions {
  std::vector<std::string> subjects;    // subject names (empty: all)
  std::vector<std::string> mechanisms;  // mechanisms (empty: all)
  std::vector<Dtype> dtypes;            // dtypes (empty: every dtype a subject takes)
  std::uint64_t seed = 1;               // grid cases use it as their input seed; random cases derive theirs
  std::uint64_t random = 0;             // randomized cases (the fuzzer's campaign cases 0..random-1)
  bool grid = true;
  std::vector<Shape> shapes;            // the grid's shapes (empty: default_grid_shapes())
  KnobValues knobs;                     // knob values for grid cases of the mechanisms that have them
  std::vector<std::string> fixtures;    // fixture files or directories to replay
};

// The CI grid: T = 1; T = 100 (not a multiple of the chunk), K ≠ V; B = H = 2 with T = 160; for the
// mechanisms with grouped value heads, H = 2 with HV = 4 at T = 70; for a mechanism with an
// initial-state knob, each shape without and with a random initial state.
std::vector<Shape> default_grid_shapes();

// Cases that share inputs and oracle: one preparation, then every subject in `subjects`.
struct GateGroup {
  CaseSpec spec;                                // subject empty; origin "grid", "random" or a fixture path
  std::shared_ptr<const PreparedCase> fixture;  // set for fixture replays (read at planning time)
  std::vector<const Subject*> subjects;
};

struct GatePlan {
  std::vector<GateGroup> groups;  // sharding is by group index
  std::size_t cases() const;
};

// Throws std::invalid_argument for unknown names or a selection that leaves nothing to run, and
// fixtures::FixtureError naming the file and the problem for an unreadable fixture.
GatePlan plan_gate(const GateOptions& options);

// Runs the groups the shard holds on `jobs` threads; the results come back in plan order whatever
// the number of jobs. `progress(done, failed)` after each case (serialised).
std::vector<CaseResult> run_gate(const GatePlan& plan, const Shard& shard, const ToleranceConfig& config = {},
                                 const std::function<void(std::size_t, std::size_t)>& progress = {},
                                 unsigned jobs = 1);

// --- reports --------------------------------------------------------------------------------------
nlohmann::json result_json(const CaseResult& r);
// The tolerance policy a report's cases were judged under (k, k_gradient, window, oracle_margin, rounding_draws):
// reports made under different policies are not one verdict, so joins and merges compare it.
nlohmann::json tolerance_policy_json(const ToleranceConfig& policy);
// {"tree_hash": ..., "shard": "j/n", "policy": tolerance_policy_json(policy), "results": [result_json...]}
nlohmann::json gate_json(const std::vector<CaseResult>& results, const std::string& tree_hash, const Shard& shard,
                         const ToleranceConfig& policy);
std::string gate_junit(const std::vector<CaseResult>& results, const std::string& suite_name);
std::string gate_markdown(const std::vector<CaseResult>& results, const std::string& tree_hash);
// Per (kernel, mechanism, dtype): cases, failures, worst ratio and errors; then each failure.
std::string gate_table(const std::vector<CaseResult>& results);

// The git tree hash of reference/ and gpu/ the program was built from: the hash of the listing of
// both trees at HEAD of the source checkout, "-dirty" appended when either had uncommitted changes;
// "unknown" when it was built outside a git checkout. Fixed at build time (cmake/larc_tree_hash.cmake):
// nothing runs git at run time. The environment variable LARC_TREE_HASH, when set, is returned instead.
std::string source_tree_hash();

// Whether a committed gate or benchmark report (JSON with "tree_hash") was made from the current
// source: "current", or why not ("stale: made from X, the source is Y"; "no tree_hash"; the source
// has uncommitted changes).
struct ReportFreshness {
  bool current = false;
  std::string message;
};
ReportFreshness report_freshness(const nlohmann::json& report, const std::string& source_hash);

}  // namespace larc::harness
