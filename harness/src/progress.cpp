#include "larc/harness/progress.h"

#include <unistd.h>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace larc::harness {

namespace {
std::string duration(double s) {
  char buf[32];
  const long t = s < 0 ? 0 : static_cast<long>(s + 0.5);
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  return buf;
}
}  // namespace

Progress::Progress(std::string label, std::size_t total, bool forced, double deadline_seconds)
    : label_(std::move(label)),
      total_(total),
      deadline_seconds_(deadline_seconds),
      terminal_(isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now()),
      last_print_(start_) {
  enabled_ = terminal_ || forced;
}

Progress::~Progress() {
  if (enabled_ && printed_ && terminal_) std::cerr << "\n";
}

std::string Progress::line(std::size_t done, std::size_t failures, double elapsed) const {
  const double rate = elapsed > 0 ? static_cast<double>(done) / elapsed : 0;
  std::ostringstream s;
  s << label_ << ": " << done;
  if (total_) s << "/" << total_;
  s << " cases, " << failures << " failed, " << std::fixed << std::setprecision(1) << rate << " cases/s";
  if (total_ && rate > 0) s << ", " << duration(static_cast<double>(total_ - done) / rate) << " left";
  else if (deadline_seconds_ > 0) s << ", " << duration(deadline_seconds_ - elapsed) << " left";
  return s.str();
}

void Progress::update(std::size_t done, std::size_t failures) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since = std::chrono::duration<double>(now - last_print_).count();
  const bool last = total_ && done == total_;
  if (printed_ && !last && since < (terminal_ ? 0.1 : 5.0)) return;
  last_print_ = now;
  printed_ = true;
  const std::string l = line(done, failures, std::chrono::duration<double>(now - start_).count());
  if (terminal_) std::cerr << "\r\033[K" << l << std::flush;
  else std::cerr << l << "\n";
}

}  // namespace larc::harness
