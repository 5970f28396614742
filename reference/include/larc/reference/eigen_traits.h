// The Eigen NumTraits the precision ladder needs, in one place (DESIGN.md): dd_real has none, and
// Boost 1.74's generic traits for multiprecision numbers return the wrong lowest() (it returns the
// smallest positive number). Include this header instead of <Eigen/Dense> in reference code.
#pragma once

#include <Eigen/Dense>
#include <boost/multiprecision/eigen.hpp>

#include "larc/reference/scalar.h"

namespace Eigen {

template <>
struct NumTraits<dd_real> : GenericNumTraits<dd_real> {
  using Real = dd_real;
  using NonInteger = dd_real;
  using Literal = dd_real;
  using Nested = dd_real;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    ReadCost = 2,
    AddCost = 20,
    MulCost = 25,
  };
  static dd_real epsilon() { return dd_real::_eps; }
  static dd_real dummy_precision() { return dd_real(1e-28); }
  static dd_real highest() { return dd_real::_max; }
  static dd_real lowest() { return -dd_real::_max; }
  static int digits10() { return 31; }
  static int digits() { return 106; }
};

}  // namespace Eigen

namespace larc::ref {

// lowest() for Boost numbers, since Eigen's traits from Boost 1.74 get it wrong.
template <class S>
S lowest_value() {
  if constexpr (std::is_same_v<S, dd_real>) return -dd_real::_max;
  else return -(std::numeric_limits<S>::max)();
}

}  // namespace larc::ref
