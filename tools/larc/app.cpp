#include "app.h"

#include <iostream>
#include <stdexcept>

#include "diff_command.h"
#include "fixtures_gen_command.h"
#include "fixtures_show_command.h"
#include "fuzz_command.h"
#include "gate_command.h"
#include "merge_command.h"

namespace larc::cli {

namespace {
// `larc fixtures <verb>`: one parent command; each verb adds its runner to `verbs`.
std::function<int()> add_fixtures_command(CLI::App& app) {
  CLI::App* fixtures = app.add_subcommand("fixtures", "Inspect (show) and generate (gen) safetensors fixtures");
  fixtures->require_subcommand(1);
  std::vector<std::function<int()>> verbs{add_fixtures_show_command(*fixtures), add_fixtures_gen_command(*fixtures)};
  return [verbs] {
    for (const auto& run : verbs)
      if (int rc = run(); rc >= 0) return rc;
    return -1;
  };
}
}  // namespace

void add_harness_commands(CommandLine& cl) {
  for (auto add : {add_fixtures_command, add_gate_command, add_diff_command, add_fuzz_command, add_merge_command})
    cl.commands.push_back(add(cl.app));
}

int parse_and_run(CommandLine& cl, int argc, const char* const* argv) {
  try {
    cl.app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cl.app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cl.app.exit(e);
  } catch (const CLI::ParseError& e) {
    cl.app.exit(e);
    return 2;
  }
  try {
    for (const auto& run : cl.commands)
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

}  // namespace larc::cli
