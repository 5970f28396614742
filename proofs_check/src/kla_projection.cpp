#include "larc/proofs_check/kla_projection.h"

#include "larc/reference/delta_rule.h"

namespace larc::proofs {

namespace {
Mat<rational> decayed(const KaczmarzInstance& x) { return x.alpha * x.s_prev; }
}  // namespace

KaczmarzInstance random_kaczmarz_instance(std::uint64_t seed, int dk, int dv, bool with_decay) {
  RationalSource src(seed);
  KaczmarzInstance x;
  x.s_prev = src.matrix(dk, dv);
  x.alpha = with_decay ? src.unit_interval() : rational(1);
  x.k = src.nonzero_vector(dk);
  x.v = src.vector(dv);
  return x;
}

Mat<rational> kaczmarz_write(const KaczmarzInstance& x) {
  const Mat<rational> k_row = x.k.transpose();
  const Vec<rational> eta = Vec<rational>::Ones(1);
  const rational beta = ref::delta_rule::kla_beta<rational>(k_row, eta, rational(0))(0);
  ref::delta_rule::State<rational> st(x.s_prev);
  st.step(Vec<rational>::Zero(x.k.size()), x.k, x.v, x.alpha, beta, rational(1));
  return st.matrix();
}

rational projection_residual(const KaczmarzInstance& x, const Mat<rational>& s_t, std::uint64_t seed) {
  rational worst = max_abs(s_t.transpose() * x.k - x.v);
  const Mat<rational> step = s_t - decayed(x);
  const Mat<rational> proj_null =
      Mat<rational>::Identity(x.k.size(), x.k.size()) - x.k * x.k.transpose() / x.k.squaredNorm();
  RationalSource src(seed ^ 0x9e3779b97f4a7c15ull);
  for (int j = 0; j < 3; ++j) {
    const Mat<rational> delta = proj_null * src.matrix(step.rows(), step.cols());  // Δ^T k = 0
    worst = std::max(worst, max_abs(delta.transpose() * x.k));
    worst = std::max(worst, rational(abs(rational(step.cwiseProduct(delta).sum()))));
  }
  return worst;
}

rational line_search_residual(const KaczmarzInstance& x, const Mat<rational>& s_t) {
  const Mat<rational> s = decayed(x);
  const Vec<rational> e = x.v - s.transpose() * x.k;
  if (e.squaredNorm() == 0) return max_abs(s_t - s);
  auto loss_at = [&](const rational& b) { return per_token_loss<rational>(s + b * x.k * e.transpose(), x.k, x.v); };
  const rational l0 = loss_at(0), l1 = loss_at(1), l2 = loss_at(2);
  const rational a = (l2 - 2 * l1 + l0) / 2, b = l1 - l0 - a, c = l0;
  rational worst = abs(rational(loss_at(3) - (9 * a + 3 * b + c)));  // the loss is this quadratic
  const rational argmin = -b / (2 * a);
  worst = std::max(worst, rational(abs(rational(argmin - 1 / x.k.squaredNorm()))));
  // The write judged must be the step to the minimiser along k e^T.
  worst = std::max(worst, max_abs(s_t - (s + argmin * x.k * e.transpose())));
  return worst;
}

rational gradient_step_residual(const KaczmarzInstance& x, const Mat<rational>& s_t) {
  const Mat<rational> s = decayed(x);
  const Mat<rational> grad =
      central_difference_gradient(s, [&](const Mat<rational>& m) { return per_token_loss<rational>(m, x.k, x.v); });
  return max_abs(s_t - (s - grad / x.k.squaredNorm()));
}

}  // namespace larc::proofs
