// The committed H200 gate results (reports/h200/gate.json, written by `larc gate --json` on the H200
// host: DESIGN.md "GPU kernels"). The report reads them when present and says plainly when not.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace larc::report {

struct H200Gate {
  std::string path;
  bool present = false;
  std::string tree_hash;          // of reference/ and gpu/ the results were made from
  nlohmann::json results = nlohmann::json::array();  // result_json rows (harness/gate.h)
};

// Reads `path` when it exists; an unreadable or malformed file throws std::invalid_argument naming it.
H200Gate read_h200_gate(const std::string& path);

}  // namespace larc::report
