// The log-linear adjoint's exact identities (docs/gradients.md, "Log-linear attention", "Identities"), as
// RapidCheck properties over rational problems (Mamba-2 or GDN, T ≤ 20, d_k, d_v ≤ 4, some α_t = 0 when
// zero_decays, 0–2 spare λ columns, a random checkpoint). Every identity must hold with residual exactly
// 0. With L = Σ_t o_t·do_t:
//   LL1 q_t·dq_t = o_t·do_t            LL2 λ_t·dλ_t = o_t·do_t
//   LL3 Mamba-2: k_t·dk_t = v_t·dv_t;  GDN: k_t·dk_t − 2 β_t dβ_t + v_t·dv_t = 0
//   LL4 Σ_t v_t·dv_t = L               LL5 α_t dα_t = Σ_{s≥t} (o_s·do_s − v_s·dv_s)
//   LL6 Mamba-2, every channel i: Σ_t (k_ti dk_ti − q_ti dq_ti) = 0
//   LL7 dλ_t^{(ℓ)} = 0 unless level ℓ is live at t (fenwick::buckets), spare columns included
//   LL8 materialized_backward = backward.
//
// Reproducing: rerun with RC_PARAMS="reproduce=..." as RapidCheck prints it; the case is also
// recorded as the JUnit property failing_case.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <set>
#include <string>

#include "log_linear_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

struct IdentityCase {
  std::uint64_t seed = 0;
  LogLinearShape shape;
  bool zero_decays = false;
  Eigen::Index checkpoint = 1;

  std::string describe() const {
    return shape.describe() + " seed=" + std::to_string(seed) + (zero_decays ? " some decays 0" : "") +
           " checkpoint=" + std::to_string(checkpoint);
  }
};

IdentityCase gen_case() {
  IdentityCase c;
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.shape = {*rc::gen::element(ll::Variant::mamba2, ll::Variant::gdn), *rc::gen::inRange(1, 21), *rc::gen::inRange(1, 5),
             *rc::gen::inRange(1, 5), *rc::gen::inRange(0, 3)};
  c.zero_decays = *rc::gen::arbitrary<bool>();
  c.checkpoint = *rc::gen::inRange(1, 9);
  RC_LOG() << c.describe();
  ::testing::Test::RecordProperty("failing_case", c.describe());
  return c;
}

// The case's problem, cotangent, forward outputs and gradients.
struct Evaluated {
  ll::Problem<rational> p;
  Mat<rational> d_o, o;
  ll::Gradients<rational> g;
  rational output_term(Eigen::Index t) const { return o.row(t).dot(d_o.row(t)); }
  rational value_term(Eigen::Index t) const { return p.v.row(t).dot(g.dv.row(t)); }
};

Evaluated evaluate(const IdentityCase& c) {
  Evaluated e{make_log_linear_rational_problem(c.shape, c.seed, c.zero_decays),
              make_log_linear_cotangent(c.shape, c.seed + 1), {}, {}};
  e.o = ll::serial(e.p);
  e.g = ll::backward(e.p, e.d_o, c.checkpoint);
  return e;
}

RC_GTEST_PROP(LogLinearBackwardIdentities, LL1QueryGradientPairsWithOutputGradient, ()) {
  const Evaluated e = evaluate(gen_case());
  for (Eigen::Index t = 0; t < e.p.T(); ++t) RC_ASSERT(rational(e.p.q.row(t).dot(e.g.dq.row(t))) == e.output_term(t));
}

RC_GTEST_PROP(LogLinearBackwardIdentities, LL2LevelScaleGradientPairsWithOutputGradient, ()) {
  const Evaluated e = evaluate(gen_case());
  for (Eigen::Index t = 0; t < e.p.T(); ++t)
    RC_ASSERT(rational(e.p.lambda.row(t).dot(e.g.dlambda.row(t))) == e.output_term(t));
}

RC_GTEST_PROP(LogLinearBackwardIdentities, LL3KeyValueRescalingLeavesLossInvariant, ()) {
  const Evaluated e = evaluate(gen_case());
  for (Eigen::Index t = 0; t < e.p.T(); ++t) {
    const rational kk = e.p.k.row(t).dot(e.g.dk.row(t));
    if (e.p.variant == ll::Variant::mamba2) RC_ASSERT(kk == e.value_term(t));
    else RC_ASSERT(kk - 2 * e.p.beta(t) * e.g.dbeta(t) + e.value_term(t) == rational(0));
  }
}

RC_GTEST_PROP(LogLinearBackwardIdentities, LL4LossIsLinearInValues, ()) {
  const Evaluated e = evaluate(gen_case());
  rational loss = 0, euler = 0;
  for (Eigen::Index t = 0; t < e.p.T(); ++t) {
    loss += e.output_term(t);
    euler += e.value_term(t);
  }
  RC_ASSERT(euler == loss);
}

RC_GTEST_PROP(LogLinearBackwardIdentities, LL5DecayGradientIsASuffixSum, ()) {
  const Evaluated e = evaluate(gen_case());
  rational suffix = 0;
  for (Eigen::Index t = e.p.T() - 1; t >= 0; --t) {
    suffix += e.output_term(t) - e.value_term(t);
    RC_ASSERT(e.p.alpha(t) * e.g.dalpha(t) == suffix);
  }
}

RC_GTEST_PROP(LogLinearBackwardIdentities, LL6Mamba2ChannelRescalingLeavesLossInvariant, ()) {
  IdentityCase c = gen_case();
  c.shape.variant = ll::Variant::mamba2;
  const Evaluated e = evaluate(c);
  for (Eigen::Index i = 0; i < e.p.dk(); ++i) {
    rational sum = 0;
    for (Eigen::Index t = 0; t < e.p.T(); ++t) sum += e.p.k(t, i) * e.g.dk(t, i) - e.p.q(t, i) * e.g.dq(t, i);
    RC_ASSERT(sum == rational(0));
  }
}

RC_GTEST_PROP(LogLinearBackwardIdentities, LL7OnlyLiveLevelsHaveScaleGradients, ()) {
  const Evaluated e = evaluate(gen_case());
  for (Eigen::Index t = 0; t < e.p.T(); ++t) {
    std::set<int> live;
    for (const auto& b : larc::ref::fenwick::buckets(static_cast<std::uint64_t>(t))) live.insert(b.level);
    for (Eigen::Index l = 0; l < e.g.dlambda.cols(); ++l)
      if (!live.count(static_cast<int>(l))) RC_ASSERT(e.g.dlambda(t, l) == rational(0));
  }
}

RC_GTEST_PROP(LogLinearBackwardIdentities, LL8DenseAdjointEqualsFenwickAdjoint, ()) {
  const IdentityCase c = gen_case();
  const Evaluated e = evaluate(c);
  RC_ASSERT(first_difference(ll::materialized_backward(e.p, e.d_o), e.g) == std::string());
}

}  // namespace
