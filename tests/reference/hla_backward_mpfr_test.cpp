// The second-order HLA and AHLA adjoints against central differences at 266-bit MPFR (docs/gradients.md,
// "How the adjoint is checked"): (L(x + hδ) − L(x − hδ)) / 2h with h = 2⁻⁸⁰ along a random rational
// tangent δ of q, k, v and γ, against ⟨∇L, δ⟩ from the backward verb (checkpoint 3), to 30 digits of
// the sum of |terms| of ⟨∇L, δ⟩; every recurrence, plain and normalised (with dden), γ < 1,
// T ∈ {1, 5, 17}. L is a polynomial (plain) or a sum of ratios of polynomials whose denominators stay
// away from 0 (normalised), so the truncation error is of order h² ≈ 2⁻¹⁶⁰ and the rounding error
// 2⁻²⁶⁶/h ≈ 2⁻¹⁸⁶, relative to the terms.
#include <gtest/gtest.h>

#include <tuple>

#include "hla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::mpfr80;

hla::Problem<mpfr80> moved(const hla::Problem<mpfr80>& p, const HlaTangent<mpfr80>& d, const mpfr80& h) {
  hla::Problem<mpfr80> r = p;
  r.q += h * d.dq;
  r.k += h * d.dk;
  r.v += h * d.dv;
  r.opt.gamma += h * d.dgamma;
  return r;
}

mpfr80 loss(HlaRecurrence r, const hla::Problem<mpfr80>& p, const hla::Cotangents<mpfr80>& cot) {
  return hla_cotangent_pairing(cot, hla_serial(r, p)).value;
}

const mpfr80 kStep = ldexp(mpfr80(1), -80);
const mpfr80 kDigits30 = mpfr80("1e-30");

using Param = std::tuple<HlaRecurrence, bool, Eigen::Index>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [r, normalized, T] = info.param;
  return hla_recurrence_name(r) + (normalized ? "_normalised" : "_plain") + "_T" + std::to_string(T);
}

class HlaBackwardMpfr : public ::testing::TestWithParam<Param> {};

TEST_P(HlaBackwardMpfr, AdjointAgreesWithCentralDifferences) {
  const auto& [r, normalized, T] = GetParam();
  const HlaShape shape = T % 2 ? HlaShape{T, 3, 2, normalized, true} : HlaShape{T, 2, 3, normalized, true};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 10 * static_cast<std::uint64_t>(r) + normalized;
  RecordProperty("case", hla_recurrence_name(r) + " " + shape.describe() + " seed=" + std::to_string(seed));
  const hla::Problem<mpfr80> p = cast_hla_problem<mpfr80>(make_hla_rational_problem(shape, seed));  // γ < 1: γ ± h in (0, 1]
  const HlaTangent<mpfr80> delta = cast_hla_tangent<mpfr80>(make_hla_tangent(shape, seed + 1));
  const hla::Cotangents<mpfr80> cot = cast_hla_cotangents<mpfr80>(make_hla_cotangents(shape, seed + 2));
  const mpfr80 difference = (loss(r, moved(p, delta, kStep), cot) - loss(r, moved(p, delta, mpfr80(-kStep)), cot)) / (2 * kStep);
  const Pairing<mpfr80> adjoint = hla_input_pairing(hla_backward(r, p, cot, 3), delta);
  EXPECT_LE(abs(difference - adjoint.value), kDigits30 * adjoint.magnitude)
      << hla_recurrence_name(r) << " " << shape.describe() << ": central difference " << difference << ", adjoint "
      << adjoint.value;
}

INSTANTIATE_TEST_SUITE_P(Grid, HlaBackwardMpfr,
                         ::testing::Combine(::testing::ValuesIn(kHlaRecurrences), ::testing::Bool(),
                                            ::testing::Values<Eigen::Index>(1, 5, 17)),
                         param_name);

}  // namespace
