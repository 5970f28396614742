// The precision ladder (DESIGN.md "Precision ladder", reference/scalar.h): each rung's unit roundoff
// measured by unit_roundoff<S>(), convert<>() round trips between rungs, and the rational rung exact.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "larc/proofs_check/exact.h"
#include "larc/reference/scalar.h"
#include "larc/reference/types.h"

namespace {

namespace ref = larc::ref;
using ref::convert;
using ref::dd;
using ref::f128;
using ref::mpfr50;
using ref::mpfr80;
using ref::rational;

template <class S>
double log2_of(const S& x) {
  return std::log2(ref::to_double(x));
}

template <class S>
void record_unit_roundoff(const S& u) {
  std::ostringstream os;
  os.precision(17);
  os << ref::to_double(u) << " = 2^" << log2_of(u);
  ::testing::Test::RecordProperty(std::string("unit_roundoff_") + ref::ScalarTraits<S>::name, os.str());
  std::cout << "unit_roundoff<" << ref::ScalarTraits<S>::name << "> = " << os.str() << "\n";
}

// For the fixed-precision rungs u is exactly 2^-p, p the significand width (implicit bit included).
TEST(UnitRoundoff, FloatIs2ToMinus24) {
  const float u = ref::unit_roundoff<float>();
  record_unit_roundoff(u);
  EXPECT_EQ(u, std::ldexp(1.0f, -24));
  EXPECT_EQ(ref::ScalarTraits<float>::mantissa_bits, 24);
}

TEST(UnitRoundoff, DoubleIs2ToMinus53) {
  const double u = ref::unit_roundoff<double>();
  record_unit_roundoff(u);
  EXPECT_EQ(u, std::ldexp(1.0, -53));
  EXPECT_EQ(ref::ScalarTraits<double>::mantissa_bits, 53);
}

// dd_real is a pair of doubles, not a fixed-precision format, so its unit roundoff is not a clean
// power of two: unit_roundoff<dd>() measures dd's × and + against MPFR (see scalar.h).
TEST(UnitRoundoff, DoubleDoubleIsAbout2ToMinus106) {
  const dd u = ref::unit_roundoff<dd>();
  record_unit_roundoff(u);
  const double ratio = ref::to_double(u) / std::ldexp(1.0, -106);
  EXPECT_GE(ratio, 0.25);
  EXPECT_LE(ratio, 4.0);
  // Measured once: the same value on every call.
  EXPECT_EQ(ref::unit_roundoff<dd>(), u);
}

TEST(UnitRoundoff, Float128Is2ToMinus113) {
  const f128 u = ref::unit_roundoff<f128>();
  record_unit_roundoff(u);
  EXPECT_EQ(u, ldexp(f128(1), -113));
  EXPECT_EQ(ref::ScalarTraits<f128>::mantissa_bits, 113);
}

TEST(UnitRoundoff, MpfrIs2ToMinusItsDigits) {
  const mpfr50 u50 = ref::unit_roundoff<mpfr50>();
  record_unit_roundoff(u50);
  const int p50 = std::numeric_limits<mpfr50>::digits;
  EXPECT_EQ(u50, ldexp(mpfr50(1), -p50));
  EXPECT_EQ(ref::ScalarTraits<mpfr50>::mantissa_bits, p50);
  EXPECT_GE(p50, 166);  // 50 decimal digits

  const mpfr80 u80 = ref::unit_roundoff<mpfr80>();
  record_unit_roundoff(u80);
  const int p80 = std::numeric_limits<mpfr80>::digits;
  EXPECT_EQ(u80, ldexp(mpfr80(1), -p80));
  EXPECT_GE(p80, 256);  // the "256-bit MPFR" of the oracle checks
}

// Doubles of every size and sign, including subnormals and the largest finite.
std::vector<double> sample_doubles() {
  std::mt19937_64 rng(2024);
  std::vector<double> xs = {0.0, -0.0, 1.0, -1.0, 0.1, 1.0 / 3.0, std::ldexp(1.0, -1074), std::ldexp(1.0, -1022),
                            std::numeric_limits<double>::max(), -std::numeric_limits<double>::max()};
  for (int i = 0; i < 200; ++i) {
    const double m = 1.0 + static_cast<double>(rng() >> 12) * 0x1.0p-52;
    const int e = static_cast<int>(rng() % 2000) - 1000;
    xs.push_back((rng() & 1 ? -1.0 : 1.0) * std::ldexp(m, e));
  }
  return xs;
}

// Every rung holds every double exactly.
template <class S>
void expect_double_round_trip() {
  for (const double x : sample_doubles()) {
    const S s = ref::from_double<S>(x);
    EXPECT_EQ(ref::to_double(s), x) << ref::ScalarTraits<S>::name << " " << x;
    EXPECT_EQ(convert<double>(s), x) << ref::ScalarTraits<S>::name << " " << x;
    EXPECT_EQ(convert<S>(x), s) << ref::ScalarTraits<S>::name << " " << x;
  }
}

TEST(Convert, DoubleRoundTripsThroughEveryRung) {
  expect_double_round_trip<dd>();
  expect_double_round_trip<f128>();
  expect_double_round_trip<mpfr50>();
  expect_double_round_trip<mpfr80>();
  expect_double_round_trip<rational>();
  for (const double x : sample_doubles()) {  // floats: exact for the doubles that are floats
    const float f = static_cast<float>(x);
    if (std::isfinite(f)) {
      EXPECT_EQ(convert<float>(convert<dd>(f)), f);
    }
  }
}

// Full-precision dd values (from arithmetic, so hi and lo both carry bits): the wider rungs and the
// rationals hold them exactly, and converting back returns the same pair.
TEST(Convert, DoubleDoubleRoundTripsThroughWiderRungs) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) {
    const dd a(static_cast<double>(rng() >> 11) + 1.0), b(static_cast<double>(rng() >> 20) + 3.0);
    const dd x = (i % 2 ? -a : a) / b;
    ASSERT_NE(x.x[1], 0.0);
    EXPECT_EQ(convert<dd>(convert<mpfr80>(x)), x);
    EXPECT_EQ(convert<dd>(convert<mpfr50>(x)), x);
    // float128 holds the pair when its bits span at most 113 (lo within 2^-60 of hi's exponent).
    if (std::ilogb(x.x[0]) - std::ilogb(x.x[1]) <= 60) {
      EXPECT_EQ(convert<dd>(convert<f128>(x)), x);
    }
    EXPECT_EQ(convert<dd>(convert<rational>(x)), x);
    EXPECT_EQ(convert<mpfr80>(x), mpfr80(x.x[0]) + mpfr80(x.x[1]));  // the exact sum hi + lo
  }
}

TEST(Convert, Float128AndMpfrRoundTripExactlyUpward) {
  for (int k = 1; k <= 50; ++k) {
    const f128 x = f128(k) / f128(3 * k + 1);
    EXPECT_EQ(convert<f128>(convert<mpfr80>(x)), x);
    EXPECT_EQ(convert<f128>(convert<rational>(x)), x);
    const mpfr50 y = mpfr50(k) / mpfr50(7 * k + 3);
    EXPECT_EQ(convert<mpfr50>(convert<mpfr80>(y)), y);
    EXPECT_EQ(convert<mpfr50>(convert<rational>(y)), y);
  }
}

// Downward conversions round: the error is within the target's unit roundoff (one rounding; the
// dd target rounds twice, hi then lo, within 2^-105).
TEST(Convert, DownwardConversionsRoundWithinTheTargetsUnitRoundoff) {
  for (int k = 1; k <= 50; ++k) {
    const rational r = rational(k) / rational(3 * k + 1);
    const mpfr80 m = convert<mpfr80>(r);
    const mpfr80 exact_m = mpfr80(k) / mpfr80(3 * k + 1);
    EXPECT_EQ(m, exact_m);  // both correctly rounded
    auto rel = [&](const mpfr80& got) { return mpfr80(abs(got - exact_m) / exact_m); };
    EXPECT_LE(rel(convert<mpfr80>(convert<dd>(r))), ldexp(mpfr80(1), -105));
    EXPECT_LE(rel(convert<mpfr80>(convert<f128>(m))), ldexp(mpfr80(1), -113));
    EXPECT_LE(rel(convert<mpfr80>(convert<mpfr50>(m))), ldexp(mpfr80(1), -std::numeric_limits<mpfr50>::digits));
    EXPECT_LE(rel(mpfr80(convert<double>(m))), ldexp(mpfr80(1), -53));
    EXPECT_LE(rel(mpfr80(convert<float>(m))), ldexp(mpfr80(1), -24) * (1 + ldexp(mpfr80(1), -28)));
  }
}

// The rational rung is exact: identities hold with residual exactly 0, doubles enter as dyadic
// rationals, and transcendental functions refuse rather than round.
TEST(Rational, ArithmeticIsExact) {
  EXPECT_EQ(rational(1) / 3 * 3, rational(1));
  rational telescoping = 0;  // Σ_{k=1}^{n} 1/(k(k+1)) = 1 − 1/(n+1)
  for (int k = 1; k <= 200; ++k) telescoping += rational(1) / (rational(k) * (k + 1));
  EXPECT_EQ(telescoping, rational(1) - rational(1, 201));
  // 0.1 as a double is 3602879701896397 / 2^55 exactly.
  EXPECT_EQ(ref::from_double<rational>(0.1), rational(3602879701896397LL) / rational(36028797018963968LL));
  EXPECT_NE(ref::from_double<rational>(0.1), rational(1, 10));
}

TEST(Rational, RandomIdentitiesHoldWithZeroResidual) {
  larc::proofs::RationalSource src(11);
  const auto a = src.matrix(4, 3), b = src.matrix(3, 5), c = src.matrix(5, 2);
  EXPECT_EQ(larc::proofs::max_abs(ref::Mat<rational>((a * b) * c - a * (b * c))), 0);
  EXPECT_EQ(larc::proofs::max_abs(ref::Mat<rational>((a * b).transpose() - b.transpose() * a.transpose())), 0);
  for (int d = 1; d <= 6; ++d) EXPECT_EQ(src.unit_vector(d).squaredNorm(), rational(1)) << "d=" << d;
}

TEST(Rational, TranscendentalFunctionsRefuse) {
  EXPECT_THROW(ref::exp_of(rational(1)), std::invalid_argument);
  EXPECT_THROW(ref::log_of(rational(1)), std::invalid_argument);
  EXPECT_THROW(ref::sqrt_of(rational(4)), std::invalid_argument);
}

}  // namespace
