// The λ parameterisations of log-linear attention (reference/log_linear_lambda.h, SPEC §4): baseline
// softplus(L_ℓ dl), MLP-softplus and MLP-softmax with the paper's initialisation, hidden size as a
// parameter, GELU against known values, and shapes that throw naming the field.
#include <gtest/gtest.h>

#include <cmath>

#include "larc/reference/log_linear.h"
#include "larc/reference/log_linear_lambda.h"

namespace {

namespace ll = larc::ref::log_linear;
using larc::ref::Mat;
using larc::ref::Vec;

Mat<double> some_dl(Eigen::Index T, Eigen::Index L) {
  Mat<double> dl(T, L);
  for (Eigen::Index i = 0; i < dl.size(); ++i) dl(i) = std::sin(1.7 * double(i) + 0.3) * 3;
  return dl;
}

TEST(LogLinearLambda, BaselineIsSoftplusOfLTimesDl) {
  const Mat<double> dl = some_dl(5, 4);
  Vec<double> L(4);
  L << 1, 2, -0.5, 0;
  const Mat<double> lambda = ll::baseline_lambda(dl, L);
  for (Eigen::Index t = 0; t < 5; ++t)
    for (Eigen::Index l = 0; l < 4; ++l) {
      const double want = std::log1p(std::exp(L(l) * dl(t, l)));
      // types.h's softplus takes log(1 + e^x) without log1p: accurate to ~u absolutely, not relatively.
      EXPECT_NEAR(lambda(t, l), want, 2.3e-16 * (1 + want));
    }
  EXPECT_DOUBLE_EQ(lambda(0, 3), std::log(2.0));  // L_ℓ = 0 gives log 2, whatever dl
  EXPECT_THROW(ll::baseline_lambda(dl, Vec<double>::Ones(3)), std::invalid_argument);
}

TEST(LogLinearLambda, MlpSoftplusInitialisation) {
  for (Eigen::Index hidden : {64, 30, 1}) {
    const auto m = ll::mlp_softplus_init<double>(15, hidden, 42);
    EXPECT_EQ(m.hidden(), hidden);
    EXPECT_EQ(m.levels(), 15);
    EXPECT_TRUE(m.w2.isZero(0));
    EXPECT_TRUE(m.b1.isZero(0));
    EXPECT_TRUE((m.b2.array() == 0.54).all());
    const double bound = std::sqrt(6.0 / double(15 + hidden));
    EXPECT_LT(m.w1.cwiseAbs().maxCoeff(), bound);
    EXPECT_EQ(ll::lambda_mlp_parameter_count(15, hidden), m.w1.size() + m.b1.size() + m.w2.size() + m.b2.size());
  }
  const auto a = ll::mlp_softplus_init<double>(15, 64, 1), b = ll::mlp_softplus_init<double>(15, 64, 1),
             c = ll::mlp_softplus_init<double>(15, 64, 2);
  EXPECT_TRUE(a.w1 == b.w1);
  EXPECT_FALSE(a.w1 == c.w1);
  // Xavier-uniform variance bound²/3 = 2/(L + h): over 960 entries within 15%.
  const double var = a.w1.squaredNorm() / double(a.w1.size());
  EXPECT_NEAR(var, 2.0 / (15 + 64), 0.15 * 2.0 / (15 + 64));
}

TEST(LogLinearLambda, AtInitialisationTheMlpIgnoresItsInput) {
  const auto sp = ll::mlp_softplus_init<double>(6, 64, 3);
  const auto sm = ll::mlp_softmax_init<double>(6, 64, 3);
  const Mat<double> dl = some_dl(7, 6);
  const Mat<double> a = sp.apply(dl), b = sm.apply(dl);
  EXPECT_TRUE((a.array() == larc::ref::softplus(0.54)).all());  // one value for every token and level
  EXPECT_NEAR(a(0, 0), std::log1p(std::exp(0.54)), 2e-16);
  for (Eigen::Index i = 0; i < b.size(); ++i) EXPECT_NEAR(b(i), 1.0 / 6, 1e-16);
}

TEST(LogLinearLambda, TrainedMlpDependsOnItsInputAndSoftmaxSumsToOne) {
  auto m = ll::mlp_softmax_init<double>(5, 8, 9);
  for (Eigen::Index i = 0; i < m.w2.size(); ++i) m.w2(i) = std::cos(0.7 * double(i));
  const Mat<double> dl = some_dl(4, 5);
  const Mat<double> soft = m.apply(dl);
  for (Eigen::Index t = 0; t < 4; ++t) EXPECT_NEAR(soft.row(t).sum(), 1.0, 4e-16);
  EXPECT_FALSE(soft.row(0) == soft.row(1));
  m.activation = ll::LambdaActivation::softplus;
  const Mat<double> plus = m.apply(dl);
  EXPECT_TRUE((plus.array() > 0).all());
  EXPECT_GT(plus.row(0).sum(), 1.5);  // not normalised
  EXPECT_THROW(m(Vec<double>::Ones(4)), std::invalid_argument);
}

TEST(LogLinearLambda, GeluIsTheExactOne) {
  EXPECT_EQ(ll::gelu(0.0), 0.0);
  EXPECT_NEAR(ll::gelu(1.0), 0.8413447460685429, 1e-16);
  EXPECT_NEAR(ll::gelu(-1.0), -0.15865525393145707, 1e-16);
  const larc::ref::dd x = larc::ref::dd(1) / larc::ref::dd(3);
  const larc::ref::mpfr50 want = larc::ref::mpfr50(1) / 3 * (1 + erf(larc::ref::mpfr50(1) / 3 / sqrt(larc::ref::mpfr50(2)))) / 2;
  EXPECT_LT(std::fabs(larc::ref::to_double(larc::ref::mpfr50(larc::ref::convert<larc::ref::mpfr50>(ll::gelu(x)) - want))), 1e-31);
}

TEST(LogLinearLambda, RationalsRefuseTranscendentals) {
  const auto m = ll::mlp_softplus_init<larc::ref::rational>(3, 4, 0);
  EXPECT_THROW(m(Vec<larc::ref::rational>::Zero(3)), std::invalid_argument);
}

}  // namespace
