// The linear-attention adjoint against central differences at 266-bit MPFR (docs/gradients.md, "How
// the adjoint is checked"): (L(x + hδ) − L(x − hδ)) / 2h with h = 2⁻⁸⁰ along a random rational tangent δ
// of every input (q, k, v, S_0, z_0), against ⟨∇L, δ⟩ from backward at the same precision (checkpoint 7),
// to 30 digits of the sum of |terms| of ⟨∇L, δ⟩. The truncation error is h² ≈ 2⁻¹⁶⁰ times the third
// derivative along δ, the rounding error 2⁻²⁶⁶/h ≈ 2⁻¹⁸⁶. Plain and ratio reads, identity features
// (rational cases, as in linear_attention_backward_rational_test.cpp) and ELU + 1 (Gaussian cases from
// linear_attention_cases.h: no entry within h of ELU + 1's kink in curvature at 0, and positive
// ratio denominators), so this is also the check of the feature map's chain rule feature_rows_backward.
#include <gtest/gtest.h>

#include <tuple>

#include "linear_attention_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::mpfr80;
using larc::testing::LaShape;
using larc::testing::LaVariant;

template <class To>
la::Problem<To> cast_la_problem(const la::Problem<rational>& p) {
  using larc::ref::cast_matrix;
  la::Problem<To> r{cast_matrix<To>(p.q), cast_matrix<To>(p.k), cast_matrix<To>(p.v),
                    {p.opt.feature, p.opt.ratio, larc::ref::convert<To>(p.opt.eps), larc::ref::convert<To>(p.opt.scale)},
                    {}, {}};
  if (p.initial_state) r.initial_state = cast_matrix<To>(*p.initial_state);
  if (p.initial_normalizer) r.initial_normalizer = larc::ref::cast_vector<To>(*p.initial_normalizer);
  return r;
}

la::Problem<mpfr80> mpfr_problem(const LaVariant& variant, const LaShape& shape, std::uint64_t seed) {
  if (variant.feature == la::FeatureMap::elu_plus_one) return larc::testing::make_la_problem<mpfr80>(variant, shape, seed);
  return cast_la_problem<mpfr80>(larc::testing::make_la_rational_problem(variant, shape, seed));
}

// The problem moved to x + h δ (the initial memory from 0 when the problem has none).
la::Problem<mpfr80> moved(const la::Problem<mpfr80>& p, const LaInputTangent<mpfr80>& d, const mpfr80& h) {
  la::Problem<mpfr80> r = p;
  const la::Memory<mpfr80> m0 = la::start_memory(p);
  r.q += h * d.dq;
  r.k += h * d.dk;
  r.v += h * d.dv;
  r.initial_state = m0.s + h * d.d_initial_state;
  r.initial_normalizer = m0.z + h * d.d_initial_normalizer;
  return r;
}

mpfr80 loss(const la::Problem<mpfr80>& p, const la::Cotangents<mpfr80>& cot) {
  return la_cotangent_pairing(cot, la::serial(p)).value;
}

const mpfr80 kStep = ldexp(mpfr80(1), -80);
const mpfr80 kDigits30 = mpfr80("1e-30");

// ELU + 1 or identity features, ratio or plain read, T, initial memory.
using Param = std::tuple<bool, bool, Eigen::Index, bool>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [elu, ratio, T, init] = info.param;
  return larc::testing::variant_name({elu ? la::FeatureMap::elu_plus_one : la::FeatureMap::identity, ratio}) + "_T" +
         std::to_string(T) + (init ? "_memory" : "_empty");
}

class LinearAttentionBackwardMpfr : public ::testing::TestWithParam<Param> {};

TEST_P(LinearAttentionBackwardMpfr, AdjointAgreesWithCentralDifferences) {
  const auto& [elu, ratio, T, init] = GetParam();
  const LaVariant variant{elu ? la::FeatureMap::elu_plus_one : la::FeatureMap::identity, ratio};
  const LaShape shape = init ? LaShape{T, 3, 2, true} : LaShape{T, 2, 3, false};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + (elu ? 100 : 0) + (ratio ? 10 : 0) + (init ? 1 : 0);
  RecordProperty("seed", std::to_string(seed));
  const la::Problem<mpfr80> p = mpfr_problem(variant, shape, seed);
  const LaInputTangent<mpfr80> delta = cast_la_tangent<mpfr80>(make_la_tangent(shape, seed + 1));
  const la::Cotangents<mpfr80> cot = cast_la_cotangents<mpfr80>(make_la_cotangents(shape, Seeds::both, seed + 2));
  const mpfr80 difference = (loss(moved(p, delta, kStep), cot) - loss(moved(p, delta, mpfr80(-kStep)), cot)) / (2 * kStep);
  const Pairing<mpfr80> adjoint = la_input_pairing(la::backward(p, cot, 7), delta);
  EXPECT_LE(abs(difference - adjoint.value), kDigits30 * adjoint.magnitude)
      << larc::testing::describe(variant, shape, seed) << ": central difference " << difference << ", adjoint "
      << adjoint.value;
}

INSTANTIATE_TEST_SUITE_P(Grid, LinearAttentionBackwardMpfr,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool(), ::testing::Values<Eigen::Index>(1, 5, 65),
                                            ::testing::Bool()),
                         param_name);

}  // namespace
