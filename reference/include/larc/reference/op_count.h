// A scalar that counts its arithmetic: running a reference form on CountedDouble gives the exact
// number of floating-point operations it performs, so cost claims (KLA-C6, HLA-C3, LL-C2) get a
// deterministic measurement beside wall-clock timings. Values are computed in double as usual.
#pragma once

#include <cmath>
#include <cstdint>

#include "larc/reference/scalar.h"

namespace larc::ref {

struct CountedDouble {
  double v = 0;
  static inline thread_local std::uint64_t ops = 0;  // +, −, ×, ÷, sqrt, exp, log performed

  CountedDouble() = default;
  CountedDouble(double x) : v(x) {}  // NOLINT: implicit like a builtin scalar

  friend CountedDouble operator+(CountedDouble a, CountedDouble b) { ++ops; return a.v + b.v; }
  friend CountedDouble operator-(CountedDouble a, CountedDouble b) { ++ops; return a.v - b.v; }
  friend CountedDouble operator*(CountedDouble a, CountedDouble b) { ++ops; return a.v * b.v; }
  friend CountedDouble operator/(CountedDouble a, CountedDouble b) { ++ops; return a.v / b.v; }
  CountedDouble operator-() const { return -v; }
  CountedDouble& operator+=(CountedDouble b) { return *this = *this + b; }
  CountedDouble& operator-=(CountedDouble b) { return *this = *this - b; }
  CountedDouble& operator*=(CountedDouble b) { return *this = *this * b; }
  CountedDouble& operator/=(CountedDouble b) { return *this = *this / b; }
  friend bool operator==(CountedDouble a, CountedDouble b) { return a.v == b.v; }
  friend auto operator<=>(CountedDouble a, CountedDouble b) { return a.v <=> b.v; }

  friend CountedDouble sqrt(CountedDouble a) { ++ops; return std::sqrt(a.v); }
  friend CountedDouble exp(CountedDouble a) { ++ops; return std::exp(a.v); }
  friend CountedDouble log(CountedDouble a) { ++ops; return std::log(a.v); }
  friend CountedDouble abs(CountedDouble a) { return std::abs(a.v); }
  friend bool isfinite(CountedDouble a) { return std::isfinite(a.v); }
};

template <>
struct ScalarTraits<CountedDouble> {
  static constexpr const char* name = "counted_double";
  static constexpr int mantissa_bits = 53;
  static constexpr bool exact = false;
  static CountedDouble from_double(double x) { return x; }
  static double to_double(CountedDouble x) { return x.v; }
};

// Operations performed by f() on CountedDouble (f runs on this thread).
template <class F>
std::uint64_t count_ops(F&& f) {
  const std::uint64_t before = CountedDouble::ops;
  f();
  return CountedDouble::ops - before;
}

}  // namespace larc::ref

namespace Eigen {
template <>
struct NumTraits<larc::ref::CountedDouble> : GenericNumTraits<larc::ref::CountedDouble> {
  using Real = larc::ref::CountedDouble;
  using NonInteger = larc::ref::CountedDouble;
  using Literal = larc::ref::CountedDouble;
  using Nested = larc::ref::CountedDouble;
  enum { IsComplex = 0, IsInteger = 0, IsSigned = 1, RequireInitialization = 1, ReadCost = 1, AddCost = 1, MulCost = 1 };
  static Real epsilon() { return std::numeric_limits<double>::epsilon(); }
  static Real dummy_precision() { return 1e-12; }
  static Real highest() { return std::numeric_limits<double>::max(); }
  static Real lowest() { return -std::numeric_limits<double>::max(); }
  static int digits10() { return 15; }
};
}  // namespace Eigen
