// LL-C1..C5 (SPEC §4): the checks, split over two files; claims_log_linear.cpp registers them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "larc/properties/claims.h"
#include "larc/reference/log_linear.h"

namespace larc::props::log_linear_claims {

inline constexpr const char* kPaper = "Adaptive decay for log-linear attention";

ClaimOutcome ll_c1(const ClaimConfig& cfg);  // claims_log_linear.cpp
ClaimOutcome ll_c2(const ClaimConfig& cfg);  // claims_log_linear.cpp
ClaimOutcome ll_c3(const ClaimConfig& cfg);  // claims_log_linear_lambda.cpp
ClaimOutcome ll_c4(const ClaimConfig& cfg);  // claims_log_linear_lambda.cpp
ClaimOutcome ll_c5(const ClaimConfig& cfg);  // claims_log_linear_lambda.cpp

std::string fmt(double x);  // %.4g

// Least-squares fit y ≈ Σ_j c_j basis_j(x) over the points; returns the coefficients and the largest
// relative residual |y − fit| / y.
struct Fit {
  std::vector<double> coef;
  double max_rel_residual = 0;
};
Fit least_squares(const std::vector<std::vector<double>>& basis_rows, const std::vector<double>& y);

}  // namespace larc::props::log_linear_claims
