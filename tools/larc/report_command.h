#pragma once
#include <CLI/CLI.hpp>

namespace larc::cli {
// Adds `larc report` (the numerical accuracy report: Markdown, PNG plots and their data) to the app;
// the returned callback runs it and yields the exit code (-1 when it was not the command given).
std::function<int()> add_report_command(CLI::App& app);
}  // namespace larc::cli
