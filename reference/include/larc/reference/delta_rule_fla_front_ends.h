// FLA's in-kernel front ends of the delta-rule family and their chain rules (docs/gradients.md,
// "Front ends"): what FLA's kernels compute from raw parameters before the recurrence, and how
// backward's gradients (delta_rule_backward.h) map back to those parameters. Per head:
//   l2norm:  x̂_t = x_t / n_t, n_t = √(‖x_t‖² + ε)               (use_qk_l2norm_in_kernel, ε = 1e-6)
//   gate:    g_t = −e^{A_log} softplus(x_t + b)                  (use_gate_in_kernel; A_log, b per head)
//   step:    β_t = c σ(z_t), c = 1, or c = 2 (allow_neg_eigval)
// They use exp/log/sqrt, so they run on every rung but the exact one.
#pragma once

#include "larc/reference/types.h"

namespace larc::ref::delta_rule {

// Row-wise l2 normalisation x̂_t = x_t / √(‖x_t‖² + ε).
template <class S>
Mat<S> l2_normalized_rows(const Mat<S>& x, const S& eps) {
  Mat<S> r(x.rows(), x.cols());
  for (Eigen::Index t = 0; t < x.rows(); ++t) r.row(t) = x.row(t) / sqrt_of(S(x.row(t).squaredNorm() + eps));
  return r;
}

// dx_t = dx̂_t / n_t − x_t (x_t·dx̂_t) / n_t³.
template <class S>
Mat<S> l2_normalized_rows_backward(const Mat<S>& x, const Mat<S>& d_normalized, const S& eps) {
  Mat<S> dx(x.rows(), x.cols());
  for (Eigen::Index t = 0; t < x.rows(); ++t) {
    const S n = sqrt_of(S(x.row(t).squaredNorm() + eps));
    dx.row(t) = d_normalized.row(t) / n - (S(x.row(t).dot(d_normalized.row(t))) / (n * n * n)) * x.row(t);
  }
  return dx;
}

// The gate's log-decays g_t = −e^{A_log} softplus(x_t + b).
template <class S>
Vec<S> gate_log_decays(const S& a_log, const Vec<S>& x, const S& bias) {
  const S a = exp_of(a_log);
  return x.unaryExpr([&](const S& xt) { return S(-a * softplus(S(xt + bias))); });
}

template <class S>
struct GateGradients {
  S d_a_log;
  Vec<S> dx;
  S d_bias;
};

// dx_t = −e^{A_log} σ(x_t + b) dg_t,  db = Σ_t dx_t,  dA_log = Σ_t g_t dg_t (∂g_t/∂A_log = g_t).
template <class S>
GateGradients<S> gate_log_decays_backward(const S& a_log, const Vec<S>& x, const S& bias, const Vec<S>& dg) {
  const S a = exp_of(a_log);
  const Vec<S> g = gate_log_decays(a_log, x, bias);
  GateGradients<S> r{S(g.dot(dg)), Vec<S>(x.size()), S(0)};
  for (Eigen::Index t = 0; t < x.size(); ++t) r.dx(t) = -a * sigmoid(S(x(t) + bias)) * dg(t);
  r.d_bias = r.dx.sum();
  return r;
}

// β_t = c σ(z_t).
template <class S>
Vec<S> sigmoid_steps(const Vec<S>& z, const S& c) {
  return z.unaryExpr([&](const S& zt) { return S(c * sigmoid(zt)); });
}

// dz_t = dβ_t c σ(z_t)(1 − σ(z_t)) = dβ_t β_t (1 − σ(z_t)).
template <class S>
Vec<S> sigmoid_steps_backward(const Vec<S>& z, const S& c, const Vec<S>& dbeta) {
  Vec<S> dz(z.size());
  for (Eigen::Index t = 0; t < z.size(); ++t) {
    const S s = sigmoid(z(t));
    dz(t) = dbeta(t) * c * s * (S(1) - s);
  }
  return dz;
}

}  // namespace larc::ref::delta_rule
