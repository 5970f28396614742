#pragma once
#include <CLI/CLI.hpp>

namespace larc::cli {
// Adds `larc claims` to the app; the returned callback runs it and yields the exit code.
std::function<int()> add_claims_command(CLI::App& app);
}  // namespace larc::cli
