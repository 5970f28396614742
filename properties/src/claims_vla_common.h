// Shared by the VLA claim files (claims_vla.cpp: algebraic and Jacobian claims; claims_vla_memory.cpp:
// the memory-level experiments): the paper's name and number formatting. The declared random inputs
// and the Jacobian runs are in larc/properties/vla_jacobian.h, the memory-level experiments in
// larc/properties/vla_memory.h (both shared with `larc report`).
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "larc/properties/claims.h"
#include "larc/properties/generators.h"
#include "larc/properties/vla_jacobian.h"
#include "larc/reference/vla.h"

namespace larc::props::vla_claims {

namespace vla = larc::ref::vla;

inline constexpr const char* kPaper = "VLA (Variational Linear Attention)";

inline std::string fmt(double x, int digits = 3) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*g", digits, x);
  return b;
}

ClaimOutcome vla_c3(const ClaimConfig& cfg);
ClaimOutcome vla_c7(const ClaimConfig& cfg);
ClaimOutcome vla_c8(const ClaimConfig& cfg);

}  // namespace larc::props::vla_claims
