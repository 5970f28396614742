// The --knob NAME=VALUE option of the gate-side commands (gate, fixtures gen).
#pragma once

#include <string>
#include <vector>

#include "larc/harness/mechanism.h"

namespace larc::cli {

// "NAME=VALUE" items of --knob; throws std::invalid_argument naming the malformed item.
harness::KnobValues parse_knobs(const std::vector<std::string>& items);

}  // namespace larc::cli
