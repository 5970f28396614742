#include "knob_option.h"

#include <stdexcept>

namespace larc::cli {

harness::KnobValues parse_knobs(const std::vector<std::string>& items) {
  harness::KnobValues k;
  for (const std::string& item : items) {
    const auto eq = item.find('=');
    std::size_t used = 0;
    double v = 0;
    try {
      if (eq != std::string::npos) v = std::stod(item.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (eq == std::string::npos || eq == 0 || used == 0 || used != item.size() - eq - 1)
      throw std::invalid_argument("--knob: expected NAME=VALUE (e.g. collinearity=0.9), got '" + item + "'");
    k[item.substr(0, eq)] = v;
  }
  return k;
}

}  // namespace larc::cli
