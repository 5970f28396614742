#include "larc/properties/vla_kernel_speed.h"

#include <cmath>
#include <map>
#include <sstream>

namespace larc::props {

namespace {

std::map<double, double> series(const nlohmann::json& by_length) {
  std::map<double, double> out;
  for (const auto& [t, ms] : by_length.items()) out[std::stod(t)] = ms.get<double>();
  return out;
}

// Least-squares slope of log(ms) against log(T).
double loglog_slope(const std::map<double, double>& points) {
  double mx = 0, my = 0;
  for (const auto& [t, ms] : points) mx += std::log(t), my += std::log(ms);
  mx /= points.size(), my /= points.size();
  double sxy = 0, sxx = 0;
  for (const auto& [t, ms] : points) {
    sxy += (std::log(t) - mx) * (std::log(ms) - my);
    sxx += (std::log(t) - mx) * (std::log(t) - mx);
  }
  return sxy / sxx;
}

std::string num(double x, int digits = 3) {
  std::ostringstream s;
  s.precision(digits);
  s << x;
  return s.str();
}

}  // namespace

ClaimOutcome judge_vla_kernel_speed(const nlohmann::json& report) {
  ClaimOutcome out;
  out.verdict = Verdict::not_checkable_here;
  if (!report.is_object() || !report.contains("vla_c10") || !report["vla_c10"].is_object()) {
    out.evidence = "no measured VLA kernel timings (reports/h200/bench.json has no vla_c10 section).";
    return out;
  }
  const nlohmann::json& c = report["vla_c10"];
  try {
    const std::map<double, double> kernel = series(c.at("kernel_ms")), sdpa = series(c.at("sdpa_ms"));
    if (kernel.size() < 4) throw std::invalid_argument("fewer than 4 lengths timed");
    std::map<double, double> upper;
    std::size_t i = 0;
    for (const auto& p : kernel)
      if (2 * i++ >= kernel.size()) upper.insert(p);
    const double slope = loglog_slope(upper);
    const bool linear = slope >= 0.85 && slope <= 1.15;
    double crossover = 0;  // the first measured T from which the kernel is faster than SDPA at every longer T
    for (auto it = kernel.rbegin(); it != kernel.rend(); ++it) {
      const auto s = sdpa.find(it->first);
      if (s == sdpa.end() || it->second >= s->second) break;
      crossover = it->first;
    }
    const double speedup = c.at("speedup_over_sequential").is_number() ? c["speedup_over_sequential"].get<double>() : 0;
    const bool fast = speedup >= 14;
    std::ostringstream ev;
    ev << "measured on " << bench_device(report) << " (reports/h200/bench.json, source tree "
       << report.value("tree_hash", "?")
       << "), larc's fused VLA kernel, B = 1, H = 16, D = 128, bf16: time ∝ T^" << num(slope) << " over T = "
       << num(upper.begin()->first, 6) << " .. " << num(upper.rbegin()->first, 6) << " (O(T): " << (linear ? "yes" : "no")
       << "); " << num(kernel.rbegin()->second) << " ms at T = " << num(kernel.rbegin()->first, 7) << " against SDPA's "
       << (sdpa.count(kernel.rbegin()->first) ? num(sdpa.at(kernel.rbegin()->first)) : std::string("?")) << " ms; "
       << (crossover > 0 ? "faster than SDPA from T = " + num(crossover, 7) + " on (interpolated crossover ≈ " +
                               (c.at("crossover_T").is_number() ? num(c["crossover_T"].get<double>(), 6) : std::string("?")) +
                               "; the paper ≈ 43,000)"
                         : std::string("never faster than SDPA up to the longest T measured (the paper: from ≈ 43,000)"))
       << "; " << num(speedup) << "× faster than the sequential PyTorch loop of the recurrence at T = "
       << c.at("sequential_pytorch").value("T", 0) << " (the paper: ≈ 14× over sequential Python).";
    out.evidence = ev.str();
    if (linear && fast && crossover > 0) out.verdict = Verdict::holds;
    else
      out.evidence += " Not every part reached by larc's kernel; the paper's kernel is not available to time, so "
                      "this is no counterexample to its figures.";
  } catch (const std::exception& e) {
    out.evidence = std::string("reports/h200/bench.json's vla_c10 section is malformed: ") + e.what();
  }
  return out;
}

}  // namespace larc::props
