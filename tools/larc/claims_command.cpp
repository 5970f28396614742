// `larc claims`: run every registered claim (or --only some), print the ledger, write JSON/Markdown.
#include "claims_command.h"

#include <unistd.h>

#include <iostream>
#include <memory>

#include "larc/properties/claims.h"
#include "option_checks.h"
#include "output_files.h"

namespace larc::cli {

namespace {
struct ClaimsOptions {
  std::vector<std::string> only;
  std::uint64_t seed = 1;
  int trials = 0;
  std::string json_path, markdown_path;
  std::string h200_bench = "reports/h200/bench.json";
  bool list = false;
};

int run_claims(const ClaimsOptions& o) {
  using namespace larc::props;
  std::vector<const Claim*> selected;
  if (o.only.empty()) {
    for (const Claim& c : all_claims()) selected.push_back(&c);
  } else {
    for (const std::string& id : o.only) {
      const Claim* c = find_claim(id);
      if (!c) {
        std::string known;
        for (const Claim& k : all_claims()) known += (known.empty() ? "" : ", ") + k.id;
        std::cerr << "larc claims: --only: unknown claim id '" << id << "' (known: " << known << ")\n";
        return 2;
      }
      selected.push_back(c);
    }
  }
  if (o.list) {
    for (const Claim* c : selected) std::cout << c->id << "  " << c->statement << "\n";
    return 0;
  }
  if (!can_write("claims", "--json", o.json_path) || !can_write("claims", "--markdown", o.markdown_path)) return 2;
  const bool progress = isatty(STDERR_FILENO);
  std::vector<LedgerEntry> rows;
  for (std::size_t i = 0; i < selected.size(); ++i) {
    if (progress) std::cerr << "\r[" << i + 1 << "/" << selected.size() << "] " << selected[i]->id << "   " << std::flush;
    rows.push_back(run_claim(*selected[i], ClaimConfig{o.seed, o.trials, o.h200_bench}));
  }
  if (progress) std::cerr << "\r" << std::string(40, ' ') << "\r";
  std::cout << ledger_table(rows);
  if (!o.json_path.empty()) write_text_file(o.json_path, ledger_json(rows).dump(2) + "\n");
  if (!o.markdown_path.empty()) write_text_file(o.markdown_path, ledger_markdown(rows));
  return 0;
}
}  // namespace

std::function<int()> add_claims_command(CLI::App& app) {
  auto opts = std::make_shared<ClaimsOptions>();
  CLI::App* cmd = app.add_subcommand("claims", "Check every paper claim and print the ledger (SPEC.md verdicts)");
  cmd->add_option("--only", opts->only, "Run only these claim ids (e.g. KLA-C1); repeatable");
  cmd->add_option("--seed", opts->seed, "Seed of the random search (same seed, same verdict and evidence)")
      ->check(whole_number());
  cmd->add_option("--trials", opts->trials, "Random trials per claim (default: each claim's own)")
      ->check(CLI::Range(1, 10000000));
  cmd->add_option("--json", opts->json_path, "Write the ledger as JSON to this file");
  cmd->add_option("--markdown", opts->markdown_path, "Write the ledger as Markdown (docs/CLAIMS.md) to this file");
  cmd->add_option("--h200-bench", opts->h200_bench,
                  "The H200 benchmark report (tools/h200/bench_report.py) that VLA-C10 and KLA-C6 read; relative to "
                  "the working directory")
      ->capture_default_str();
  cmd->add_flag("--list", opts->list, "List the claim ids and statements without running them");
  return [cmd, opts]() -> int { return cmd->parsed() ? run_claims(*opts) : -1; };
}

}  // namespace larc::cli
