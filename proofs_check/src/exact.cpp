#include "larc/proofs_check/exact.h"

namespace larc::proofs {

Vec<rational> RationalSource::unit_vector(Eigen::Index d) {
  if (d == 1) {
    Vec<rational> x(1);
    x(0) = num_(rng_) < 0 ? rational(-1) : rational(1);
    return x;
  }
  const Vec<rational> y = vector(d - 1);
  const rational n2 = y.squaredNorm();
  Vec<rational> x(d);
  x.head(d - 1) = (rational(2) / (n2 + 1)) * y;
  x(d - 1) = (n2 - 1) / (n2 + 1);
  return x;
}

Vec<rational> RationalSource::nonzero_vector(Eigen::Index d) {
  for (;;) {
    Vec<rational> v = vector(d);
    if (v.squaredNorm() != 0) return v;
  }
}

rational max_abs(const Mat<rational>& m) {
  rational best = 0;
  for (Eigen::Index i = 0; i < m.rows(); ++i)
    for (Eigen::Index j = 0; j < m.cols(); ++j) best = std::max(best, rational(abs(m(i, j))));
  return best;
}

std::string describe_residual(const rational& r) {
  return r == 0 ? std::string("exact (residual 0)") : "residual " + r.str();
}

}  // namespace larc::proofs
