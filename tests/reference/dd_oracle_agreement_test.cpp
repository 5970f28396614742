// dd_real, the default oracle (DESIGN.md "Precision ladder"), agrees with 267-bit MPFR (mpfr80, the
// "256-bit MPFR" rung) to at least 100 bits on the operations every reference form is made of:
// dot products of length 64 and 1000 and 64×64 matrix products, over 20 seeded random cases each.
//
// Normalisation: the error of a computed Σ a_i b_i is measured relative to Σ |a_i b_i| (computed in
// mpfr80), not to |Σ a_i b_i|. Rounding errors scale with the terms, so this is the quantity a
// working-precision bound controls (|error| ≤ γ_n Σ|a_i b_i|); relative to |Σ a_i b_i| any precision
// loses every bit under cancellation. "Bits of agreement" is −log2 of that relative error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <random>
#include <string>

#include "larc/reference/types.h"

namespace {

namespace ref = larc::ref;
using ref::dd;
using ref::Mat;
using ref::mpfr80;
using ref::Vec;

constexpr int kCases = 20;
constexpr double kRequiredBits = 100;

// Random dd entries with full 106-bit significands (lo is a random tail, not zero), standard normal
// scale with random signs, so products and sums all round.
Mat<dd> random_dd(std::mt19937_64& rng, Eigen::Index rows, Eigen::Index cols) {
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> tail(-0.5, 0.5);
  Mat<dd> m(rows, cols);
  for (Eigen::Index i = 0; i < rows; ++i)
    for (Eigen::Index j = 0; j < cols; ++j) {
      const double hi = normal(rng);
      m(i, j) = dd(hi) + dd(tail(rng) * std::ldexp(std::fabs(hi), -52));
    }
  return m;
}

// −log2(|got − exact| / Σ|terms|); +inf when they agree exactly.
double bits_of_agreement(const dd& got, const mpfr80& exact, const mpfr80& abs_terms) {
  const mpfr80 err = abs(ref::convert<mpfr80>(got) - exact);
  if (err == 0) return std::numeric_limits<double>::infinity();
  return -ref::to_double(mpfr80(log2(err / abs_terms)));
}

void report(const std::string& what, double worst_bits, std::uint64_t seed) {
  ::testing::Test::RecordProperty("worst_bits_" + what, std::to_string(worst_bits));
  ::testing::Test::RecordProperty("seed_" + what, std::to_string(seed));
  std::cout << what << ": worst agreement " << worst_bits << " bits over " << kCases << " cases (seed " << seed
            << ")\n";
}

void check_dot(Eigen::Index n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  double worst = std::numeric_limits<double>::infinity();
  for (int c = 0; c < kCases; ++c) {
    const Vec<dd> a = random_dd(rng, n, 1), b = random_dd(rng, n, 1);
    const dd got = a.dot(b);
    const Vec<mpfr80> wa = ref::cast_vector<mpfr80>(a), wb = ref::cast_vector<mpfr80>(b);
    const mpfr80 exact = wa.dot(wb);
    const mpfr80 abs_terms = wa.cwiseAbs().dot(wb.cwiseAbs());
    const double bits = bits_of_agreement(got, exact, abs_terms);
    EXPECT_GE(bits, kRequiredBits) << "case " << c << " n=" << n;
    worst = std::min(worst, bits);
  }
  report("dot" + std::to_string(n), worst, seed);
}

TEST(DoubleDoubleAgreesWithMpfr, DotProductLength64) { check_dot(64, 64001); }
TEST(DoubleDoubleAgreesWithMpfr, DotProductLength1000) { check_dot(1000, 1000001); }

TEST(DoubleDoubleAgreesWithMpfr, MatrixProduct64x64) {
  constexpr std::uint64_t seed = 4096001;
  constexpr Eigen::Index n = 64;
  std::mt19937_64 rng(seed);
  double worst = std::numeric_limits<double>::infinity();
  for (int c = 0; c < kCases; ++c) {
    const Mat<dd> a = random_dd(rng, n, n), b = random_dd(rng, n, n);
    const Mat<dd> got = a * b;
    const Mat<mpfr80> wa = ref::cast_matrix<mpfr80>(a), wb = ref::cast_matrix<mpfr80>(b);
    const Mat<mpfr80> exact = wa * wb;
    const Mat<mpfr80> abs_terms = wa.cwiseAbs() * wb.cwiseAbs();
    double case_worst = std::numeric_limits<double>::infinity();
    for (Eigen::Index i = 0; i < n; ++i)
      for (Eigen::Index j = 0; j < n; ++j)
        case_worst = std::min(case_worst, bits_of_agreement(got(i, j), exact(i, j), abs_terms(i, j)));
    EXPECT_GE(case_worst, kRequiredBits) << "case " << c;
    worst = std::min(worst, case_worst);
  }
  report("matmul64", worst, seed);
}

}  // namespace

// Under every dd multiplication is qd's two_prod, a·b = p + e with e exact: by Dekker's split in a build
// without FMA, by one fused multiply-subtract with LARC_FMA (reference/scalar.h). The oracle's bits are
// the same in both builds only because both give the exact e; std::fma (exactly rounded in either build)
// is that e. Random signs and exponents, and operands one bit past a split's halves.
TEST(DoubleDoubleProduct, ErrorTermIsExactSoBuildsWithAndWithoutFmaAgreeBitwise) {
  std::mt19937_64 rng(20261204);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-200, 200);  // products and their error terms stay normal
  for (int i = 0; i < 200000; ++i) {
    const double a = std::ldexp(rng() % 2 ? mantissa(rng) : -mantissa(rng), exponent(rng));
    const double b = std::ldexp(i % 7 == 0 ? 1.0 + std::ldexp(1.0, -26) : mantissa(rng), exponent(rng));
    double e = 0;
    const double p = qd::two_prod(a, b, e);
    ASSERT_EQ(p, a * b) << a << " * " << b;
    ASSERT_EQ(e, std::fma(a, b, -p)) << a << " * " << b;
  }
}

// The float baselines — the tolerances — come from Eigen's float products (the chunked forms). Eigen picks
// its packet width and its fused multiply-add from the target macros: a build with LARC_FMA (-mfma, which
// defines __FMA__, __AVX__ and SSE3/4) would sum in fused AVX lanes and judge with other baselines than
// every build without it (an fp32 dh0 baseline of 1.07e-8 against 7.04e-8 on one case). CMake hides those
// macros from that build, so every build takes the same SSE2 path; this holds it wherever the tests build.
TEST(FloatBaselines, EigenTakesTheSamePacketPathInEveryBuild) {
#if defined(EIGEN_VECTORIZE_FMA) || defined(EIGEN_VECTORIZE_AVX) || defined(EIGEN_VECTORIZE_SSE3)
  FAIL() << "Eigen vectorizes with FMA, AVX or SSE3 here: the float baselines would differ from other builds'";
#else
  SUCCEED();
#endif
}
