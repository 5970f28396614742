// `larc claims`: run every registered claim (or --only some), print the ledger, write JSON/Markdown.
#include "claims_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>

#include "larc/properties/claims.h"

namespace larc::cli {

namespace {
struct ClaimsOptions {
  std::vector<std::string> only;
  std::uint64_t seed = 1;
  int trials = 0;
  std::string json_path, markdown_path;
  bool list = false;
};

// Fails early, before minutes of checks, when an output file cannot be created.
bool writable(const std::string& option, const std::string& path) {
  if (path.empty()) return true;
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) {
    std::cerr << "larc claims: " << option << ": cannot write " << path << " (" << std::strerror(errno) << ")\n";
    return false;
  }
  std::fclose(f);
  std::remove(tmp.c_str());
  return true;
}

// Writes through a temporary file and a rename, so a killed run never leaves a half-written ledger.
void write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw std::runtime_error("cannot write " + path);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot write " + path);
}

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
  if (!writable("--json", o.json_path) || !writable("--markdown", o.markdown_path)) return 2;
  const bool progress = isatty(STDERR_FILENO);
  std::vector<LedgerEntry> rows;
  for (std::size_t i = 0; i < selected.size(); ++i) {
    if (progress) std::cerr << "\r[" << i + 1 << "/" << selected.size() << "] " << selected[i]->id << "   " << std::flush;
    rows.push_back(run_claim(*selected[i], ClaimConfig{o.seed, o.trials}));
  }
  if (progress) std::cerr << "\r" << std::string(40, ' ') << "\r";
  std::cout << ledger_table(rows);
  if (!o.json_path.empty()) write_file(o.json_path, ledger_json(rows).dump(2) + "\n");
  if (!o.markdown_path.empty()) write_file(o.markdown_path, ledger_markdown(rows));
  return 0;
}
}  // namespace

std::function<int()> add_claims_command(CLI::App& app) {
  auto opts = std::make_shared<ClaimsOptions>();
  CLI::App* cmd = app.add_subcommand("claims", "Check every paper claim and print the ledger (SPEC.md verdicts)");
  cmd->add_option("--only", opts->only, "Run only these claim ids (e.g. KLA-C1); repeatable");
  cmd->add_option("--seed", opts->seed, "Seed of the random search (same seed, same verdict and evidence)")
      ->check(CLI::Validator(
          [](std::string& v) {
            const std::string max = "18446744073709551615";  // 2^64 − 1; same length: compare as text
            const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
            return digits && (v.size() < max.size() || (v.size() == max.size() && v <= max))
                       ? std::string()
                       : "expected a whole number from 0 to 18446744073709551615, got '" + v + "'";
          },
          "UINT64"));
  cmd->add_option("--trials", opts->trials, "Random trials per claim (default: each claim's own)")
      ->check(CLI::Range(1, 10000000));
  cmd->add_option("--json", opts->json_path, "Write the ledger as JSON to this file");
  cmd->add_option("--markdown", opts->markdown_path, "Write the ledger as Markdown (docs/CLAIMS.md) to this file");
  cmd->add_flag("--list", opts->list, "List the claim ids and statements without running them");
  return [cmd, opts]() -> int { return cmd->parsed() ? run_claims(*opts) : -1; };
}

}  // namespace larc::cli
