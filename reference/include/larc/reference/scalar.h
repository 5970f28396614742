// The precision ladder (DESIGN.md "Precision ladder"): every reference form is templated on one of
// these scalars. ScalarTraits gives each rung a name, its mantissa bits and exact conversions to and
// from double, so generic code never needs to know which rung it runs on.
#pragma once

#include <boost/multiprecision/float128.hpp>
#include <boost/multiprecision/gmp.hpp>
#include <boost/multiprecision/mpfr.hpp>
#include <qd/dd_real.h>

#include <cmath>
#include <limits>
#include <string>

namespace larc::ref {

namespace bmp = boost::multiprecision;

using dd = dd_real;                                    // ~106 bits, the default oracle
using f128 = bmp::float128;                            // 113 bits, cross-check of the oracle
template <unsigned Digits10>
using mpfr = bmp::number<bmp::mpfr_float_backend<Digits10>, bmp::et_off>;  // any precision
using mpfr50 = mpfr<50>;                               // ~166 bits
using mpfr80 = mpfr<80>;                               // ~266 bits, "256-bit MPFR" of the tests
using rational = bmp::number<bmp::gmp_rational, bmp::et_off>;  // exact

template <class S>
struct ScalarTraits;

template <>
struct ScalarTraits<float> {
  static constexpr const char* name = "float";
  static constexpr int mantissa_bits = 24;
  static constexpr bool exact = false;
  static float from_double(double x) { return static_cast<float>(x); }
  static double to_double(float x) { return x; }
};

template <>
struct ScalarTraits<double> {
  static constexpr const char* name = "double";
  static constexpr int mantissa_bits = 53;
  static constexpr bool exact = false;
  static double from_double(double x) { return x; }
  static double to_double(double x) { return x; }
};

template <>
struct ScalarTraits<dd> {
  static constexpr const char* name = "dd_real";
  static constexpr int mantissa_bits = 106;
  static constexpr bool exact = false;
  static dd from_double(double x) { return dd(x); }
  static double to_double(const dd& x) { return ::to_double(x); }
};

template <>
struct ScalarTraits<f128> {
  static constexpr const char* name = "float128";
  static constexpr int mantissa_bits = 113;
  static constexpr bool exact = false;
  static f128 from_double(double x) { return f128(x); }
  static double to_double(const f128& x) { return x.convert_to<double>(); }
};

template <unsigned D>
struct ScalarTraits<mpfr<D>> {
  static inline const std::string name_str = "mpfr" + std::to_string(D);
  static inline const char* name = name_str.c_str();
  static constexpr int mantissa_bits = std::numeric_limits<mpfr<D>>::digits;
  static constexpr bool exact = false;
  static mpfr<D> from_double(double x) { return mpfr<D>(x); }
  static double to_double(const mpfr<D>& x) { return x.template convert_to<double>(); }
};

template <>
struct ScalarTraits<rational> {
  static constexpr const char* name = "rational";
  static constexpr int mantissa_bits = std::numeric_limits<int>::max();
  static constexpr bool exact = true;
  static rational from_double(double x) { return rational(x); }  // exact: a double is a dyadic rational
  static double to_double(const rational& x) { return x.convert_to<double>(); }
};

template <class S>
double to_double(const S& x) { return ScalarTraits<S>::to_double(x); }

template <class S>
S from_double(double x) { return ScalarTraits<S>::from_double(x); }

// Convert between two rungs through the wider one's exact path where it matters: every rung holds
// a double exactly, so going through double is exact only when the source is a double rung. For
// rationals and MPFR we go through the MPFR string-free conversion boost provides.
template <class To, class From>
To convert(const From& x) {
  if constexpr (std::is_same_v<To, From>) {
    return x;
  } else if constexpr (std::is_same_v<From, dd>) {
    // dd = hi + lo exactly; both parts are doubles.
    return from_double<To>(x.x[0]) + from_double<To>(x.x[1]);
  } else if constexpr (std::is_same_v<To, dd>) {
    const double hi = to_double(x);
    const double lo = to_double(From(x - from_double<From>(hi)));
    return dd(hi) + dd(lo);
  } else if constexpr (std::is_arithmetic_v<From>) {
    return from_double<To>(static_cast<double>(x));
  } else if constexpr (std::is_arithmetic_v<To>) {
    return static_cast<To>(to_double(x));
  } else {
    return x.template convert_to<To>();
  }
}

// Unit roundoff 2^-mantissa_bits, measured rather than assumed in the tests.
template <class S>
S unit_roundoff() {
  static_assert(!ScalarTraits<S>::exact, "exact scalars have no roundoff");
  S u = from_double<S>(1.0);
  const S one = from_double<S>(1.0);
  const S half = from_double<S>(0.5);
  while (one + u * half != one) u *= half;
  return u * half;
}

}  // namespace larc::ref
