// The numerical accuracy report (docs/cli.md "larc report"): every section's data computed (JSON/CSV
// under OUT/data), the figures drawn by tools/python/plot_accuracy.py (matplotlib), then OUT/README.md
// written. `larc report` is its command-line face.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace larc::report {

inline constexpr const char* kDefaultH200Gate = "reports/h200/gate.json";
inline constexpr const char* kDefaultH200Bench = "reports/h200/bench.json";

struct ReportOptions {
  std::string out_dir;                     // README.md and the PNGs; the data under out_dir/data
  bool small = false;                      // a tiny grid (seconds): checks the generator, not the numbers
  std::uint64_t seed = 1;                  // of every experiment
  std::string claims_ledger;               // a ledger of `larc claims --json` to read verdicts from; empty: run the claims
  std::string h200_gate = kDefaultH200Gate;    // the H200 gate's results for the GPU rows (absent: said so)
  std::string h200_bench = kDefaultH200Bench;  // the H200 benchmark report the claims VLA-C10 and KLA-C6 read
  std::string plot_script;                 // empty: default_plot_script() (beside the program, else the checkout's)
  std::string command;                     // the command line that regenerates the report, quoted in it
};

struct ReportWritten {
  std::string readme;       // out_dir/README.md
  std::size_t figures = 0;  // PNGs drawn
  double seconds = 0;       // in all
};

// Writes the report. Before any computing it finds a Python with matplotlib and the plotting script
// (std::runtime_error naming what is missing) and reads the H200 gate (std::invalid_argument naming a
// malformed file); out_dir/data must be writable.
ReportWritten write_report(const ReportOptions& options);

// The plotting script a report uses by default: <dir of the program>/../share/larc/plot_accuracy.py (an
// install), <dir of the program>/plot_accuracy.py (the build tree's copy), else
// tools/python/plot_accuracy.py from the working directory (the repository root).
std::string default_plot_script();

}  // namespace larc::report
