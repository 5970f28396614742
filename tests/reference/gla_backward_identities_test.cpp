// The GLA adjoint's exact identities (docs/gradients.md, "GLA", "Identities"), as RapidCheck properties
// over rational problems (decays in (0, 1], some a_ti = 0 when zero_decays, i.e. gk = −∞; T ≤ 20,
// d_k, d_v ≤ 4; with or without S_0; do only, dht only or both; a random checkpoint). Every identity
// must hold with residual exactly 0. With L = Σ_t o_t·do_t + ⟨S_T, dht⟩ and dgk = a ⊙ da:
//   G1 q_t·dq_t = o_t·do_t
//   G2 k_t·dk_t = v_t·dv_t
//   G3 for every t and channel i: dgk_ti = Σ_{s≥t} (q_si dq_si − k_si dk_si) + ⟨S_T,i:, dht_i:⟩,
//      and ⟨S_0,i:, dS_0,i:⟩ = dgk_1i
//   G4 Σ_t v_t·dv_t + ⟨S_0, dS_0⟩ = L
//   G5 dS_0 does not depend on S_0;  G6 S_0 = 0 ⇒ da_1 = 0.
//
// Reproducing: rerun with RC_PARAMS="reproduce=..." as RapidCheck prints it; the case is also
// recorded as the JUnit property failing_case.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <random>
#include <string>

#include "backward_identity_cases.h"
#include "larc/reference/chunk_local_decay_gradient.h"
#include "gla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

// The case's problem, its cotangents (zero where not seeded), forward result and gradients.
struct Evaluated {
  gla::Problem<rational> p;
  gla::Cotangents<rational> cot;
  larc::ref::SeqResult<rational> fwd;
  gla::Gradients<rational> g;
};

Evaluated evaluate(const IdentityCase& c) {
  Evaluated e{make_gla_rational_problem(c.shape, c.seed), make_rational_cotangents(c.shape, c.seeds, c.seed + 1), {}, {}};
  if (c.zero_decays) {
    std::mt19937_64 rng(c.seed + 2);
    for (Eigen::Index t = 0; t < c.shape.T; ++t)
      for (Eigen::Index i = 0; i < c.shape.dk; ++i)
        if (rng() % 3 == 0) e.p.a(t, i) = 0;
  }
  e.fwd = gla::serial(e.p);
  e.g = gla::backward(e.p, e.cot, c.checkpoint);
  if (e.cot.d_o.size() == 0) e.cot.d_o = Mat<rational>::Zero(c.shape.T, c.shape.dv);
  if (!e.cot.d_final_state) e.cot.d_final_state = Mat<rational>::Zero(c.shape.dk, c.shape.dv);
  return e;
}

rational frobenius(const Mat<rational>& a, const Mat<rational>& b) { return a.cwiseProduct(b).sum(); }
rational output_term(const Evaluated& e, Eigen::Index t) { return e.fwd.o.row(t).dot(e.cot.d_o.row(t)); }

RC_GTEST_PROP(GlaBackwardIdentities, G1QueryGradientPairsWithOutputGradient, ()) {
  const Evaluated e = evaluate(gen_identity_case("GLA"));
  for (Eigen::Index t = 0; t < e.p.T(); ++t) RC_ASSERT(rational(e.p.q.row(t).dot(e.g.dq.row(t))) == output_term(e, t));
}

RC_GTEST_PROP(GlaBackwardIdentities, G2KeyValueRescalingLeavesLossInvariant, ()) {
  const Evaluated e = evaluate(gen_identity_case("GLA"));
  for (Eigen::Index t = 0; t < e.p.T(); ++t)
    RC_ASSERT(rational(e.p.k.row(t).dot(e.g.dk.row(t))) == rational(e.p.v.row(t).dot(e.g.dv.row(t))));
}

RC_GTEST_PROP(GlaBackwardIdentities, G3LogDecayGradientIsAChannelSuffixSum, ()) {
  const Evaluated e = evaluate(gen_identity_case("GLA"));
  const Mat<rational> dgk = gla::log_decay_gradient(e.p.a, e.g.da);
  const Mat<rational> s0 = e.p.start_state();
  for (Eigen::Index i = 0; i < e.p.dk(); ++i) {
    rational suffix = e.fwd.final_state.row(i).dot(e.cot.d_final_state->row(i));
    for (Eigen::Index t = e.p.T() - 1; t >= 0; --t) {
      suffix += e.p.q(t, i) * e.g.dq(t, i) - e.p.k(t, i) * e.g.dk(t, i);
      RC_ASSERT(dgk(t, i) == suffix);
    }
    RC_ASSERT(rational(s0.row(i).dot(e.g.d_initial_state.row(i))) == dgk(0, i));
  }
}

// G3 chunk by chunk, as chunk kernels compute dgk (reference/chunk_local_decay_gradient.h): per channel the
// suffix sum within each chunk, seeded by the direct gradient at the next chunk's first token, is the direct dgk.
RC_GTEST_PROP(GlaBackwardIdentities, G3ChunkLocalFormEqualsTheDirectForm, ()) {
  const Evaluated e = evaluate(gen_identity_case("GLA"));
  const Eigen::Index chunk = *rc::gen::inRange(1, 9);
  const Mat<rational> dgk = gla::log_decay_gradient(e.p.a, e.g.da);
  const Mat<rational> terms = e.p.q.cwiseProduct(e.g.dq) - e.p.k.cwiseProduct(e.g.dk);
  const Vec<rational> final_term = e.fwd.final_state.cwiseProduct(*e.cot.d_final_state).rowwise().sum();
  RC_ASSERT(larc::ref::chunk_local_suffix_sums<rational>(terms, dgk, final_term, chunk) == dgk);
}

RC_GTEST_PROP(GlaBackwardIdentities, G4LossIsLinearInValuesAndInitialState, ()) {
  const Evaluated e = evaluate(gen_identity_case("GLA"));
  rational loss = frobenius(e.fwd.final_state, *e.cot.d_final_state), euler = frobenius(e.p.start_state(), e.g.d_initial_state);
  for (Eigen::Index t = 0; t < e.p.T(); ++t) {
    loss += output_term(e, t);
    euler += rational(e.p.v.row(t).dot(e.g.dv.row(t)));
  }
  RC_ASSERT(euler == loss);
}

RC_GTEST_PROP(GlaBackwardIdentities, G5InitialStateGradientDoesNotDependOnInitialState, ()) {
  const IdentityCase c = gen_identity_case("GLA");
  const Evaluated e = evaluate(c);
  gla::Problem<rational> other = e.p;
  other.initial_state = larc::proofs::RationalSource(c.seed + 3, 9, 8).matrix(c.shape.dk, c.shape.dv);
  RC_ASSERT(gla::backward(other, e.cot, c.checkpoint).d_initial_state == e.g.d_initial_state);
}

RC_GTEST_PROP(GlaBackwardIdentities, G6ZeroStartGivesZeroFirstDecayGradient, ()) {
  IdentityCase c = gen_identity_case("GLA");
  c.shape.initial_state = false;
  const Evaluated e = evaluate(c);
  RC_ASSERT(e.g.da.row(0).isZero(0));
}

}  // namespace
