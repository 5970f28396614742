#pragma once
#include <CLI/CLI.hpp>

namespace larc::cli {
// Adds `gen` under the `larc fixtures` command; the returned callback runs it and yields the exit
// code, or -1 when `gen` was not the verb given.
std::function<int()> add_fixtures_gen_command(CLI::App& fixtures);
}  // namespace larc::cli
