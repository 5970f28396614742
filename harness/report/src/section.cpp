#include "section.h"

#include <cmath>
#include <cstdio>

#include "larc/fixtures/atomic_file.h"

namespace larc::report {

void write_data(const ReportContext& ctx, const std::string& file, const std::string& text) {
  fixtures::write_file_atomically(ctx.data_dir + "/" + file, text);
}

Csv& Csv::cell(const std::string& s) {
  std::string field = s;
  if (s.find_first_of(",\"\n") != std::string::npos) {  // RFC 4180 quoting
    field.assign(1, '"');
    for (char c : s) {
      if (c == '"') field += '"';  // a quote is doubled
      field += c;
    }
    field += '"';
  }
  if (row_open_) text_ += ',';
  text_ += field;
  row_open_ = true;
  return *this;
}

Csv& Csv::cell(double x) { return cell(std::isfinite(x) ? num(x, 6) : std::string()); }

Csv& Csv::cell(std::int64_t x) { return cell(std::to_string(x)); }

void Csv::end_row() {
  text_ += "\n";
  row_open_ = false;
}

std::string num(double x, int digits) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*g", digits, x);
  return b;
}

std::string figure_markdown(const ReportContext& ctx, const Figure& f, const std::string& alt) {
  std::string md = "![" + alt + "](" + f.name + ".png)\n\nData:";
  for (const std::string& d : f.data) md += " [data/" + d + "](data/" + d + ")";
  md += ". Made by `" + ctx.command + "` (computes the data, then draws every figure); redraw this figure alone from "
        "the data with `python3 tools/python/plot_accuracy.py --data " + ctx.data_dir + " --out " + ctx.out_dir + " " +
        f.name + "`.\n";
  return md;
}

}  // namespace larc::report
