// The plotting step of `larc report`: tools/python/plot_accuracy.py (matplotlib, Agg backend) draws
// every figure from the data files the sections wrote.
#pragma once

#include <string>
#include <vector>

#include "larc/report/report.h"
#include "section.h"

namespace larc::report {

// The first of $LARC_PYTHON (when set, the only candidate), python3 on the PATH and /usr/bin/python3
// that imports matplotlib (run with -s: a user site-packages cannot shadow the system's numpy); throws
// std::runtime_error naming the candidates and the Debian package when none does.
std::string find_python_with_matplotlib();

// Runs the plotting script ctx.plot_script on ctx.data_dir for `figures` and checks that every ctx.out_dir/NAME.png
// was written; throws std::runtime_error naming the script or the missing figure.
void draw_figures(const ReportContext& ctx, const std::string& python, const std::vector<Figure>& figures);

}  // namespace larc::report
