// The committed H200 benchmark report (reports/h200/bench.json, written by tools/h200/bench_report.py),
// read by the claims whose speed part only a measured kernel can settle (VLA-C10, KLA-C6).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace larc::props {

// The report at `path` (ClaimConfig::h200_bench, `larc claims --h200-bench`), or null when it is absent
// or not JSON (its readers then say so).
nlohmann::json read_h200_bench_report(const std::string& path);

// The GPU the report was measured on, as a noun phrase: "the " and its "device" (e.g. "the NVIDIA H100 80GB
// HBM3": the device tool lends an H100 when no H200 starts), or "an unnamed GPU" for a report without one.
std::string bench_device(const nlohmann::json& report);

// One sentence comparing two kernels' measured times row by row (same kind, T, B, H, D, dtype):
// "kernel_a / kernel_b time on the <device> (...): prefill T = 2048: 1.19, ...; decode B×H = 132: ...".
// Empty when the report lacks either kernel.
std::string measured_time_ratios(const nlohmann::json& report, const std::string& kernel_a, const std::string& kernel_b);

}  // namespace larc::props
