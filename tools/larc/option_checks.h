// Checks of numeric option values shared by the commands. CLI11 2.1 converts "-1" given to an unsigned
// option into 2^64 − 1 and takes "nan" as a positive number, so these check the text before CLI11
// converts it; a bad value exits 2 with "OPTION: <what was expected>, got '<value>'".
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>

namespace larc::cli {

// A whole number written in decimal digits, from `min` to 2^64 − 1 (seeds, case counts).
CLI::Validator whole_number(std::uint64_t min = 0);
// A duration in minutes: finite, above 0 and at most 10^6 (about two years).
CLI::Validator minutes_value();

}  // namespace larc::cli
