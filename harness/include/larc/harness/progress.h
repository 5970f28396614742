// Progress on stderr for long runs (docs/robustness.md, "Long runs"): cases done, rate, time left. Off when stderr
// is not a terminal unless forced (`--progress`); when forced onto a file or pipe it prints whole
// lines at most every 5 s instead of rewriting one line.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace larc::harness {

class Progress {
 public:
  // total = 0: unknown (time-bounded runs); then `deadline_seconds` (> 0) gives the time left.
  Progress(std::string label, std::size_t total, bool forced, double deadline_seconds = 0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // `done` cases finished, `failures` of them failed.
  void update(std::size_t done, std::size_t failures);
  // The line update() prints (without control characters), for tests.
  std::string line(std::size_t done, std::size_t failures, double elapsed_seconds) const;

 private:
  std::string label_;
  std::size_t total_;
  double deadline_seconds_;
  bool enabled_, terminal_;
  std::chrono::steady_clock::time_point start_, last_print_;
  bool printed_ = false;
};

}  // namespace larc::harness
