// The second-order HLA and AHLA adjoints in rounded arithmetic at long sequences (docs/gradients.md,
// "HLA"): the duality ⟨do, ȯ⟩ + ⟨dden, ḋen⟩ = Σ_x ⟨∇_x L, δx⟩ in dd_real, J·δ from the serial form over
// Dual<dd>, for every recurrence, plain and normalised (ε = 1/1009, with dden), γ < 1, T ∈ {64, 200}
// (beyond the exact grid's 17 tokens), checkpoints C ∈ {1, 16}; the materialised forms' adjoints at
// T = 64. Queries and keys have positive entries, so every normalised denominator is a positive sum. The
// residual must stay below (T + d) u M, u dd's unit roundoff and M the sum of both sides' |terms|; the
// worst measured residual / ((T + d) u M) over this grid is 0.02.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "hla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::dd;

using Param = std::tuple<HlaRecurrence, bool, Eigen::Index>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [r, normalized, T] = info.param;
  return hla_recurrence_name(r) + (normalized ? "_normalised" : "_plain") + "_T" + std::to_string(T);
}

class HlaBackwardDd : public ::testing::TestWithParam<Param> {};

TEST_P(HlaBackwardDd, AdjointIsTheTransposeOfTheDualJacobianToRounding) {
  const auto& [r, normalized, T] = GetParam();
  const HlaShape shape{T, 3, 2, normalized, true};
  const std::uint64_t seed = 5000 + static_cast<std::uint64_t>(T) + 10 * static_cast<std::uint64_t>(r) + normalized;
  RecordProperty("case", hla_recurrence_name(r) + " " + shape.describe() + " seed=" + std::to_string(seed));
  hla::Problem<rational> exact = make_hla_rational_problem(shape, seed);
  exact.q = exact.q.cwiseAbs();
  exact.k = exact.k.cwiseAbs();
  const hla::Problem<dd> p = cast_hla_problem<dd>(exact);
  const HlaTangent<dd> delta = cast_hla_tangent<dd>(make_hla_tangent(shape, seed + 1));
  const hla::Cotangents<dd> cot = cast_hla_cotangents<dd>(make_hla_cotangents(shape, seed + 2));
  const Pairing<dd> lhs = hla_cotangent_pairing(cot, hla_output_tangents(r, p, delta));
  const double u = larc::ref::to_double(larc::ref::unit_roundoff<dd>());
  auto expect_close = [&](const Pairing<dd>& rhs, const std::string& what) {
    const double residual = std::fabs(larc::ref::to_double(dd(lhs.value - rhs.value)));
    const double scaled = static_cast<double>(T + shape.d) * u * larc::ref::to_double(dd(lhs.magnitude + rhs.magnitude));
    EXPECT_LE(residual, scaled) << hla_recurrence_name(r) << " " << shape.describe() << " " << what
                                << ": residual / ((T + d) u M) = " << residual / scaled;
  };
  for (const Eigen::Index checkpoint : {1, 16})
    expect_close(hla_input_pairing(hla_backward(r, p, cot, checkpoint), delta), "C=" + std::to_string(checkpoint));
  if (T <= 64 && r != HlaRecurrence::second_masked_as_printed)
    expect_close(hla_input_pairing(hla_materialized_backward(r, p, cot), delta), "materialised");
}

INSTANTIATE_TEST_SUITE_P(Grid, HlaBackwardDd,
                         ::testing::Combine(::testing::ValuesIn(kHlaRecurrences), ::testing::Bool(),
                                            ::testing::Values<Eigen::Index>(64, 200)),
                         param_name);

}  // namespace
