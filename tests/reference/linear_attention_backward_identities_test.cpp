// The linear-attention adjoint's exact identities (docs/gradients.md, "Linear attention", "Identities"),
// as RapidCheck properties over rational problems with identity features (so q, k are the features;
// plain or ratio read; T ≤ 20, d_k, d_v ≤ 4; with or without an initial memory; do only, (dS_T, dz_T)
// only or both; a random checkpoint). Every identity must hold with residual exactly 0. With
// L = Σ_t o_t·do_t + ⟨S_T, dS_T⟩ + z_T·dz_T and den_t = z_t·q_t + ε (ratio):
//   LA1 plain: q_t·dq_t = o_t·do_t;   ratio: den_t (q_t·dq_t) = ε (o_t·do_t)
//   LA2 plain: k_t·dk_t − v_t·dv_t = k_t·dz_T, and dz_0 = dz_T
//   LA3 Σ_t v_t·dv_t + ⟨S_0, dS_0⟩ = Σ_t o_t·do_t + ⟨S_T, dS_T⟩
//   LA4 for every channel i: Σ_t (k_ti dk_ti − q_ti dq_ti) + ⟨S_0,i:, dS_0,i:⟩ + z_0i dz_0i
//                            = ⟨S_T,i:, dS_T,i:⟩ + z_Ti dz_Ti
//   LA5 dS_0 does not depend on S_0.
//
// Reproducing: rerun with RC_PARAMS="reproduce=..." as RapidCheck prints it; the case is also
// recorded as the JUnit property failing_case.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "linear_attention_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::testing::LaShape;
using larc::testing::LaVariant;

struct IdentityCase {
  std::uint64_t seed = 0;
  LaVariant variant{la::FeatureMap::identity, false};
  LaShape shape{1, 1, 1, false};
  Seeds seeds = Seeds::both;
  Eigen::Index checkpoint = 1;

  std::string describe() const {
    return larc::testing::describe(variant, shape, seed) + " cotangents " + seeds_name(seeds) +
           " checkpoint=" + std::to_string(checkpoint);
  }
};

IdentityCase gen_identity_case() {
  IdentityCase c;
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.variant.ratio = *rc::gen::arbitrary<bool>();
  c.shape = {*rc::gen::inRange(1, 21), *rc::gen::inRange(1, 5), *rc::gen::inRange(1, 5), *rc::gen::arbitrary<bool>()};
  c.seeds = *rc::gen::element(Seeds::d_o, Seeds::d_final_state, Seeds::both);
  c.checkpoint = *rc::gen::inRange(1, 9);
  RC_LOG() << c.describe();
  ::testing::Test::RecordProperty("failing_case", c.describe());  // overwritten by each case; the last is the failure
  return c;
}

// The case's problem, its cotangents (zero where not seeded, so every term below is defined), the
// forward result and the gradients.
struct Evaluated {
  la::Problem<rational> p;
  la::Cotangents<rational> cot;
  la::Result<rational> fwd;
  la::Gradients<rational> g;
};

la::Cotangents<rational> with_zeros(la::Cotangents<rational> c, const LaShape& s) {
  if (c.d_o.size() == 0) c.d_o = Mat<rational>::Zero(s.T, s.dv);
  if (!c.d_final_state) c.d_final_state = Mat<rational>::Zero(s.dk, s.dv);
  if (!c.d_final_normalizer) c.d_final_normalizer = Vec<rational>::Zero(s.dk);
  return c;
}

Evaluated evaluate(const IdentityCase& c) {
  Evaluated e{larc::testing::make_la_rational_problem(c.variant, c.shape, c.seed),
              make_la_cotangents(c.shape, c.seeds, c.seed + 1), {}, {}};
  e.fwd = la::serial(e.p);
  e.g = la::backward(e.p, e.cot, c.checkpoint);
  e.cot = with_zeros(e.cot, c.shape);
  return e;
}

rational frobenius(const Mat<rational>& a, const Mat<rational>& b) { return a.cwiseProduct(b).sum(); }
rational output_term(const Evaluated& e, Eigen::Index t) { return e.fwd.o.row(t).dot(e.cot.d_o.row(t)); }

RC_GTEST_PROP(LinearAttentionBackwardIdentities, LA1QueryGradientPairsWithOutputGradient, ()) {
  const Evaluated e = evaluate(gen_identity_case());
  la::Memory<rational> m = la::start_memory(e.p);
  for (Eigen::Index t = 0; t < e.p.T(); ++t) {
    m.z += e.p.k.row(t).transpose();
    const rational q_dq = e.p.q.row(t).dot(e.g.dq.row(t));
    if (!e.p.opt.ratio) {
      RC_ASSERT(q_dq == output_term(e, t));
    } else {
      const rational den = rational(m.z.dot(e.p.q.row(t).transpose())) + e.p.opt.eps;
      RC_ASSERT(den * q_dq == e.p.opt.eps * output_term(e, t));
    }
  }
}

RC_GTEST_PROP(LinearAttentionBackwardIdentities, LA2PlainKeyValueRescalingMovesOnlyTheNormalizer, ()) {
  IdentityCase c = gen_identity_case();
  c.variant.ratio = false;
  const Evaluated e = evaluate(c);
  RC_ASSERT(e.g.d_initial_normalizer == *e.cot.d_final_normalizer);
  for (Eigen::Index t = 0; t < e.p.T(); ++t)
    RC_ASSERT(rational(e.p.k.row(t).dot(e.g.dk.row(t)) - e.p.v.row(t).dot(e.g.dv.row(t))) ==
              rational(e.p.k.row(t).dot(e.cot.d_final_normalizer->transpose())));
}

RC_GTEST_PROP(LinearAttentionBackwardIdentities, LA3OutputsAndStateAreLinearInValuesAndInitialState, ()) {
  const Evaluated e = evaluate(gen_identity_case());
  const la::Memory<rational> m0 = la::start_memory(e.p);
  rational linear_part = frobenius(e.fwd.final_memory.s, *e.cot.d_final_state), euler = frobenius(m0.s, e.g.d_initial_state);
  for (Eigen::Index t = 0; t < e.p.T(); ++t) {
    linear_part += output_term(e, t);
    euler += rational(e.p.v.row(t).dot(e.g.dv.row(t)));
  }
  RC_ASSERT(euler == linear_part);
}

RC_GTEST_PROP(LinearAttentionBackwardIdentities, LA4ChannelRescalingOfKeysAgainstQueries, ()) {
  const Evaluated e = evaluate(gen_identity_case());
  const la::Memory<rational> m0 = la::start_memory(e.p);
  const la::Memory<rational>& mT = e.fwd.final_memory;
  for (Eigen::Index i = 0; i < e.p.dk(); ++i) {
    rational lhs = rational(m0.s.row(i).dot(e.g.d_initial_state.row(i))) + m0.z(i) * e.g.d_initial_normalizer(i);
    for (Eigen::Index t = 0; t < e.p.T(); ++t) lhs += e.p.k(t, i) * e.g.dk(t, i) - e.p.q(t, i) * e.g.dq(t, i);
    const rational rhs = rational(mT.s.row(i).dot(e.cot.d_final_state->row(i))) + mT.z(i) * (*e.cot.d_final_normalizer)(i);
    RC_ASSERT(lhs == rhs);
  }
}

RC_GTEST_PROP(LinearAttentionBackwardIdentities, LA5InitialStateGradientDoesNotDependOnInitialState, ()) {
  const IdentityCase c = gen_identity_case();
  const Evaluated e = evaluate(c);
  la::Problem<rational> other = e.p;
  other.initial_state = larc::proofs::RationalSource(c.seed + 3, 9, 8).matrix(c.shape.dk, c.shape.dv);
  RC_ASSERT(la::backward(other, e.cot, c.checkpoint).d_initial_state == e.g.d_initial_state);
}

}  // namespace
