// larc: a thin command-line face over properties/ (claims) and, later, harness/ (gate, fuzz, diff).
// Exit codes: 0 success, 1 a check failed to run, 2 usage or input error.
#include <CLI/CLI.hpp>
#include <iostream>

#include "claims_command.h"

int main(int argc, char** argv) {
  CLI::App app{"larc: verification and property testing for linear-attention recurrences and kernels"};
  app.require_subcommand(1);
  auto claims = larc::cli::add_claims_command(app);
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
    for (auto& run : {claims})
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
