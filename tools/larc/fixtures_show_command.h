#pragma once
#include <CLI/CLI.hpp>

namespace larc::cli {
// Adds `show` under the `larc fixtures` command; the returned callback runs it and yields the exit
// code, or -1 when `show` was not the verb given.
std::function<int()> add_fixtures_show_command(CLI::App& fixtures);
}  // namespace larc::cli
