// The log-linear adjoints against central differences at 266-bit MPFR (docs/gradients.md, "How the adjoint
// is checked"), h = 2⁻⁸⁰, agreement to 30 digits of the sum of |terms| of ⟨∇L, δ⟩:
//  - backward (checkpoint 3) and materialized_backward along a random rational tangent δ of every input
//    (q, k, v, α, β, λ; and the carried level states when the problem continues after t0 = 5 tokens),
//    Mamba-2 and GDN, T ∈ {1, 5, 33}, t0 ∈ {0, 5}: L is a polynomial, so the truncation error is
//    h² ≈ 2⁻¹⁶⁰ times its third derivative along δ and the rounding error 2⁻²⁶⁶/h ≈ 2⁻¹⁸⁶;
//  - the log-decay front end dg = α ⊙ dα against central differences in each g_t (α = e^g), one token at
//    g = −∞ (α = 0), where dg must be exactly 0;
//  - the baseline λ front end (λ = softplus(L_ℓ dl_tℓ)) along a random tangent of dl and of the level
//    weights L, and the MLP front ends (softplus and softmax) along a random tangent of dl, W1, b1, W2, b2.
#include <gtest/gtest.h>

#include <limits>
#include <tuple>

#include "log_linear_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::mpfr80;

ll::Problem<mpfr80> moved(const ll::Problem<mpfr80>& p, const LogLinearTangent<mpfr80>& d, const mpfr80& h) {
  ll::Problem<mpfr80> r = p;
  r.q += h * d.dq;
  r.k += h * d.dk;
  r.v += h * d.dv;
  r.alpha += h * d.dalpha;
  r.beta += h * d.dbeta;
  r.lambda += h * d.dlambda;
  if (r.start)
    for (std::size_t i = 0; i < r.start->level_states.size(); ++i) r.start->level_states[i] += h * d.d_start_states[i];
  return r;
}

mpfr80 loss(const ll::Problem<mpfr80>& p, const Mat<mpfr80>& d_o) { return ll::serial(p).cwiseProduct(d_o).sum(); }

const mpfr80 kStep = ldexp(mpfr80(1), -80);
const mpfr80 kDigits30 = mpfr80("1e-30");

using Param = std::tuple<ll::Variant, Eigen::Index, std::uint64_t>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const std::uint64_t t0 = std::get<2>(info.param);
  return std::string(ll::variant_name(std::get<0>(info.param))) + "_T" + std::to_string(std::get<1>(info.param)) +
         (t0 ? "_t0_" + std::to_string(t0) : "");
}

class LogLinearBackwardMpfr : public ::testing::TestWithParam<Param> {};

TEST_P(LogLinearBackwardMpfr, AdjointsAgreeWithCentralDifferences) {
  const auto& [variant, T, t0] = GetParam();
  const LogLinearShape shape = T % 2 ? LogLinearShape{variant, T, 3, 2, 1, t0} : LogLinearShape{variant, T, 2, 3, 0, t0};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + (variant == ll::Variant::gdn ? 1 : 0);
  RecordProperty("case", shape.describe() + " seed=" + std::to_string(seed));
  const ll::Problem<mpfr80> p = cast_log_linear_problem<mpfr80>(make_log_linear_rational_problem(shape, seed));
  const LogLinearTangent<mpfr80> delta = cast_log_linear_tangent<mpfr80>(make_log_linear_tangent(shape, seed + 1));
  const Mat<mpfr80> d_o = larc::ref::cast_matrix<mpfr80>(make_log_linear_cotangent(shape, seed + 2));
  const mpfr80 difference = (loss(moved(p, delta, kStep), d_o) - loss(moved(p, delta, mpfr80(-kStep)), d_o)) / (2 * kStep);
  const Pairing<mpfr80> fenwick = log_linear_input_pairing(ll::backward(p, d_o, 3), delta);
  const Pairing<mpfr80> dense = log_linear_input_pairing(ll::materialized_backward(p, d_o), delta);
  EXPECT_LE(abs(difference - fenwick.value), kDigits30 * fenwick.magnitude)
      << shape.describe() << ": central difference " << difference << ", backward " << fenwick.value;
  EXPECT_LE(abs(difference - dense.value), kDigits30 * dense.magnitude)
      << shape.describe() << ": central difference " << difference << ", materialized_backward " << dense.value;
}

INSTANTIATE_TEST_SUITE_P(Grid, LogLinearBackwardMpfr,
                         ::testing::Combine(::testing::Values(ll::Variant::mamba2, ll::Variant::gdn),
                                            ::testing::Values<Eigen::Index>(1, 5, 33),
                                            ::testing::Values<std::uint64_t>(0, 5)),
                         param_name);

TEST(LogLinearBackwardLogDecay, LogDecayGradientAgreesWithCentralDifferencesInG) {
  for (const ll::Variant variant : {ll::Variant::mamba2, ll::Variant::gdn}) {
    const LogLinearShape shape{variant, 6, 3, 2, 0};
    ll::Problem<mpfr80> p = cast_log_linear_problem<mpfr80>(make_log_linear_rational_problem(shape, 77));
    Vec<mpfr80> g = p.alpha.unaryExpr([](const mpfr80& a) { return mpfr80(log(a)); });
    g(3) = -std::numeric_limits<mpfr80>::infinity();
    auto decays = [](const Vec<mpfr80>& x) { return Vec<mpfr80>(x.unaryExpr([](const mpfr80& y) { return mpfr80(exp(y)); })); };
    p.alpha = decays(g);
    const Mat<mpfr80> d_o = larc::ref::cast_matrix<mpfr80>(make_log_linear_cotangent(shape, 79));
    const Vec<mpfr80> dg = ll::log_decay_gradient(p.alpha, ll::backward(p, d_o).dalpha);
    EXPECT_TRUE(dg(3) == 0) << ll::variant_name(variant) << " dg at g = -inf: " << dg(3);
    const mpfr80 l0 = loss(p, d_o);
    for (Eigen::Index t = 0; t < shape.T; ++t) {
      auto loss_at = [&](const mpfr80& x) {
        Vec<mpfr80> moved_g = g;
        moved_g(t) = x;
        ll::Problem<mpfr80> q = p;
        q.alpha = decays(moved_g);
        return loss(q, d_o);
      };
      const mpfr80 difference = (loss_at(g(t) + kStep) - loss_at(g(t) - kStep)) / (2 * kStep);
      EXPECT_LE(abs(difference - dg(t)), kDigits30 * (abs(dg(t)) + abs(l0)))
          << ll::variant_name(variant) << " token " << t << ": central difference " << difference << ", dg " << dg(t);
    }
  }
}

TEST(LogLinearBackwardBaselineLambda, LevelInputAndWeightGradientsAgreeWithCentralDifferences) {
  const LogLinearShape shape{ll::Variant::gdn, 9, 2, 3, 0};
  const Eigen::Index levels = lambda_columns(shape);
  larc::proofs::RationalSource src(91, 9, 8);
  ll::Problem<mpfr80> p = cast_log_linear_problem<mpfr80>(make_log_linear_rational_problem(shape, 90));
  const Mat<mpfr80> dl = larc::ref::cast_matrix<mpfr80>(src.matrix(shape.T, levels));
  const Vec<mpfr80> weights = larc::ref::cast_vector<mpfr80>(Vec<rational>(src.vector(levels)));
  const Mat<mpfr80> d_dl_tangent = larc::ref::cast_matrix<mpfr80>(src.matrix(shape.T, levels));
  const Vec<mpfr80> weights_tangent = larc::ref::cast_vector<mpfr80>(Vec<rational>(src.vector(levels)));
  const Mat<mpfr80> d_o = larc::ref::cast_matrix<mpfr80>(make_log_linear_cotangent(shape, 92));
  auto loss_at = [&](const mpfr80& h) {
    ll::Problem<mpfr80> q = p;
    q.lambda = ll::baseline_lambda<mpfr80>(dl + h * d_dl_tangent, weights + h * weights_tangent);
    return loss(q, d_o);
  };
  p.lambda = ll::baseline_lambda<mpfr80>(dl, weights);
  const ll::BaselineLambdaGradients<mpfr80> g =
      ll::baseline_lambda_backward(dl, weights, ll::backward(p, d_o, 4).dlambda);
  Pairing<mpfr80> adjoint;
  adjoint.add(g.d_dl, d_dl_tangent);
  adjoint.add(g.d_level_weights, weights_tangent);
  const mpfr80 difference = (loss_at(kStep) - loss_at(mpfr80(-kStep))) / (2 * kStep);
  EXPECT_LE(abs(difference - adjoint.value), kDigits30 * adjoint.magnitude)
      << "central difference " << difference << ", adjoint " << adjoint.value;
}

// The MLP parameterisations with a nonzero W2 (at initialisation W2 = 0 and dW1 = 0), softplus and
// softmax, along a random tangent of dl, W1, b1, W2 and b2.
TEST(LogLinearBackwardLambdaMlp, ParameterAndInputGradientsAgreeWithCentralDifferences) {
  for (const ll::LambdaActivation activation : {ll::LambdaActivation::softplus, ll::LambdaActivation::softmax}) {
    const LogLinearShape shape{ll::Variant::mamba2, 9, 2, 3, 0};
    const Eigen::Index levels = lambda_columns(shape), hidden = 3;
    larc::proofs::RationalSource src(101, 9, 8);
    auto matrix = [&](Eigen::Index r, Eigen::Index c) { return larc::ref::cast_matrix<mpfr80>(src.matrix(r, c)); };
    auto vector = [&](Eigen::Index n) { return Vec<mpfr80>(matrix(n, 1)); };
    ll::LambdaMlp<mpfr80> mlp{activation, matrix(hidden, levels), vector(hidden), matrix(levels, hidden), vector(levels)};
    const ll::LambdaMlp<mpfr80> tangent{activation, matrix(hidden, levels), vector(hidden), matrix(levels, hidden), vector(levels)};
    const Mat<mpfr80> dl = matrix(shape.T, levels), dl_tangent = matrix(shape.T, levels);
    ll::Problem<mpfr80> p = cast_log_linear_problem<mpfr80>(make_log_linear_rational_problem(shape, 102));
    const Mat<mpfr80> d_o = larc::ref::cast_matrix<mpfr80>(make_log_linear_cotangent(shape, 103));
    auto loss_at = [&](const mpfr80& h) {
      ll::LambdaMlp<mpfr80> moved = mlp;
      moved.w1 += h * tangent.w1;
      moved.b1 += h * tangent.b1;
      moved.w2 += h * tangent.w2;
      moved.b2 += h * tangent.b2;
      ll::Problem<mpfr80> q = p;
      q.lambda = moved.apply(Mat<mpfr80>(dl + h * dl_tangent));
      return loss(q, d_o);
    };
    p.lambda = mlp.apply(dl);
    const ll::LambdaMlpGradients<mpfr80> g = ll::lambda_mlp_backward(mlp, dl, ll::backward(p, d_o, 4).dlambda);
    Pairing<mpfr80> adjoint;
    adjoint.add(g.d_dl, dl_tangent);
    adjoint.add(g.dw1, tangent.w1);
    adjoint.add(g.db1, tangent.b1);
    adjoint.add(g.dw2, tangent.w2);
    adjoint.add(g.db2, tangent.b2);
    const mpfr80 difference = (loss_at(kStep) - loss_at(mpfr80(-kStep))) / (2 * kStep);
    EXPECT_LE(abs(difference - adjoint.value), kDigits30 * adjoint.magnitude)
        << (activation == ll::LambdaActivation::softplus ? "softplus" : "softmax") << ": central difference " << difference
        << ", adjoint " << adjoint.value;
  }
}

}  // namespace
