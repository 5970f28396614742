// FLA's l2norm front end of q and k (use_qk_l2norm_in_kernel) written the ways a test kernel needs it:
// the reference's row normalisation and its chain rule over [B,T,H,K] tensors in double, with the
// normalised span and ε as parameters (so a planted defect is a wrong argument, not new arithmetic),
// and the chain rule without its projection term.
#pragma once

#include <cmath>

#include "larc/reference/delta_rule_fla_front_ends.h"
#include "larc/reference/tensor.h"

namespace larc_test::qk_l2norm {

namespace ref = larc::ref;

inline constexpr double kEps = 1e-6;  // FLA's l2norm ε

using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// x [B,T,H,K] with every `span` consecutive entries (K: one token of one head; H·K: a token's heads
// together) normalised as one row by the reference's l2 normalisation with `eps`.
inline void normalize(ref::Tensor<double>& x, std::int64_t span, double eps = kEps) {
  Eigen::Map<RowMajor> rows(x.data.data(), static_cast<Eigen::Index>(x.data.size()) / span, span);
  rows = ref::delta_rule::l2_normalized_rows<double>(rows, eps);
}

// dx [B,T,H,K] = ∂L/∂x̂ in, ∂L/∂x of raw x out: the reference's chain rule per token and head.
inline void chain_rule(const ref::Tensor<double>& x, ref::Tensor<double>& dx) {
  const std::int64_t K = x.dim(3);
  ref::Tensor<double> raw = x;
  Eigen::Map<RowMajor> rows(raw.data.data(), static_cast<Eigen::Index>(raw.data.size()) / K, K);
  Eigen::Map<RowMajor> d(dx.data.data(), rows.rows(), K);
  d = ref::delta_rule::l2_normalized_rows_backward<double>(rows, d, kEps);
}

// The same without the projection term −x (x·dx̂) / n³: dx = dx̂ / n, n = √(‖x‖² + ε).
inline void chain_rule_without_projection(const ref::Tensor<double>& x, ref::Tensor<double>& dx) {
  const auto K = static_cast<std::size_t>(x.dim(3));
  for (std::size_t r = 0; r < x.data.size(); r += K) {
    double n2 = kEps;
    for (std::size_t i = r; i < r + K; ++i) n2 += x.data[i] * x.data[i];
    for (std::size_t i = r; i < r + K; ++i) dx.data[i] /= std::sqrt(n2);
  }
}

}  // namespace larc_test::qk_l2norm
