// `larc fixtures show FILE [--json [--values]]`: a fixture's metadata and, per tensor, dtype, shape,
// min, max and NaN/Inf counts; a malformed file exits 2 with the FixtureError naming the problem.
#include "fixtures_show_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "larc/fixtures/safetensors.h"

namespace larc::cli {

namespace {
namespace fx = larc::fixtures;

struct ShowOptions {
  std::string path;
  bool json = false;
  bool values = false;
};

// Summary of one tensor: min and max over the non-NaN elements (none when there are none).
struct TensorSummary {
  std::optional<double> min, max;
  std::int64_t nan_count = 0, inf_count = 0;
};

TensorSummary summarize(const std::vector<double>& values) {
  TensorSummary s;
  for (double x : values) {
    if (std::isnan(x)) {
      ++s.nan_count;
      continue;
    }
    if (std::isinf(x)) ++s.inf_count;
    if (!s.min || x < *s.min) s.min = x;
    if (!s.max || x > *s.max) s.max = x;
  }
  return s;
}

// JSON has no NaN or Inf: they are written as the strings "nan", "inf", "-inf".
nlohmann::json number_json(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  return x;
}

nlohmann::json optional_json(const std::optional<double>& x) { return x ? number_json(*x) : nlohmann::json(nullptr); }

nlohmann::json tensor_json(const std::string& name, const fx::TensorData& t, bool with_values) {
  nlohmann::json j{{"name", name}, {"dtype", fx::safetensors_name(t.dtype)}, {"shape", t.shape}, {"numel", t.numel()}};
  if (larc::is_floating(t.dtype)) {
    const std::vector<double> values = t.to_doubles(name);
    const TensorSummary s = summarize(values);
    j["min"] = optional_json(s.min);
    j["max"] = optional_json(s.max);
    j["nan_count"] = s.nan_count;
    j["inf_count"] = s.inf_count;
    if (with_values) {
      j["values"] = nlohmann::json::array();
      for (double x : values) j["values"].push_back(number_json(x));
    }
  } else {  // integers exactly (I64 may exceed what a double holds)
    const std::vector<std::int64_t> values = t.to_int64s(name);
    j["min"] = values.empty() ? nlohmann::json(nullptr) : nlohmann::json(*std::min_element(values.begin(), values.end()));
    j["max"] = values.empty() ? nlohmann::json(nullptr) : nlohmann::json(*std::max_element(values.begin(), values.end()));
    j["nan_count"] = 0;
    j["inf_count"] = 0;
    if (with_values) j["values"] = values;
  }
  return j;
}

std::string cell(const nlohmann::json& x) {
  if (x.is_null()) return "-";
  if (x.is_string()) return x.get<std::string>();
  if (x.is_number_float()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", x.get<double>());
    return buf;
  }
  return x.dump();
}

void print_text(const nlohmann::json& doc) {
  std::cout << "file: " << doc["file"].get<std::string>() << "\n";
  std::cout << "metadata (" << doc["metadata"].size() << "):\n";
  for (const auto& [key, value] : doc["metadata"].items()) std::cout << "  " << key << " = " << value.get<std::string>() << "\n";
  std::vector<std::vector<std::string>> rows{{"name", "dtype", "shape", "min", "max", "NaN", "Inf"}};
  for (const nlohmann::json& t : doc["tensors"])
    rows.push_back({t["name"].get<std::string>(), t["dtype"].get<std::string>(),
                    fx::format_shape(t["shape"].get<std::vector<std::int64_t>>()), cell(t["min"]), cell(t["max"]),
                    cell(t["nan_count"]), cell(t["inf_count"])});
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::cout << "tensors (" << doc["tensors"].size() << "):\n";
  for (const auto& row : rows) {
    std::cout << " ";
    for (std::size_t c = 0; c < row.size(); ++c) std::cout << " " << row[c] << std::string(width[c] - row[c].size(), ' ');
    std::cout << "\n";
  }
}

int run_show(const ShowOptions& o) {
  nlohmann::json doc;
  try {
    const fx::SafetensorsFile file = fx::read_safetensors(o.path);
    doc = {{"file", o.path}, {"metadata", file.metadata}, {"tensors", nlohmann::json::array()}};
    for (const auto& [name, t] : file.tensors) doc["tensors"].push_back(tensor_json(name, t, o.values));
  } catch (const fx::FixtureError& e) {
    std::cerr << "larc fixtures show: " << e.what() << "\n";
    return 2;
  }
  if (o.json) std::cout << doc.dump(2) << "\n";
  else print_text(doc);
  return 0;
}
}  // namespace

std::function<int()> add_fixtures_show_command(CLI::App& fixtures) {
  auto opts = std::make_shared<ShowOptions>();
  CLI::App* cmd = fixtures.add_subcommand("show", "Print a fixture's metadata and each tensor's dtype, shape, min, max, NaN/Inf counts");
  cmd->add_option("FILE", opts->path, "A safetensors file")->required();
  cmd->add_flag("--json", opts->json, "Print JSON ({\"file\", \"metadata\", \"tensors\": [{\"name\", \"dtype\", \"shape\", "
                                      "\"numel\", \"min\", \"max\", \"nan_count\", \"inf_count\"}]}); NaN/Inf as \"nan\"/\"inf\"/\"-inf\"");
  cmd->add_flag("--values", opts->values, "With --json: every tensor's values too, exactly (row-major)")->needs("--json");
  return [cmd, opts]() -> int { return cmd->parsed() ? run_show(*opts) : -1; };
}

}  // namespace larc::cli
