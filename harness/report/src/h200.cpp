#include "h200.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace larc::report {

H200Gate read_h200_gate(const std::string& path) {
  H200Gate g;
  g.path = path;
  if (!std::filesystem::exists(path)) return g;
  std::ifstream f(path);
  try {
    const nlohmann::json j = nlohmann::json::parse(f);
    g.tree_hash = j.value("tree_hash", "unknown");
    g.results = j.at("results");
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument("--h200-gate: " + path + ": not a larc gate report (" + e.what() + ")");
  }
  g.present = true;
  return g;
}

}  // namespace larc::report
