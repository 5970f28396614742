// The VLA adjoint's exact identities (docs/gradients.md, "VLA", "Identities"), as RapidCheck properties
// over rational problems (identity features, no normalisations; ratio or plain read; with or without an
// initial memory and the nudge; T ≤ 6, d_k, d_v ≤ 3; a random checkpoint). Every identity must hold with
// residual exactly 0. With Σ o·do = Σ_t o_t·do_t:
//   V1 q_t·dq_t = o_t·do_t (plain read; ratio read with its denominator floored), 0 (ratio, unfloored)
//   V2 Σ_t v_t·dv_t + ⟨S_0, dS_0⟩ = Σ o·do + ⟨S_T, dS_T⟩      (L's part in S is linear in (v, S_0))
//   V3 dS_0 does not depend on S_0
//   V4 causality: with do_s = 0 for s ≥ t0 and no final cotangents, dq_t = dk_t = dv_t = du_t = 0 for t ≥ t0
//   V5 the penalty and the normaliser are separate recursions: with dA_T alone, dq = dk = dv = 0,
//      dS_0 = 0 and dζ_0 = 0; with dζ_T alone, dk_t = dζ_T for every t, dζ_0 = dζ_T, and dq = dv = du = 0.
//
// Reproducing: rerun with RC_PARAMS="reproduce=..." as RapidCheck prints it; the case is also
// recorded as the JUnit property failing_case.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "vla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

struct IdentityCase {
  std::uint64_t seed = 0;
  VlaShape shape;
  Seeds seeds = Seeds::both;
  Eigen::Index checkpoint = 1;

  std::string describe() const {
    return shape.describe() + " seed=" + std::to_string(seed) + " cotangents " + seeds_name(seeds) +
           " checkpoint=" + std::to_string(checkpoint);
  }
};

IdentityCase gen_case() {
  IdentityCase c;
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.shape = {*rc::gen::inRange(1, 7), *rc::gen::inRange(1, 4), *rc::gen::inRange(1, 4), *rc::gen::arbitrary<bool>(),
             *rc::gen::arbitrary<bool>(), *rc::gen::arbitrary<bool>()};
  c.seeds = *rc::gen::element(Seeds::d_o, Seeds::d_final_state, Seeds::both);
  c.checkpoint = *rc::gen::inRange(1, 5);
  RC_LOG() << c.describe();
  ::testing::Test::RecordProperty("failing_case", c.describe());
  return c;
}

rational frobenius(const Mat<rational>& a, const Mat<rational>& b) { return a.cwiseProduct(b).sum(); }

Mat<rational> or_zero(const Mat<rational>& m, Eigen::Index rows, Eigen::Index cols) {
  return m.size() ? m : Mat<rational>(Mat<rational>::Zero(rows, cols));
}

RC_GTEST_PROP(VlaBackwardIdentities, V1QueryGradientPairsWithOutputGradient, ()) {
  const IdentityCase c = gen_case();
  const vla::Problem<rational> p = make_vla_rational_problem(c.shape, c.seed);
  const vla::Cotangents<rational> cot = make_vla_cotangents(c.shape, c.seeds, c.seed + 1);
  const vla::Result<rational> fwd = vla::serial(p);
  const vla::Gradients<rational> g = vla::backward(p, cot, c.checkpoint);
  const Mat<rational> d_o = or_zero(cot.d_o, p.T(), p.dv());
  Vec<rational> zeta = vla::start_memory(p).zeta;
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    zeta += p.k.row(t).transpose();
    const bool floored = rational(zeta.dot(p.q.row(t).transpose())) < p.opt.stab_eps;
    const rational output = fwd.o.row(t).dot(d_o.row(t));
    RC_ASSERT(rational(p.q.row(t).dot(g.dq.row(t))) == (p.opt.ratio && !floored ? rational(0) : output));
  }
}

RC_GTEST_PROP(VlaBackwardIdentities, V2LossIsLinearInValuesAndInitialState, ()) {
  const IdentityCase c = gen_case();
  const vla::Problem<rational> p = make_vla_rational_problem(c.shape, c.seed);
  const vla::Cotangents<rational> cot = make_vla_cotangents(c.shape, c.seeds, c.seed + 1);
  const vla::Result<rational> fwd = vla::serial(p);
  const vla::Gradients<rational> g = vla::backward(p, cot, c.checkpoint);
  rational rhs = frobenius(fwd.o, or_zero(cot.d_o, p.T(), p.dv()));
  if (cot.d_final_state) rhs += frobenius(fwd.final_memory.s, *cot.d_final_state);
  RC_ASSERT(frobenius(p.v, g.dv) + frobenius(vla::start_memory(p).s, g.d_initial.s) == rhs);
}

RC_GTEST_PROP(VlaBackwardIdentities, V3InitialStateGradientDoesNotDependOnInitialState, ()) {
  IdentityCase c = gen_case();
  c.shape.initial = true;
  const vla::Problem<rational> p = make_vla_rational_problem(c.shape, c.seed);
  const vla::Cotangents<rational> cot = make_vla_cotangents(c.shape, c.seeds, c.seed + 1);
  vla::Problem<rational> other = p;
  other.initial->s = larc::proofs::RationalSource(c.seed + 3, 9, 8).matrix(p.dk(), p.dv());
  RC_ASSERT(vla::backward(other, cot, c.checkpoint).d_initial.s == vla::backward(p, cot, c.checkpoint).d_initial.s);
}

RC_GTEST_PROP(VlaBackwardIdentities, V4LaterTokensGetNoGradientFromEarlierOutputs, ()) {
  IdentityCase c = gen_case();
  c.seeds = Seeds::d_o;
  const auto t0 = static_cast<Eigen::Index>(*rc::gen::inRange<int>(0, static_cast<int>(c.shape.T)));
  const vla::Problem<rational> p = make_vla_rational_problem(c.shape, c.seed);
  vla::Cotangents<rational> cot = make_vla_cotangents(c.shape, c.seeds, c.seed + 1);
  const Eigen::Index n = c.shape.T - t0;
  cot.d_o.bottomRows(n).setZero();
  const vla::Gradients<rational> g = vla::backward(p, cot, c.checkpoint);
  RC_ASSERT(g.dq.bottomRows(n).isZero(0));
  RC_ASSERT(g.dk.bottomRows(n).isZero(0));
  RC_ASSERT(g.dv.bottomRows(n).isZero(0));
  RC_ASSERT(g.du.bottomRows(n).isZero(0));
}

RC_GTEST_PROP(VlaBackwardIdentities, V5PenaltyAndNormaliserAreSeparateRecursions, ()) {
  const IdentityCase c = gen_case();
  const vla::Problem<rational> p = make_vla_rational_problem(c.shape, c.seed);
  const vla::Cotangents<rational> full = make_vla_cotangents(c.shape, Seeds::d_final_state, c.seed + 1);
  vla::Cotangents<rational> penalty_only{Mat<rational>(), {}, full.d_final_penalty, {}};
  const vla::Gradients<rational> gp = vla::backward(p, penalty_only, c.checkpoint);
  RC_ASSERT(gp.dq.isZero(0) && gp.dk.isZero(0) && gp.dv.isZero(0));
  RC_ASSERT(gp.d_initial.s.isZero(0) && gp.d_initial.zeta.isZero(0));
  vla::Cotangents<rational> normaliser_only{Mat<rational>(), {}, {}, full.d_final_normalizer};
  const vla::Gradients<rational> gz = vla::backward(p, normaliser_only, c.checkpoint);
  for (Eigen::Index t = 0; t < p.T(); ++t) RC_ASSERT(Vec<rational>(gz.dk.row(t).transpose()) == *full.d_final_normalizer);
  RC_ASSERT(gz.d_initial.zeta == *full.d_final_normalizer);
  RC_ASSERT(gz.dq.isZero(0) && gz.dv.isZero(0) && gz.du.isZero(0));
}

}  // namespace
