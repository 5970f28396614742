// `larc report`: the numerical accuracy report (docs/cli.md, "larc report"; larc/report/report.h
// computes and writes it). Exit 0 the report was written, 1 a step failed (no matplotlib, the plotting
// script failed), 2 a usage error.
#include "report_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "larc/report/report.h"
#include "output_files.h"

namespace larc::cli {

namespace {

std::string command_line(const report::ReportOptions& o) {
  std::string cmd = "larc report --out " + o.out_dir;
  if (o.small) cmd += " --small";
  if (o.seed != 1) cmd += " --seed " + std::to_string(o.seed);
  if (!o.claims_ledger.empty()) cmd += " --claims-ledger " + o.claims_ledger;
  if (o.h200_gate != report::kDefaultH200Gate) cmd += " --h200-gate " + o.h200_gate;
  if (o.h200_bench != report::kDefaultH200Bench) cmd += " --h200-bench " + o.h200_bench;
  return cmd;
}

int run_report(report::ReportOptions o) {
  o.command = command_line(o);
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir + "/data", ec);
  if (!can_write("report", "--out", o.out_dir + "/README.md") || !can_write("report", "--out", o.out_dir + "/data/probe"))
    return 2;
  const report::ReportWritten w = report::write_report(o);
  std::cout << "larc report: wrote " << w.readme << ", " << w.figures << " figures and their data in "
            << static_cast<int>(w.seconds + 0.5) << " s\n";
  return 0;
}

}  // namespace

std::function<int()> add_report_command(CLI::App& app) {
  auto o = std::make_shared<report::ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "Write the numerical accuracy report: Markdown, PNG plots and their data");
  cmd->add_option("--out", o->out_dir, "Directory of the report (README.md, the PNGs, data/)")->required();
  cmd->add_flag("--small", o->small, "A tiny grid (seconds): checks the generator, not the numbers");
  cmd->add_option("--seed", o->seed, "Seed of every experiment")->capture_default_str();
  cmd->add_option("--claims-ledger", o->claims_ledger,
                  "Take the claims' verdicts from this ledger (larc claims --json) instead of running the claims");
  cmd->add_option("--h200-gate", o->h200_gate, "The H200 gate results (larc gate --json) for the GPU rows")->capture_default_str();
  cmd->add_option("--h200-bench", o->h200_bench, "The H200 benchmark report the claims VLA-C10 and KLA-C6 read")
      ->capture_default_str();
  cmd->add_option("--plot-script", o->plot_script,
                  "The plotting script (default: plot_accuracy.py beside larc, share/larc/ of an install, else "
                  "tools/python/ from the working directory)");
  return [cmd, o]() -> int { return cmd->parsed() ? run_report(*o) : -1; };
}

}  // namespace larc::cli
