// Pieces every section of `larc report` uses: where the report goes, how a section hands back its
// Markdown and the figures it needs drawn, and the CSV/number formatting of the data files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace larc::report {

struct ReportContext {
  std::string out_dir;   // README.md and the PNGs
  std::string data_dir;  // out_dir/data: the JSON/CSV behind every figure and table
  bool small = false;    // the tiny grid of the test (--small)
  std::uint64_t seed = 1;
  std::string command;   // the command line that regenerates the report
  std::string h200_bench = "reports/h200/bench.json";  // read by the claims the summary runs (VLA-C10, KLA-C6)
  std::string plot_script;  // tools/python/plot_accuracy.py (default_plot_script())
};

// A figure: `name`.png drawn by tools/python/plot_accuracy.py from the data files named.
struct Figure {
  std::string name;
  std::vector<std::string> data;  // file names under data/
};

struct Section {
  std::string markdown;          // "## ..." and everything under it
  std::vector<Figure> figures;   // drawn after every section's data is written
  double seconds = 0;            // computing the data
};

// Writes `text` to data_dir/file.
void write_data(const ReportContext& ctx, const std::string& file, const std::string& text);

// Rows of comma-separated values (a field with a comma or quote is quoted); numbers with 6
// significant digits (non-finite: empty cell).
class Csv {
 public:
  explicit Csv(const std::string& header) : text_(header + "\n") {}
  Csv& cell(const std::string& s);
  Csv& cell(double x);
  Csv& cell(std::int64_t x);
  void end_row();
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  bool row_open_ = false;
};

// x with `digits` significant digits ("%.*g").
std::string num(double x, int digits = 3);
// The Markdown of a figure: the image, its data files and the commands that made it.
std::string figure_markdown(const ReportContext& ctx, const Figure& f, const std::string& alt);

}  // namespace larc::report
