#include "summary.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "larc/harness/gate.h"
#include "larc/properties/claims.h"

namespace larc::report {

namespace {
namespace h = larc::harness;

// The ledger as JSON (props::ledger_json's schema), computed now or read from a file.
nlohmann::json claims_ledger_json(const ReportContext& ctx, const std::string& ledger_path) {
  if (!ledger_path.empty()) {
    std::ifstream f(ledger_path);
    try {
      return nlohmann::json::parse(f);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument("--claims-ledger: " + ledger_path + ": not a larc claims ledger (" + e.what() + ")");
    }
  }
  std::vector<props::LedgerEntry> rows;
  for (const props::Claim& c : props::all_claims()) {
    std::cerr << "larc report: claim " << c.id << "\n";
    rows.push_back(props::run_claim(c, props::ClaimConfig{ctx.seed, 0, ctx.h200_bench}));
  }
  return props::ledger_json(rows);
}

// The CPU gate: the reference's CPU subjects (ref-*) over the gate's grid, as `larc gate --subject ...`.
nlohmann::json cpu_gate_json(const ReportContext& ctx) {
  h::GateOptions o;
  std::set<std::string> names;
  for (const h::Subject& s : h::subjects())
    if (s.name.rfind("ref-", 0) == 0) names.insert(s.name);
  o.subjects.assign(names.begin(), names.end());
  o.seed = ctx.seed;
  o.random = ctx.small ? 0 : 8;
  if (ctx.small) o.shapes = {h::Shape{1, 16, 1, 4, 4}};
  const h::ToleranceConfig policy;
  const std::vector<h::CaseResult> results = h::run_gate(h::plan_gate(o), h::Shard{}, policy);
  return h::gate_json(results, h::source_tree_hash(), h::Shard{}, policy);
}

// One row per case: the figures the summary uses and the command that reruns the case.
std::string gate_csv(const nlohmann::json& results) {
  Csv csv("kernel,mechanism,dtype,shape,seed,origin,pass,worst_ratio,max_rel_err,rel_rms,reproduce");
  for (const nlohmann::json& r : results)
    csv.cell(r.at("kernel").get<std::string>()).cell(r.at("mechanism").get<std::string>())
        .cell(r.at("dtype").get<std::string>()).cell(r.at("shape").get<std::string>())
        .cell(std::int64_t(r.at("seed").get<std::uint64_t>())).cell(r.at("origin").get<std::string>())
        .cell(std::string(r.at("pass").get<bool>() ? "true" : "false")).cell(r.at("worst_ratio").get<double>())
        .cell(r.at("max_rel_err").get<double>()).cell(r.at("rel_rms").get<double>())
        .cell(r.at("reproduce").get<std::string>()).end_row();
  return csv.text();
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Per kernel (and mechanism, when `per_mechanism`): cases, failures, largest worst_ratio and the largest
// max_rel_err per dtype.
struct KernelStatus {
  int cases = 0, failed = 0;
  double worst_ratio = 0;
  std::set<std::string> mechanisms;
  std::map<std::string, double> max_rel_err;  // per dtype
};

std::string status_table(const nlohmann::json& results, bool per_mechanism) {
  std::map<std::pair<std::string, std::string>, KernelStatus> st;
  for (const nlohmann::json& r : results) {
    const auto mechanism = r.at("mechanism").get<std::string>();
    KernelStatus& k = st[{r.at("kernel").get<std::string>(), per_mechanism ? mechanism : ""}];
    ++k.cases;
    k.failed += !r.at("pass").get<bool>();
    k.worst_ratio = std::max(k.worst_ratio, r.at("worst_ratio").get<double>());
    k.mechanisms.insert(mechanism);
    double& e = k.max_rel_err[r.at("dtype").get<std::string>()];
    e = std::max(e, r.at("max_rel_err").get<double>());
  }
  std::ostringstream md;
  md << "| kernel | mechanism | cases | failed | status | worst error/tolerance | max_rel_err bf16 | fp16 | fp32 |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& [key, k] : st) {
    md << "| " << key.first << " | " << (per_mechanism ? key.second : std::to_string(k.mechanisms.size()) + " mechanisms")
       << " | " << k.cases << " | " << k.failed << " | " << (k.failed ? "**FAIL**" : "pass") << " | " << num(k.worst_ratio)
       << " |";
    for (const char* d : {"bf16", "fp16", "fp32"}) {
      const auto e = k.max_rel_err.find(d);
      md << " " << (e == k.max_rel_err.end() ? "–" : num(e->second)) << " |";
    }
    md << "\n";
  }
  return md.str();
}

}  // namespace

Section summary_section(const ReportContext& ctx, const std::string& claims_ledger, const H200Gate& h200) {
  const auto start = std::chrono::steady_clock::now();
  const nlohmann::json ledger = claims_ledger_json(ctx, claims_ledger);
  write_data(ctx, "claims.json", ledger.dump(2) + "\n");
  const nlohmann::json gate = cpu_gate_json(ctx);
  write_data(ctx, "gate_cpu.csv", gate_csv(gate.at("results")));

  std::map<std::string, int> verdicts;
  std::vector<std::pair<std::string, std::string>> papers;  // paper, its claims with verdicts (ledger order)
  for (const nlohmann::json& c : ledger.at("claims")) {
    const auto id = c.at("id").get<std::string>(), verdict = c.at("verdict").get<std::string>();
    const auto paper = c.at("paper").get<std::string>();
    ++verdicts[verdict];
    if (papers.empty() || papers.back().first != paper) papers.push_back({paper, ""});
    papers.back().second += (papers.back().second.empty() ? "" : " · ") + std::string("[") + id + "](../CLAIMS.md#" +
                            lower(id) + ") " + verdict;
  }
  std::ostringstream claims;
  claims << "| paper | claims and verdicts (links: the evidence in docs/CLAIMS.md) |\n|---|---|\n";
  for (const auto& [paper, row] : papers) claims << "| " << paper << " | " << row << " |\n";
  std::ostringstream md;
  md << "## Summary\n\n### Claims\n\n";
  for (const auto& [v, n] : verdicts) md << n << " " << v << "; ";
  md << "verdicts " << (claims_ledger.empty() ? "computed by this run (seed " + std::to_string(ctx.seed) + ", each claim's default trials)"
                                            : "read from " + claims_ledger)
     << "; the full ledger with evidence and counterexamples is [docs/CLAIMS.md](../CLAIMS.md) (regenerated by `larc "
        "claims --json docs/claims.json --markdown docs/CLAIMS.md`) and this run's is [data/claims.json](data/claims.json).\n\n"
     << claims.str() << "\n### Gate status and the largest error per kernel and dtype\n\n"
     << "**CPU (the reference's own forms in float, `ref-<form>-f32`).** The gate's tolerance policy (docs/gate.md) "
        "over " << (ctx.small ? "one tiny shape" : "the gate's default grid and 8 randomized cases") << ", seed "
     << ctx.seed << ", tree hash `" << gate.at("tree_hash").get<std::string>() << "`; results in "
        "[data/gate_cpu.csv](data/gate_cpu.csv), one row per case with the command that reruns it. These subjects "
        "are the gate's baselines, so they pass by construction (error/tolerance ≤ 1/2): the rows show the pipeline ran and the error levels an honest float kernel reaches. "
        "`max_rel_err` is the worst timestep's relative error (largest over the cases); section 1 has the errors up "
        "to T = 16,384.\n\n"
     << status_table(gate.at("results"), false) << "\n";
  if (h200.present)
    md << "**GPU (H200).** From `" << h200.path << "` (tree hash `" << h200.tree_hash << "`; this checkout's is `"
       << gate.at("tree_hash").get<std::string>() << "`"
       << (h200.tree_hash == gate.at("tree_hash").get<std::string>() ? "" : ": the H200 report was made from another tree")
       << ").\n\n" << status_table(h200.results, true) << "\n";
  else
    md << "**GPU (H200): no results.** `" << h200.path << "` does not exist yet: the GPU kernels' gate has not been run "
          "on the H200 and committed, so no GPU kernel has a gate status or an error figure in this report.\n\n";
  Section s;
  s.markdown = md.str();
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return s;
}

}  // namespace larc::report
