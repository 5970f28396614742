// Shared by the VLA claim files (claims_vla.cpp: algebraic and Jacobian claims; claims_vla_memory.cpp:
// the memory-level experiments): the paper's name, number formatting and the declared random inputs.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

#include "larc/properties/claims.h"
#include "larc/properties/generators.h"
#include "larc/reference/vla.h"

namespace larc::props::vla_claims {

namespace vla = larc::ref::vla;

inline constexpr const char* kPaper = "VLA (Variational Linear Attention)";

inline std::string fmt(double x, int digits = 3) {
  char b[48];
  std::snprintf(b, sizeof b, "%.*g", digits, x);
  return b;
}

// The declared random VLA inputs: raw keys and queries N(0, 1), values N(0, 1), the authors' penalty
// directions u_t = norm(W_u k_t)/√d_k with W_u ~ N(0, 1/d_k) entries, φ = ELU + 1, ratio read.
inline vla::Problem<double> random_vla_problem(Rng& rng, Eigen::Index T, Eigen::Index dk, Eigen::Index dv, double lambda0,
                                               int nudge_period) {
  vla::Problem<double> p;
  p.q = gaussian(rng, T, dk, 1.0);
  p.k = gaussian(rng, T, dk, 1.0);
  p.v = gaussian(rng, T, dv, 1.0);
  p.u = vla::authors_penalty_directions<double>(p.k, gaussian(rng, dk, dk, 1 / std::sqrt(double(dk))));
  p.opt.lambda0 = lambda0;
  p.opt.nudge_period = nudge_period;
  return p;
}

ClaimOutcome vla_c3(const ClaimConfig& cfg);
ClaimOutcome vla_c7(const ClaimConfig& cfg);
ClaimOutcome vla_c8(const ClaimConfig& cfg);

}  // namespace larc::props::vla_claims
