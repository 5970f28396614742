// larc: a thin command-line face over properties/ (claims, report) and, later, harness/ (gate, fuzz, diff).
// Exit codes: 0 success, 1 a check failed to run, 2 usage or input error.
#include <CLI/CLI.hpp>
#include <iostream>

#include "claims_command.h"
#include "fixtures_show_command.h"
#include "diff_command.h"
#include "fixtures_gen_command.h"
#include "gate_command.h"
#include "fuzz_command.h"
#include "merge_command.h"
#include "report_command.h"

namespace {
// `larc fixtures <verb>`: one parent command; each verb adds its runner to `verbs`.
std::function<int()> add_fixtures_command(CLI::App& app) {
  CLI::App* fixtures = app.add_subcommand("fixtures", "Inspect (show) and generate (gen) safetensors fixtures");
  fixtures->require_subcommand(1);
  std::vector<std::function<int()>> verbs{larc::cli::add_fixtures_show_command(*fixtures),
                                          larc::cli::add_fixtures_gen_command(*fixtures)};
  return [verbs] {
    for (const auto& run : verbs)
      if (int rc = run(); rc >= 0) return rc;
    return -1;
  };
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"larc: verification and property testing for linear-attention recurrences and kernels"};
  app.require_subcommand(1);
  auto claims = larc::cli::add_claims_command(app);
  auto report = larc::cli::add_report_command(app);
  auto fixtures = add_fixtures_command(app);
  auto gate = larc::cli::add_gate_command(app);
  auto diff = larc::cli::add_diff_command(app);
  auto fuzz = larc::cli::add_fuzz_command(app);
  auto merge = larc::cli::add_merge_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  try {
    for (auto& run : {claims, report, fixtures, gate, diff, fuzz, merge})
      if (int rc = run(); rc >= 0) return rc;
  } catch (const std::invalid_argument& e) {
    std::cerr << "larc: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "larc: error: " << e.what() << "\n";
    return 1;
  }
  return 2;
}
