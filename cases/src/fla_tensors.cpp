#include "larc/cases/fla_tensors.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "larc/cases/regimes.h"

namespace larc::cases {

void in_order(std::size_t n, std::size_t run, const std::function<void(std::size_t, std::size_t)>& fn) {
  for (std::size_t begin = 0; begin < n; begin += run) fn(begin, std::min(n, begin + run));
}

namespace {
constexpr std::size_t kValuesPerRun = std::size_t{1} << 16;
}  // namespace

ref::Tensor<double> entries_tensor(Rng& rng, std::vector<std::int64_t> shape, double sigma, Entries kind,
                                   const Runs& runs) {
  ref::Tensor<double> t(std::move(shape));
  if (kind == Entries::heavy_tailed)  // t(3) draws a variable number of values: in order
    for (double& x : t.data) x = sigma * student_t3(rng) / std::sqrt(3.0);
  else
    draw_in_runs(rng, t.data.size(), kValuesPerRun, 2, runs, [&](Rng& r, std::size_t i) { t.data[i] = sigma * r.normal(); });
  return t;
}

void scale_rows_to_log_uniform_norms(Rng& rng, ref::Tensor<double>& x, double lo, double hi) {
  const std::size_t K = static_cast<std::size_t>(x.shape.back());
  for (std::size_t r = 0; r < x.data.size(); r += K) {
    double n2 = 0;
    for (std::size_t d = r; d < r + K; ++d) n2 += x.data[d] * x.data[d];
    const double norm = rng.log_uniform(std::min(lo, hi), std::max(lo, hi));
    if (n2 == 0) continue;
    for (std::size_t d = r; d < r + K; ++d) x.data[d] *= norm / std::sqrt(n2);
  }
}

ref::Tensor<double> normal_tensor(Rng& rng, std::vector<std::int64_t> shape, double sigma, const Runs& runs) {
  return entries_tensor(rng, std::move(shape), sigma, Entries::gaussian, runs);
}

ref::Tensor<double> uniform_tensor(Rng& rng, std::vector<std::int64_t> shape, double lo, double hi, const Runs& runs) {
  ref::Tensor<double> t(std::move(shape));
  draw_in_runs(rng, t.data.size(), kValuesPerRun, 1, runs, [&](Rng& r, std::size_t i) { t.data[i] = r.uniform(lo, hi); });
  return t;
}

namespace {
std::vector<double> random_unit(Rng& rng, std::int64_t d) {
  std::vector<double> u(static_cast<std::size_t>(d));
  double n2 = 0;
  while (n2 == 0) {
    n2 = 0;
    for (double& x : u) {
      x = rng.normal();
      n2 += x * x;
    }
  }
  for (double& x : u) x /= std::sqrt(n2);
  return u;
}

// The T keys of one (sequence, head) as rows, of norm `norm`.
Mat<double> head_keys(Rng& rng, std::int64_t T, std::int64_t K, KeySet set, double collinearity, double norm) {
  if (set == KeySet::orthonormal) return norm * keys(rng, KeyKind::orthonormal, T, K);
  if (set == KeySet::heavy_tailed) {
    Mat<double> m = keys(rng, KeyKind::heavy_tailed, T, K);
    for (Eigen::Index t = 0; t < m.rows(); ++t) {
      const double n = m.row(t).norm();
      if (n == 0) m.row(t) = unit_rows(rng, 1, K);  // measure zero: never divide by it
      else m.row(t) /= n;
    }
    return norm * m;
  }
  const std::vector<double> u = random_unit(rng, K);
  Mat<double> m(T, K);
  for (std::int64_t t = 0; t < T; ++t) {
    std::vector<double> z = random_unit(rng, K);
    double n2 = 0;
    for (std::int64_t d = 0; d < K; ++d) {
      z[d] = (1 - collinearity) * z[d] + collinearity * u[d];
      n2 += z[d] * z[d];
    }
    if (n2 == 0) z = u, n2 = 1;  // z = −u at c = 1/2: measure zero, never divide by it
    for (std::int64_t d = 0; d < K; ++d) m(t, d) = norm * z[d] / std::sqrt(n2);
  }
  return m;
}
}  // namespace

ref::Tensor<double> keys_tensor(Rng& rng, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t K, KeySet set,
                                double collinearity, double norm, const Runs& runs) {
  ref::Tensor<double> k({B, T, H, K});
  // Head j = b·H + h, in that order.
  const auto draw_head = [&](Rng& r, std::size_t j) {
    const std::int64_t b = static_cast<std::int64_t>(j) / H, h = static_cast<std::int64_t>(j) % H;
    const Mat<double> rows = head_keys(r, T, K, set, collinearity, norm);
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t d = 0; d < K; ++d) k.data[((b * T + t) * H + h) * K + d] = rows(t, d);
  };
  const std::size_t heads = static_cast<std::size_t>(B * H);
  if (set == KeySet::collinear)  // T + 1 random unit vectors of K Gaussian values a head
    draw_in_runs(rng, heads, 1, 2 * static_cast<std::uint64_t>(K) * static_cast<std::uint64_t>(T + 1), runs, draw_head);
  else
    for (std::size_t j = 0; j < heads; ++j) draw_head(rng, j);
  return k;
}

void apply_decay_regimes(Rng& rng, ref::Tensor<double>& g, double hard_fraction, double zero_fraction) {
  if (hard_fraction <= 0 && zero_fraction <= 0) return;
  for (double& x : g.data) {
    const double u = rng.uniform();
    if (u < hard_fraction) x = -std::numeric_limits<double>::infinity();
    else if (u < hard_fraction + zero_fraction) x = 0;
  }
}

}  // namespace larc::cases
