#include "larc/properties/log_linear_cases.h"

#include <cmath>

#include "larc/proofs_check/exact.h"

namespace larc::props {

namespace ll = ref::log_linear;

std::string LogLinearCase::describe() const {
  return "{seed=" + std::to_string(seed) + ", T=" + std::to_string(T) + ", d_k=" + std::to_string(dk) +
         ", d_v=" + std::to_string(dv) + ", variant=" + ll::variant_name(variant) + ", gates=" + gate_kind_name(gates) +
         ", extra_levels=" + std::to_string(extra_levels) + "}";
}

namespace {
Eigen::Index lambda_columns(const LogLinearCase& c) {
  return (c.T > 0 ? ref::fenwick::level_count(static_cast<std::uint64_t>(c.T)) : 1) + c.extra_levels;
}
}  // namespace

ll::Problem<double> log_linear_problem(const LogLinearCase& c) {
  Rng rng(c.seed);
  ll::Problem<double> p;
  p.variant = c.variant;
  p.q = gaussian(rng, c.T, c.dk, 1.0 / std::sqrt(double(c.dk)));
  p.k = unit_rows(rng, c.T, c.dk);
  p.v = gaussian(rng, c.T, c.dv, 1.0);
  p.alpha = log_decays(rng, c.gates, c.T).unaryExpr([](double g) { return std::exp(g); });
  p.beta = betas(rng, c.gates, c.T);
  p.lambda = gaussian(rng, c.T, lambda_columns(c), 1.0).unaryExpr([](double x) { return ref::softplus(x); });
  p.scale = 1;
  return p;
}

ll::Problem<ref::rational> rational_log_linear_problem(const LogLinearCase& c) {
  proofs::RationalSource src(c.seed, 9, 8);
  ll::Problem<ref::rational> p;
  p.variant = c.variant;
  p.q = src.matrix(c.T, c.dk);
  p.k = src.matrix(c.T, c.dk);
  p.v = src.matrix(c.T, c.dv);
  p.alpha.resize(c.T);
  p.beta.resize(c.T);
  for (int t = 0; t < c.T; ++t) {
    p.alpha(t) = src.unit_interval();
    p.beta(t) = src.unit_interval();
  }
  p.lambda.resize(c.T, lambda_columns(c));
  for (Eigen::Index i = 0; i < p.lambda.size(); ++i) p.lambda(i) = 2 * src.unit_interval();
  p.scale = 1;
  return p;
}

}  // namespace larc::props
