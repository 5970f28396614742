// The λ parameterisations of log-linear attention (SPEC §4): λ_t^{(ℓ)} scales level ℓ of the read at
// query time t and is computed per token (and per head; one head here) from a per-level input dl_t.
//
//   baseline      λ_t^{(ℓ)} = softplus(L_ℓ · dl_{t,ℓ}),  L initialised to 1 (FLA's LogLinearMamba2);
//   MLP-softplus  λ_t = softplus(W2 GELU(W1 dl_t + b1) + b2), hidden size h (default 64), initialised
//                 W2 = 0, b2 = 0.54, W1 Xavier-uniform from a seed, b1 = 0 (the paper);
//   MLP-softmax   λ_t = softmax_ℓ(W2 GELU(W1 dl_t + b1) + b2), initialised W2 = 0, b2 = 0.
//
// dl is a T×L matrix (row t = dl_t); every parameterisation returns λ as a T×L matrix, the layout
// log_linear::Problem::lambda takes. GELU is the exact one, x Φ(x) = x (1 + erf(x/√2)) / 2.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "larc/reference/op_count.h"
#include "larc/reference/types.h"

namespace larc::ref::log_linear {

template <class S>
S erf_of(const S& x) {
  if constexpr (ScalarTraits<S>::exact) no_transcendental<S>("erf");
  else if constexpr (std::is_arithmetic_v<S>) return std::erf(x);
  else if constexpr (std::is_same_v<S, CountedDouble>) {
    ++CountedDouble::ops;
    return std::erf(x.v);
  } else if constexpr (std::is_same_v<S, dd>) {  // libqd has no erf: take it at 166 bits and round once
    return convert<dd>(mpfr50(erf(convert<mpfr50>(x))));
  } else {
    using boost::multiprecision::erf;
    return erf(x);
  }
}

template <class S>
S gelu(const S& x) {
  const S half = from_double<S>(0.5);
  return half * x * (S(1) + erf_of(S(x / sqrt_of(from_double<S>(2.0)))));
}

// Baseline: λ(t, ℓ) = softplus(L_ℓ dl(t, ℓ)).
template <class S>
Mat<S> baseline_lambda(const Mat<S>& dl, const Vec<std::type_identity_t<S>>& level_weights) {
  if (level_weights.size() != dl.cols())
    throw std::invalid_argument("baseline_lambda: level_weights (L) must have one entry per column of dl (" +
                                std::to_string(dl.cols()) + "), got " + std::to_string(level_weights.size()));
  Mat<S> lambda(dl.rows(), dl.cols());
  for (Eigen::Index t = 0; t < dl.rows(); ++t)
    for (Eigen::Index l = 0; l < dl.cols(); ++l) lambda(t, l) = softplus(S(level_weights(l) * dl(t, l)));
  return lambda;
}

enum class LambdaActivation { softplus, softmax };

template <class S>
struct LambdaMlp {
  LambdaActivation activation = LambdaActivation::softplus;
  Mat<S> w1;  // h×L
  Vec<S> b1;  // h
  Mat<S> w2;  // L×h
  Vec<S> b2;  // L

  Eigen::Index levels() const { return w1.cols(); }
  Eigen::Index hidden() const { return w1.rows(); }

  // λ_t for one token: the pre-activation z = W2 GELU(W1 dl_t + b1) + b2, then softplus or softmax over ℓ.
  Vec<S> operator()(const Vec<S>& dl) const {
    if (dl.size() != levels())
      throw std::invalid_argument("LambdaMlp: dl must have " + std::to_string(levels()) + " entries (one per level), got " +
                                  std::to_string(dl.size()));
    const Vec<S> h = (w1 * dl + b1).unaryExpr([](const S& x) { return gelu(x); });
    const Vec<S> z = w2 * h + b2;
    if (activation == LambdaActivation::softplus) return z.unaryExpr([](const S& x) { return softplus(x); });
    const S top = z.maxCoeff();
    const Vec<S> e = z.unaryExpr([&](const S& x) { return exp_of(S(x - top)); });
    return e / e.sum();
  }

  // Row t of the result is λ_t for row t of dl.
  Mat<S> apply(const Mat<S>& dl) const {
    Mat<S> lambda(dl.rows(), levels());
    for (Eigen::Index t = 0; t < dl.rows(); ++t) lambda.row(t) = (*this)(dl.row(t).transpose()).transpose();
    return lambda;
  }
};

// W1, b1, W2, b2 of an L-level MLP with hidden size h: 2Lh + h + L.
inline std::int64_t lambda_mlp_parameter_count(std::int64_t levels, std::int64_t hidden) {
  return 2 * levels * hidden + hidden + levels;
}

// The initialisation (SPEC §4): W1 Xavier-uniform, U(±√(6/(L + h))), drawn from the seed with
// mt19937_64 and a fixed transform (portable); b1 = 0; W2 = 0; b2 = b2_init.
template <class S>
LambdaMlp<S> lambda_mlp_init(LambdaActivation activation, Eigen::Index levels, Eigen::Index hidden, std::uint64_t seed,
                             double b2_init) {
  if (levels < 1 || hidden < 1) throw std::invalid_argument("lambda_mlp_init: levels and hidden must be >= 1");
  std::mt19937_64 eng(seed);
  const double bound = std::sqrt(6.0 / double(levels + hidden));
  LambdaMlp<S> m;
  m.activation = activation;
  m.w1.resize(hidden, levels);
  for (Eigen::Index i = 0; i < m.w1.size(); ++i) {
    const double u = static_cast<double>(eng() >> 11) * 0x1.0p-53;  // [0, 1)
    m.w1(i) = from_double<S>((2 * u - 1) * bound);
  }
  m.b1 = Vec<S>::Zero(hidden);
  m.w2 = Mat<S>::Zero(levels, hidden);
  m.b2 = Vec<S>::Constant(levels, from_double<S>(b2_init));
  return m;
}

// MLP-softplus as the paper initialises it: b2 = 0.54 ("softplus(0.54) ≈ 1").
template <class S>
LambdaMlp<S> mlp_softplus_init(Eigen::Index levels, Eigen::Index hidden = 64, std::uint64_t seed = 0) {
  return lambda_mlp_init<S>(LambdaActivation::softplus, levels, hidden, seed, 0.54);
}

// MLP-softmax: b2 = 0, so every level gets 1/L at initialisation.
template <class S>
LambdaMlp<S> mlp_softmax_init(Eigen::Index levels, Eigen::Index hidden = 64, std::uint64_t seed = 0) {
  return lambda_mlp_init<S>(LambdaActivation::softmax, levels, hidden, seed, 0.0);
}

}  // namespace larc::ref::log_linear
