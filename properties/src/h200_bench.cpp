#include "larc/properties/h200_bench.h"

#include <fstream>
#include <map>
#include <sstream>
#include <tuple>

namespace larc::props {

nlohmann::json read_h200_bench_report(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::string bench_device(const nlohmann::json& report) {
  if (report.is_object() && report.contains("device") && report["device"].is_string())
    return "the " + report["device"].get<std::string>();
  return "an unnamed GPU";
}

std::string measured_time_ratios(const nlohmann::json& report, const std::string& kernel_a, const std::string& kernel_b) {
  if (!report.is_object() || !report.contains("rows") || !report["rows"].is_array()) return "";
  using Key = std::tuple<std::string, double, double, double, double, std::string>;  // kind, T, B, H, D, dtype
  std::map<Key, double> a, b;
  for (const auto& row : report["rows"]) {
    if (!row.is_object() || !row.contains("kernel") || !row.contains("ms") || !row["ms"].is_number()) continue;
    const Key key{row.value("kind", ""), row.value("T", 0.0), row.value("B", 0.0), row.value("H", 0.0),
                  row.value("D", 0.0), row.value("dtype", "")};
    const std::string kernel = row["kernel"].get<std::string>();
    if (kernel == kernel_a) a[key] = row["ms"].get<double>();
    if (kernel == kernel_b) b[key] = row["ms"].get<double>();
  }
  std::ostringstream s;
  s.precision(3);
  int shown = 0;
  for (const auto& [key, ms] : a) {
    const auto other = b.find(key);
    if (other == b.end() || other->second <= 0) continue;
    const auto& [kind, T, B, H, D, dtype] = key;
    s << (shown++ ? "; " : "") << kind << (kind == "decode" ? " B×H = " + std::to_string(static_cast<long>(B * H))
                                                           : " T = " + std::to_string(static_cast<long>(T)))
      << ": " << ms / other->second;
  }
  if (shown == 0) return "";
  return kernel_a + " / " + kernel_b + " time on " + bench_device(report) + " (reports/h200/bench.json, source tree " +
         report.value("tree_hash", "?") + ", D = 128, bf16): " + s.str();
}

}  // namespace larc::props
