// The precision ladder (DESIGN.md "Precision ladder"): every reference form is templated on one of
// these scalars. ScalarTraits gives each rung a name, its mantissa bits and exact conversions to and
// from double, so generic code never needs to know which rung it runs on.
#pragma once

#include <boost/multiprecision/float128.hpp>
#include <boost/multiprecision/gmp.hpp>
#include <boost/multiprecision/mpfr.hpp>
// Built with FMA (CMake's LARC_FMA, which defines LARC_HOST_FMA and hides the target macros from Eigen),
// qd's two_prod — the exact product a·b = p + e under every dd multiplication — takes e from one fused
// multiply-subtract instead of Dekker's split: the same exact e, so the same dd bits, in two
// instructions instead of about seventeen.
#if defined(LARC_HOST_FMA) && !defined(QD_FMS)
#define QD_FMS(a, b, c) __builtin_fma((a), (b), -(c))
#endif
#include <qd/dd_real.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "larc/common/splitmix.h"

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

// Unit roundoff 2^-mantissa_bits, measured rather than assumed in the tests: the largest power of two
// u with 1 + u == 1 (ties to even), i.e. the bound on the relative error of one operation.
template <class S>
S unit_roundoff() {
  static_assert(!ScalarTraits<S>::exact, "exact scalars have no roundoff");
  S u = from_double<S>(1.0);
  const S one = from_double<S>(1.0);
  const S half = from_double<S>(0.5);
  while (one + u * half != one) u *= half;
  return u * half;
}

namespace detail {
// dd_real is not a fixed-precision format: 1 + 2^-1000 is held exactly as the pair (1, 2^-1000), so
// the loop above would run down to the underflow and return 0. dd's unit roundoff is measured instead
// as the largest relative error of the two operations dot and matrix products are made of, on 1024
// fixed pseudo-random pairs of full-precision operands (random signs, exponents in [-32, 32)),
// against 267-bit MPFR: a·b relative to |a·b|, and a + b relative to |a| + |b| (qd's default
// "sloppy" addition has no bound relative to |a + b| under cancellation). The result is about
// 2.2·2^-106. Rigorous bounds are a few times larger (Joldes, Muller, Popescu 2017), and qd's
// division is worse (≈5·2^-106 seen); code that divides in a loop must carry its own factor.
inline dd measure_dd_unit_roundoff() {
  std::uint64_t state = 0x6c61726364640001ull;  // splitmix64, so the operands are fixed everywhere
  auto next = [&state] { return splitmix::next(state); };
  auto unit = [&next] { return static_cast<double>(next() >> 11) * 0x1.0p-53; };  // [0, 1)
  auto operand = [&] {  // hi in ±[1, 2)·2^e, lo a full-width tail below half an ulp of hi
    const int e = static_cast<int>(next() % 64) - 32;
    const double hi = std::ldexp((next() & 1 ? -1.0 : 1.0) * (1.0 + unit()), e);
    const double lo = std::ldexp((unit() - 0.5) * 0x1.0p-52, e);
    return dd(hi) + dd(lo);
  };
  using wide = mpfr<80>;
  auto exact = [](const dd& x) { return wide(x.x[0]) + wide(x.x[1]); };
  wide worst = 0;
  for (int i = 0; i < 1024; ++i) {
    const dd a = operand(), b = operand();
    const wide wa = exact(a), wb = exact(b);
    worst = (std::max)(worst, wide(abs(exact(a * b) - wa * wb) / abs(wa * wb)));
    worst = (std::max)(worst, wide(abs(exact(a + b) - (wa + wb)) / (abs(wa) + abs(wb))));
  }
  const double hi = worst.convert_to<double>();
  return dd(hi) + dd(wide(worst - hi).convert_to<double>());
}
}  // namespace detail

template <>
inline dd unit_roundoff<dd>() {
  static const dd u = detail::measure_dd_unit_roundoff();
  return u;
}

}  // namespace larc::ref
