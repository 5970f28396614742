// The `larc` command line, built apart from main() so that the command-line fuzzer
// (parser_fuzzers/cli_fuzzer.cpp) parses argv through the very options and checks the program has, without
// running a command. Exit codes: 0 success, 1 a check failed to run, 2 a usage or input error.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace larc::cli {

struct CommandLine {
  CLI::App app{"larc: verification and property testing for linear-attention recurrences and kernels"};
  // One per command: runs it and yields its exit code when it was the command given, else -1.
  std::vector<std::function<int()>> commands;
  CommandLine() { app.require_subcommand(1); }
};

// Adds the commands over harness/ and fixtures/: fixtures (show, gen), gate, diff, fuzz, merge.
// (Those over properties/, `claims` and `report`, are added by main.)
void add_harness_commands(CommandLine& cl);
// Parses argv and runs the command given; usage errors print CLI11's message and yield 2,
// std::invalid_argument from a command "larc: MESSAGE" and 2, any other exception "larc: error:
// MESSAGE" and 1.
int parse_and_run(CommandLine& cl, int argc, const char* const* argv);

}  // namespace larc::cli
