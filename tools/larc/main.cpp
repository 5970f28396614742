// larc: a thin command-line face over properties/ (claims, report) and harness/ (fixtures, gate, diff, fuzz,
// merge); the command line itself is built in app.cpp. Exit codes: 0 success, 1 a check failed to
// run, 2 usage or input error.
#include "app.h"
#include "claims_command.h"
#include "report_command.h"

int main(int argc, char** argv) {
  larc::cli::CommandLine cl;
  cl.commands.push_back(larc::cli::add_claims_command(cl.app));
  cl.commands.push_back(larc::cli::add_report_command(cl.app));
  larc::cli::add_harness_commands(cl);
  return larc::cli::parse_and_run(cl, argc, argv);
}
