// Forward-mode dual numbers x + ẋ ε (ε² = 0) over a rung of the precision ladder. Running a form on
// Dual<S> inputs whose tangents hold a direction δ gives the outputs and their directional
// derivative J·δ in one pass, exactly when S is exact. The adjoint's self-checks compare it with the
// adjoint's Jᵀ (docs/gradients.md, "How the adjoint is checked"). Arithmetic only: no exp/log/sqrt.
#pragma once

#include <string>
#include <type_traits>

#include "larc/reference/eigen_traits.h"

namespace larc::ref {

template <class S>
struct Dual {
  S value = S(0);
  S tangent = S(0);

  Dual() = default;
  Dual(const S& v, const S& d = S(0)) : value(v), tangent(d) {}  // NOLINT: implicit, like a real number
  template <class A>
    requires(std::is_arithmetic_v<A> && !std::is_same_v<A, S>)
  Dual(A x) : value(from_double<S>(static_cast<double>(x))) {}  // NOLINT: Eigen writes Scalar(0), Scalar(1)

  friend Dual operator+(const Dual& a, const Dual& b) { return {a.value + b.value, a.tangent + b.tangent}; }
  friend Dual operator-(const Dual& a, const Dual& b) { return {a.value - b.value, a.tangent - b.tangent}; }
  friend Dual operator*(const Dual& a, const Dual& b) {
    return {a.value * b.value, a.value * b.tangent + a.tangent * b.value};
  }
  friend Dual operator/(const Dual& a, const Dual& b) {
    const S v = a.value / b.value;
    return {v, (a.tangent - v * b.tangent) / b.value};
  }
  friend Dual operator-(const Dual& a) { return {-a.value, -a.tangent}; }
  Dual& operator+=(const Dual& b) { return *this = *this + b; }
  Dual& operator-=(const Dual& b) { return *this = *this - b; }
  Dual& operator*=(const Dual& b) { return *this = *this * b; }
  Dual& operator/=(const Dual& b) { return *this = *this / b; }

  // Comparisons look at the value only, so branches follow the primal computation.
  friend bool operator==(const Dual& a, const Dual& b) { return a.value == b.value; }
  friend bool operator<(const Dual& a, const Dual& b) { return a.value < b.value; }
  friend bool operator>(const Dual& a, const Dual& b) { return b < a; }
  friend bool operator<=(const Dual& a, const Dual& b) { return !(b < a); }
  friend bool operator>=(const Dual& a, const Dual& b) { return !(a < b); }
};

template <class S>
struct ScalarTraits<Dual<S>> {
  static inline const std::string name_str = std::string("dual<") + ScalarTraits<S>::name + ">";
  static inline const char* name = name_str.c_str();
  static constexpr int mantissa_bits = ScalarTraits<S>::mantissa_bits;
  static constexpr bool exact = ScalarTraits<S>::exact;
  static Dual<S> from_double(double x) { return Dual<S>(ScalarTraits<S>::from_double(x)); }
  static double to_double(const Dual<S>& x) { return ScalarTraits<S>::to_double(x.value); }
};

// The value and tangent parts of a matrix or vector of duals, and x + δ ε entry by entry.
template <class S, int R, int C, int O, int MR, int MC>
Eigen::Matrix<S, R, C, O, MR, MC> values_of(const Eigen::Matrix<Dual<S>, R, C, O, MR, MC>& m) {
  return m.unaryExpr([](const Dual<S>& x) { return x.value; });
}
template <class S, int R, int C, int O, int MR, int MC>
Eigen::Matrix<S, R, C, O, MR, MC> tangents_of(const Eigen::Matrix<Dual<S>, R, C, O, MR, MC>& m) {
  return m.unaryExpr([](const Dual<S>& x) { return x.tangent; });
}
template <class S, int R, int C, int O, int MR, int MC>
Eigen::Matrix<Dual<S>, R, C, O, MR, MC> with_tangent(const Eigen::Matrix<S, R, C, O, MR, MC>& x,
                                                     const Eigen::Matrix<S, R, C, O, MR, MC>& delta) {
  return x.binaryExpr(delta, [](const S& a, const S& d) { return Dual<S>(a, d); });
}

}  // namespace larc::ref

namespace Eigen {

template <class S>
struct NumTraits<larc::ref::Dual<S>> : GenericNumTraits<larc::ref::Dual<S>> {
  using Real = larc::ref::Dual<S>;
  using NonInteger = larc::ref::Dual<S>;
  using Literal = larc::ref::Dual<S>;
  using Nested = larc::ref::Dual<S>;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    ReadCost = 2 * NumTraits<S>::ReadCost,
    AddCost = 2 * NumTraits<S>::AddCost,
    MulCost = 3 * NumTraits<S>::MulCost + NumTraits<S>::AddCost,
  };
};

}  // namespace Eigen
