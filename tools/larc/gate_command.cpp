// `larc gate`: every registered subject × dtype × shape grid, randomized cases and fixture replays,
// judged by the tolerance policy (harness/gate.h, docs/gate.md). Exit 0 all pass, 1 a violation,
// 2 a usage or input error (an unreadable fixture names the file and the problem).
#include "gate_command.h"

#include <fstream>
#include <iostream>
#include <stdexcept>
#include <memory>
#include <optional>

#include "larc/fixtures/safetensors.h"
#include "larc/harness/gate.h"
#include "larc/harness/profile.h"
#include "larc/harness/progress.h"
#include "knob_option.h"
#include "option_checks.h"
#include "output_files.h"

namespace larc::cli {

namespace {
namespace h = larc::harness;

struct GateCli {
  std::vector<std::string> subjects, mechanisms, dtypes, shapes, knobs, fixtures;
  std::uint64_t seed = 1;
  std::uint64_t random = 8;
  unsigned jobs = 1;
  std::string shard, json_path, junit_path, markdown_path, verify_report, record_profile, against;
  double k_reg = h::kRegressionFactor;
  std::string profile_subject;
  std::optional<std::uint64_t> shard_count;
  bool no_grid = false, progress = false, list = false;
};

void list_registry() {
  std::cout << "mechanisms:\n";
  for (const h::Mechanism& m : h::mechanisms()) {
    std::cout << "  " << m.name << ": " << m.description << "\n    knobs:";
    for (const h::Knob& k : m.knobs) std::cout << " " << k.name << "∈[" << k.lo << "," << k.hi << "]=" << k.default_value;
    std::cout << "\n";
  }
  std::cout << "subjects:\n";
  for (const h::Subject& s : h::subjects()) {
    std::cout << "  " << s.name << " (" << s.mechanism << "):";
    for (h::Dtype d : s.dtypes) std::cout << " " << larc::ref::dtype_name(d);
    std::cout << "  " << s.description << "\n";
  }
}

// Exit 0 when the report was made from the current reference/ + gpu/ tree, 1 when stale, 2 unreadable.
int verify_report(const std::string& path) {
  std::ifstream in(path);
  nlohmann::json report;
  try {
    if (!in) throw std::runtime_error("cannot open");
    in >> report;
  } catch (const std::exception& e) {
    std::cerr << "larc gate: --verify-report: " << path << ": not a readable JSON report (" << e.what() << ")\n";
    return 2;
  }
  const h::ReportFreshness f = h::report_freshness(report, h::source_tree_hash());
  std::cout << path << ": " << f.message << "\n";
  return f.current ? 0 : 1;
}

int run_gate_command(const GateCli& c) {
  if (c.list) {
    list_registry();
    return 0;
  }
  if (!c.verify_report.empty()) return verify_report(c.verify_report);
  const h::ToleranceConfig policy;  // the policy the cases are judged under and the report records
  h::GateOptions o;
  o.subjects = c.subjects;
  o.mechanisms = c.mechanisms;
  for (const std::string& d : c.dtypes) o.dtypes.push_back(h::parse_dtype(d));
  for (const std::string& s : c.shapes) o.shapes.push_back(h::Shape::parse(s));
  o.knobs = parse_knobs(c.knobs);
  o.seed = c.seed;
  o.random = c.shapes.empty() ? c.random : 0;  // an explicit --shape reproduces exactly those cases
  o.grid = !c.no_grid;
  o.fixtures = c.fixtures;
  const h::ResolvedShard shard = h::resolve_shard(c.shard, c.shard_count);
  if (const std::string gpu = h::assign_gpu_to_shard(shard.shard.index); !gpu.empty())
    std::cerr << "shard " << shard.shard.str() << " runs its GPU kernels on " << gpu << "\n";
  if (!can_write("gate", "--json", c.json_path) || !can_write("gate", "--junit", c.junit_path) ||
      !can_write("gate", "--markdown", c.markdown_path) || !can_write("gate", "--record-profile", c.record_profile))
    return 2;
  std::optional<h::Profile> against;
  if (!c.against.empty()) against = h::Profile::read(c.against);  // a bad profile: exit 2 before any case runs
  h::GatePlan plan;
  try {
    plan = h::plan_gate(o);
  } catch (const larc::fixtures::FixtureError& e) {
    std::cerr << "larc gate: --fixtures: " << e.what() << "\n";
    return 2;
  }
  std::size_t total = 0;
  for (std::size_t i = 0; i < plan.groups.size(); ++i)
    if (shard.shard.holds(i)) total += plan.groups[i].subjects.size();
  h::Progress progress("larc gate", total, c.progress);
  if (against) h::require_recorded(*against, plan, shard.shard, c.profile_subject);
  const auto on_progress = [&](std::size_t done, std::size_t failed) { progress.update(done, failed); };
  std::vector<h::CaseResult> results = h::run_gate(plan, shard.shard, policy, on_progress, c.jobs);
  if (against) {
    for (h::CaseResult& r : results) against->check(r, {.k_reg = c.k_reg, .as_subject = c.profile_subject});
    std::cout << "against the profile " << c.against << " (k_reg " << c.k_reg << ")\n";
  }
  std::cout << h::gate_table(results);
  if (shard.source != "none") std::cout << "shard " << shard.shard.str() << " (from " << shard.source << ")\n";
  const std::string tree = h::source_tree_hash();
  if (!c.json_path.empty())
    write_text_file(c.json_path, h::gate_json(results, tree, shard.shard, policy).dump(2) + "\n");
  if (!c.junit_path.empty()) write_text_file(c.junit_path, h::gate_junit(results, "larc gate"));
  if (!c.markdown_path.empty()) write_text_file(c.markdown_path, h::gate_markdown(results, tree));
  if (!c.record_profile.empty()) write_text_file(c.record_profile, h::record_profile(results, tree).dump() + "\n");
  for (const h::CaseResult& r : results)
    if (!r.pass) return 1;
  return 0;
}
}  // namespace

std::function<int()> add_gate_command(CLI::App& app) {
  auto c = std::make_shared<GateCli>();
  CLI::App* cmd = app.add_subcommand("gate", "Judge every registered kernel against the oracle (grid, random cases, fixtures)");
  cmd->add_option("--subject", c->subjects, "Only these subjects (kernel names); repeatable");
  cmd->add_option("--mechanism", c->mechanisms, "Only these mechanisms (gdn, deltanet, kla, la, la-ratio, ...); repeatable");
  cmd->add_option("--dtype", c->dtypes, "Only these dtypes (bf16, fp16, fp32, fp64); repeatable");
  cmd->add_option("--seed", c->seed, "Seed of the grid's inputs and of the randomized cases")->check(whole_number());
  cmd->add_option("--random", c->random, "Randomized cases (the fuzzer's campaign cases 0..N-1)")
      ->check(whole_number())
      ->capture_default_str();
  cmd->add_option("--shape", c->shapes, "Grid shape B,T,H,K,V instead of the default grid (no randomized cases); repeatable");
  cmd->add_option("--knob", c->knobs, "Generator knob NAME=VALUE for the grid cases; repeatable");
  cmd->add_flag("--no-grid", c->no_grid, "Skip the grid (run only randomized cases and fixtures)");
  cmd->add_option("--fixtures", c->fixtures, "Replay the fixtures in these files or directories (golden set, fuzz corpora)");
  cmd->add_option("--shard", c->shard, "Run shard j of n (j/n); else from GTEST_SHARD_INDEX, SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX");
  cmd->add_option("--shard-count", c->shard_count, "Shard count for JOB_COMPLETION_INDEX (else LARC_SHARD_COUNT)")
      ->check(whole_number(1));
  cmd->add_option("--jobs,-j", c->jobs, "Cores to use: threads running case groups in parallel, and the (sequence, head) pairs of each reference computation on the cores no group needs (the report is the same for any number)")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  cmd->add_option("--json", c->json_path, "Write the results as JSON");
  cmd->add_option("--junit", c->junit_path, "Write the results as JUnit XML (one testcase per case)");
  cmd->add_option("--markdown", c->markdown_path, "Write a Markdown summary");
  cmd->add_option("--record-profile", c->record_profile,
                  "Write an accuracy-regression profile: every case's per-timestep errors (docs/gate.md)");
  cmd->add_option("--against", c->against,
                  "Fail a case whose error grows past k_reg × the profile's recorded error anywhere (docs/gate.md)");
  cmd->add_option("--k-reg", c->k_reg, "The growth factor --against allows (default: the calibrated one)")
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--profile-subject", c->profile_subject,
                  "With --against: compare every subject with this subject's record (e.g. a rewrite of a kernel)");
  cmd->add_flag("--progress", c->progress, "Show progress on stderr even when it is not a terminal");
  cmd->add_option("--verify-report", c->verify_report,
                  "Check that a committed gate/benchmark report (JSON with tree_hash) was made from the current "
                  "reference/ + gpu/ tree; exit 1 when stale");
  cmd->add_flag("--list", c->list, "List the registered mechanisms and subjects");
  return [cmd, c]() -> int { return cmd->parsed() ? run_gate_command(*c) : -1; };
}

}  // namespace larc::cli
