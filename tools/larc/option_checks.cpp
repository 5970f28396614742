#include "option_checks.h"

#include <cmath>
#include <string>

namespace larc::cli {

CLI::Validator whole_number(std::uint64_t min) {
  return CLI::Validator(
      [min](std::string& v) {
        const std::string max = "18446744073709551615";  // 2^64 − 1; equal lengths compare as text
        const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
        if (digits && (v.size() < max.size() || (v.size() == max.size() && v <= max)) && std::stoull(v) >= min)
          return std::string();
        return "expected a whole number from " + std::to_string(min) + " to " + max + ", got '" + v + "'";
      },
      "UINT64");
}

CLI::Validator minutes_value() {
  return CLI::Validator(
      [](std::string& v) {
        std::size_t used = 0;
        double m = 0;
        try {
          m = std::stod(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != 0 && used == v.size() && std::isfinite(m) && m > 0 && m <= 1e6) return std::string();
        return "expected minutes above 0 and at most 1000000, got '" + v + "'";
      },
      "MINUTES");
}

}  // namespace larc::cli
