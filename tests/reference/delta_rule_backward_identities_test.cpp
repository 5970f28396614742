// The delta-rule adjoint's exact identities (docs/gradients.md, "Identities"), as RapidCheck
// properties over rational GDN problems (α an input, some α_t = 0 when zero_decays, i.e. g = −∞;
// T ≤ 20, d_k, d_v ≤ 4; do only, dht only or both; a random checkpoint). Every identity must hold
// with residual exactly 0. With L = Σ_t o_t·do_t + ⟨S_T, dht⟩:
//   I1  q_t·dq_t = o_t·do_t                                  (o_t = scale S_t^T q_t is linear in q_t)
//   I2  k_t·dk_t − 2 β_t dβ_t + v_t·dv_t = 0                  ((k_t, β_t, v_t) → (c k_t, β_t/c², c v_t))
//   I3  α_t dα_t = Σ_{s≥t} (o_s·do_s − v_s·dv_s) + ⟨S_T, dht⟩  ((α_t, v_{s≥t}) → (c α_t, c v_{s≥t}))
//   I4  Σ_t v_t·dv_t + ⟨S_0, dS_0⟩ = L                        (L is linear in (v, S_0))
//   I3 also chunk by chunk: within each chunk, seeded by the direct dg at the next chunk's first token;
//   I6  dS_0 does not depend on S_0;  I7  S_0 = 0 ⇒ dα_0 = 0, and β_t = 0 ⇒ dv_t = dk_t = 0.
//
// Reproducing: rerun with RC_PARAMS="reproduce=..." as RapidCheck prints it; the case is also
// recorded as the JUnit property failing_case.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <random>
#include <string>

#include "backward_identity_cases.h"
#include "larc/reference/chunk_local_decay_gradient.h"
#include "delta_rule_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

// The case's problem, its cotangents, forward result and gradients.
struct Evaluated {
  dr::Problem<rational> p;
  dr::Cotangents<rational> cot;
  larc::ref::SeqResult<rational> fwd;
  dr::Gradients<rational> g;
};

Evaluated evaluate(const IdentityCase& c) {
  Evaluated e{make_rational_case(Mechanism::gdn, c.shape, c.seed).problem, make_rational_cotangents(c.shape, c.seeds, c.seed + 1),
              {}, {}};
  if (c.zero_decays) {
    std::mt19937_64 rng(c.seed + 2);
    for (Eigen::Index t = 0; t < c.shape.T; ++t)
      if (rng() % 3 == 0) e.p.alpha(t) = 0;
  }
  e.fwd = dr::serial(e.p);
  e.g = dr::backward(e.p, e.cot, c.checkpoint);
  return e;
}

rational frobenius(const Mat<rational>& a, const Mat<rational>& b) { return a.cwiseProduct(b).sum(); }

// o_t·do_t (0 without do) and ⟨S_T, dht⟩ (0 without dht).
rational output_term(const Evaluated& e, Eigen::Index t) {
  return e.cot.d_o.size() == 0 ? rational(0) : rational(e.fwd.o.row(t).dot(e.cot.d_o.row(t)));
}
rational final_state_term(const Evaluated& e) {
  return e.cot.d_final_state ? frobenius(e.fwd.final_state, *e.cot.d_final_state) : rational(0);
}

RC_GTEST_PROP(DeltaRuleBackwardIdentities, I1QueryGradientPairsWithOutputGradient, ()) {
  const Evaluated e = evaluate(gen_identity_case("GDN"));
  for (Eigen::Index t = 0; t < e.p.T(); ++t)
    RC_ASSERT(rational(e.p.q.row(t).dot(e.g.dq.row(t))) == output_term(e, t));
}

RC_GTEST_PROP(DeltaRuleBackwardIdentities, I2KeyStepValueRescalingLeavesLossInvariant, ()) {
  const Evaluated e = evaluate(gen_identity_case("GDN"));
  for (Eigen::Index t = 0; t < e.p.T(); ++t)
    RC_ASSERT(rational(e.p.k.row(t).dot(e.g.dk.row(t)) - 2 * e.p.beta(t) * e.g.dbeta(t) + e.p.v.row(t).dot(e.g.dv.row(t))) ==
              rational(0));
}

RC_GTEST_PROP(DeltaRuleBackwardIdentities, I3LogDecayGradientIsASuffixSum, ()) {
  const Evaluated e = evaluate(gen_identity_case("GDN"));
  const Vec<rational> dg = dr::log_decay_gradient(e.p.alpha, e.g.dalpha);
  rational suffix = final_state_term(e);
  for (Eigen::Index t = e.p.T() - 1; t >= 0; --t) {
    suffix += output_term(e, t) - rational(e.p.v.row(t).dot(e.g.dv.row(t)));
    RC_ASSERT(dg(t) == suffix);
  }
  // The reference's helper of the same form (the accuracy report's identity-form dg) is exact too.
  RC_ASSERT(dr::log_decay_gradient_by_identity(e.fwd.o, e.fwd.final_state, e.p.v, e.g.dv, e.cot) == dg);
}

// I3 chunk by chunk, as chunk kernels compute dg (reference/chunk_local_decay_gradient.h): the suffix sum
// within each chunk, seeded by the direct gradient at the next chunk's first token, is the direct dg.
RC_GTEST_PROP(DeltaRuleBackwardIdentities, I3ChunkLocalFormEqualsTheDirectForm, ()) {
  const Evaluated e = evaluate(gen_identity_case("GDN"));
  const Eigen::Index chunk = *rc::gen::inRange(1, 9);
  const Vec<rational> dg = dr::log_decay_gradient(e.p.alpha, e.g.dalpha);
  Mat<rational> terms(e.p.T(), 1);
  for (Eigen::Index t = 0; t < e.p.T(); ++t) terms(t, 0) = output_term(e, t) - rational(e.p.v.row(t).dot(e.g.dv.row(t)));
  const Mat<rational> local =
      larc::ref::chunk_local_suffix_sums<rational>(terms, dg, Vec<rational>::Constant(1, final_state_term(e)), chunk);
  for (Eigen::Index t = 0; t < e.p.T(); ++t) RC_ASSERT(local(t, 0) == dg(t));
}

// dβ as chunk kernels form it (StepGradient::split) is the direct dβ exactly.
RC_GTEST_PROP(DeltaRuleBackwardIdentities, SplitStepGradientEqualsTheDirectOne, ()) {
  const IdentityCase c = gen_identity_case("GDN");
  const Evaluated e = evaluate(c);
  RC_ASSERT(dr::backward(e.p, e.cot, c.checkpoint, dr::StepGradient::split).dbeta == e.g.dbeta);
}

RC_GTEST_PROP(DeltaRuleBackwardIdentities, I4LossIsLinearInValuesAndInitialState, ()) {
  const Evaluated e = evaluate(gen_identity_case("GDN"));
  rational loss = final_state_term(e), euler = frobenius(e.p.start_state(), e.g.d_initial_state);
  for (Eigen::Index t = 0; t < e.p.T(); ++t) {
    loss += output_term(e, t);
    euler += rational(e.p.v.row(t).dot(e.g.dv.row(t)));
  }
  RC_ASSERT(euler == loss);
}

RC_GTEST_PROP(DeltaRuleBackwardIdentities, I6InitialStateGradientDoesNotDependOnInitialState, ()) {
  const IdentityCase c = gen_identity_case("GDN");
  const Evaluated e = evaluate(c);
  dr::Problem<rational> other = e.p;
  other.initial_state = larc::proofs::RationalSource(c.seed + 3, 9, 8).matrix(c.shape.dk, c.shape.dv);
  RC_ASSERT(dr::backward(other, e.cot, c.checkpoint).d_initial_state == e.g.d_initial_state);
}

RC_GTEST_PROP(DeltaRuleBackwardIdentities, I7ZeroStartOrZeroStepGivesZeroGradients, ()) {
  IdentityCase c = gen_identity_case("GDN");
  c.shape.initial_state = false;
  Evaluated e = evaluate(c);
  RC_ASSERT(e.g.dalpha(0) == rational(0));
  const Eigen::Index t = *rc::gen::inRange<Eigen::Index>(0, c.shape.T);
  e.p.beta(t) = 0;
  const dr::Gradients<rational> g = dr::backward(e.p, e.cot, c.checkpoint);
  RC_ASSERT(g.dv.row(t).isZero(0));
  RC_ASSERT(g.dk.row(t).isZero(0));
}

}  // namespace
