// Per-head sequences and the scalar functions every family uses.
// A sequence is a T×d matrix: row t holds token t (0-indexed, as in the code of every paper).
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "larc/reference/eigen_traits.h"

namespace larc::ref {

template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
template <class S>
using Vec = Eigen::Matrix<S, Eigen::Dynamic, 1>;

// Result of running a sequence: outputs (T×d_v) and the state after the last token.
template <class S>
struct SeqResult {
  Mat<S> o;
  Mat<S> final_state;
};

// Scalar functions through argument-dependent lookup, so dd_real (global namespace), Boost numbers
// and builtin types all resolve. Exact rationals have none of them: calling one on a rational throws,
// so an exact check can never silently round through a transcendental function.
template <class S>
[[noreturn]] void no_transcendental(const char* fn) {
  throw std::invalid_argument(std::string(fn) + " is not exact: not available for " + ScalarTraits<S>::name);
}
template <class S>
S exp_of(const S& x) {
  if constexpr (ScalarTraits<S>::exact) no_transcendental<S>("exp");
  else { using std::exp; return exp(x); }
}
template <class S>
S log_of(const S& x) {
  if constexpr (ScalarTraits<S>::exact) no_transcendental<S>("log");
  else { using std::log; return log(x); }
}
template <class S>
S sqrt_of(const S& x) {
  if constexpr (ScalarTraits<S>::exact) no_transcendental<S>("sqrt");
  else { using std::sqrt; return sqrt(x); }
}

template <class S>
S elu_plus_one(const S& x) {  // φ(x) = ELU(x) + 1 (SPEC "Notation")
  const S one(1);
  return x > S(0) ? x + one : exp_of(x);
}

template <class S>
S sigmoid(const S& x) { const S one(1); return one / (one + exp_of(S(-x))); }

template <class S>
S softplus(const S& x) {  // log(1 + e^x), written to stay finite for large |x|
  const S one(1);
  return x > S(0) ? x + log_of(S(one + exp_of(S(-x)))) : log_of(S(one + exp_of(x)));
}

template <class S>
S squared_norm(const Vec<S>& x) { return x.squaredNorm(); }

template <class S>
Vec<S> normalized(const Vec<S>& x) { return x / sqrt_of(S(x.squaredNorm())); }

// Frobenius norm written by hand: Boost 1.74's Eigen traits break blueNorm/stableNorm.
template <class S, class Derived>
S frobenius_norm(const Eigen::MatrixBase<Derived>& m) { return sqrt_of(S(m.squaredNorm())); }

template <class To, class From>
Mat<To> cast_matrix(const Mat<From>& m) {
  return m.unaryExpr([](const From& x) { return convert<To>(x); });
}
template <class To, class From>
Vec<To> cast_vector(const Vec<From>& m) {
  return m.unaryExpr([](const From& x) { return convert<To>(x); });
}

}  // namespace larc::ref
