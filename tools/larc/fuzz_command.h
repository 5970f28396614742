#pragma once
#include <CLI/CLI.hpp>

namespace larc::cli {
// Adds `larc fuzz` to the app; the returned callback runs it and yields the exit code (-1 when it was
// not the command given).
std::function<int()> add_fuzz_command(CLI::App& app);
}  // namespace larc::cli
