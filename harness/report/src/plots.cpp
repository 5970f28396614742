#include "plots.h"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

namespace larc::report {

namespace {

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool imports_matplotlib(const std::string& python) {
  const std::string cmd = shell_quoted(python) + " -s -c 'import matplotlib' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace

std::string default_plot_script() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path dir = exe.parent_path();
    for (const std::filesystem::path& p : {dir / ".." / "share" / "larc" / "plot_accuracy.py", dir / "plot_accuracy.py"})
      if (std::filesystem::exists(p, ec)) return p.lexically_normal().string();
  }
  return "tools/python/plot_accuracy.py";
}

std::string find_python_with_matplotlib() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("LARC_PYTHON"); env && *env) candidates = {env};
  else candidates = {"python3", "/usr/bin/python3"};
  std::string tried;
  for (const std::string& c : candidates) {
    if (imports_matplotlib(c)) return c;
    tried += (tried.empty() ? "" : ", ") + c;
  }
  throw std::runtime_error("report: no Python with matplotlib (tried " + tried +
                           "): install Debian's python3-matplotlib (tools/install-deps.sh does) or point LARC_PYTHON "
                           "at a python3 that imports matplotlib");
}

void draw_figures(const ReportContext& ctx, const std::string& python, const std::vector<Figure>& figures) {
  const std::string& script = ctx.plot_script;
  if (!std::filesystem::exists(script))
    throw std::runtime_error("report: the plotting script " + script + " is missing (give it with --plot-script)");
  std::string cmd = shell_quoted(python) + " -s " + shell_quoted(script) + " --data " + shell_quoted(ctx.data_dir) +
                    " --out " + shell_quoted(ctx.out_dir);
  for (const Figure& f : figures) {
    std::filesystem::remove(ctx.out_dir + "/" + f.name + ".png");
    cmd.append(" ").append(shell_quoted(f.name));
  }
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("report: " + script + " failed (its message is above)");
  for (const Figure& f : figures) {
    const std::string png = ctx.out_dir + "/" + f.name + ".png";
    if (!std::filesystem::exists(png)) throw std::runtime_error("report: " + script + " did not write " + png);
  }
}

}  // namespace larc::report
