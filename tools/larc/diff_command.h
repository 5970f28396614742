#pragma once
#include <CLI/CLI.hpp>

namespace larc::cli {
// Adds `larc diff`; the returned callback runs it and yields the exit code (-1: not the command given).
std::function<int()> add_diff_command(CLI::App& app);
}  // namespace larc::cli
