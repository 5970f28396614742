// The CCQ adjoint's exact identities (docs/gradients.md, "CCQ", "Identities"), as RapidCheck properties
// over rational problems (GDN or GLA backbone, any of the three covariances, λ given, T ≤ 12, d_k, d_v ≤ 3,
// with or without initial statistics and S_0, do only / (dht, final statistics) only / both, a random
// checkpoint). Every identity must hold with residual exactly 0. dk^cond is the conditioner's part of
// dk: ccq::backward's dk minus the backbone's backward with q̃ in place of q.
//   CQ1 q_t·dq_t = o_t·do_t (λ given: q̃_t is linear in q_t and nothing else reads q_t)
//   CQ2 λ ≡ 0 and no final-statistics cotangent: dq, dk, dv, the decays' and S_0's gradients are the
//       backbone's with q, and the statistics' and given decays' gradients are 0
//   CQ3 no initial statistics, no final-statistics cotangent: Σ_t dk^cond_t = 0 (Σ_t is invariant
//       under k_j → k_j + c for every j)
//   CQ4 Σ_t k_t·dk^cond_t + 2⟨C_0, dC_0⟩ + m_0·dm_0 = 2 Σ_t λ_t dλ_t + 2⟨C_T, dC_T⟩ + m_T·dm_T (k → c k,
//       C_0 → c² C_0, m_0 → c m_0 multiplies every Σ_t by c², as λ → c² λ does)
//   CQ5 causality (CCQ-C5): with do_s = 0 for s ≥ t0 and no final cotangents, every gradient of a token
//       t ≥ t0 (q, k, v, λ, the decays, β) is 0.
//
// Reproducing: rerun with RC_PARAMS="reproduce=..." as RapidCheck prints it; the case is also
// recorded as the JUnit property failing_case.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "ccq_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

struct IdentityCase {
  std::uint64_t seed = 0;
  CcqBackbone backbone = CcqBackbone::gdn;
  CcqCovariance covariance = CcqCovariance::uniform;
  Shape shape{1, 1, 1, false};
  Seeds seeds = Seeds::both;
  Eigen::Index checkpoint = 1;

  std::string describe() const {
    return ccq_config_name(backbone, covariance) + " seed=" + std::to_string(seed) + " T=" + std::to_string(shape.T) +
           " dk=" + std::to_string(shape.dk) + " dv=" + std::to_string(shape.dv) +
           (shape.initial_state ? " with initial state and statistics" : " empty start") + " cotangents " +
           seeds_name(seeds) + " checkpoint=" + std::to_string(checkpoint);
  }
};

IdentityCase gen_case() {
  IdentityCase c;
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.backbone = *rc::gen::element(CcqBackbone::gdn, CcqBackbone::gla);
  c.covariance = *rc::gen::element(CcqCovariance::uniform, CcqCovariance::decayed_backbone, CcqCovariance::decayed_given);
  c.shape = {*rc::gen::inRange(1, 13), *rc::gen::inRange(1, 4), *rc::gen::inRange(1, 4), *rc::gen::arbitrary<bool>()};
  c.seeds = *rc::gen::element(Seeds::d_o, Seeds::d_final_state, Seeds::both);
  c.checkpoint = *rc::gen::inRange(1, 6);
  RC_LOG() << c.describe();
  ::testing::Test::RecordProperty("failing_case", c.describe());
  return c;
}

template <CcqBackbone B>
struct Evaluated {
  CcqProblem<B, rational> p;
  ccq::Cotangents<rational> cot;
  ccq::Result<rational> fwd;
  CcqTangent<B, rational> g;
  Mat<rational> dk_cond;  // the conditioner's part of dk
};

template <CcqBackbone B>
Evaluated<B> evaluate(const IdentityCase& c, CcqProblem<B, rational> p, ccq::Cotangents<rational> cot) {
  Evaluated<B> e{std::move(p), std::move(cot), {}, {}, {}};
  e.fwd = ccq::serial(e.p);
  e.g = ccq::backward(e.p, e.cot, c.checkpoint);
  auto read = e.p.backbone;
  read.q = ccq::conditioned_queries_recurrent(e.p.backbone.q, e.p.backbone.k, *e.p.opt.lambda, ccq::covariance_decays(e.p),
                                              e.p.start_stats()).q;
  e.dk_cond = e.g.backbone.dk - ccq::detail::backbone_backward(read, dr::Cotangents<rational>{e.cot.d_o, e.cot.d_final_state},
                                                                 c.checkpoint).dk;
  return e;
}

template <CcqBackbone B>
Evaluated<B> evaluate(const IdentityCase& c) {
  return evaluate<B>(c, make_ccq_rational_problem<B>(c.shape, c.covariance, c.seed),
                     make_ccq_cotangents(c.shape, c.seeds, c.seed + 1));
}

// Runs check<B>(case) for the case's backbone.
template <class Check>
void for_backbone(const IdentityCase& c, Check check) {
  if (c.backbone == CcqBackbone::gdn) check.template operator()<CcqBackbone::gdn>(c);
  else check.template operator()<CcqBackbone::gla>(c);
}

rational frobenius(const Mat<rational>& a, const Mat<rational>& b) { return a.cwiseProduct(b).sum(); }

RC_GTEST_PROP(CcqBackwardIdentities, CQ1QueryGradientPairsWithOutputGradient, ()) {
  for_backbone(gen_case(), []<CcqBackbone B>(const IdentityCase& c) {
    const Evaluated<B> e = evaluate<B>(c);
    const Mat<rational> d_o = e.cot.d_o.size() ? e.cot.d_o : Mat<rational>::Zero(c.shape.T, c.shape.dv);
    for (Eigen::Index t = 0; t < c.shape.T; ++t)
      RC_ASSERT(rational(e.p.backbone.q.row(t).dot(e.g.backbone.dq.row(t))) == rational(e.fwd.o.row(t).dot(d_o.row(t))));
  });
}

RC_GTEST_PROP(CcqBackwardIdentities, CQ2ZeroLambdaGivesTheBackbonesGradients, ()) {
  for_backbone(gen_case(), []<CcqBackbone B>(const IdentityCase& c) {
    CcqProblem<B, rational> p = make_ccq_rational_problem<B>(c.shape, c.covariance, c.seed);
    p.opt.lambda->setZero();
    ccq::Cotangents<rational> cot = make_ccq_cotangents(c.shape, c.seeds, c.seed + 1);
    cot.d_final_stats.reset();
    const auto g = ccq::backward(p, cot, c.checkpoint);
    const auto bb = ccq::detail::backbone_backward(p.backbone, dr::Cotangents<rational>{cot.d_o, cot.d_final_state}, c.checkpoint);
    RC_ASSERT(g.backbone.dq == bb.dq);
    RC_ASSERT(g.backbone.dk == bb.dk);
    RC_ASSERT(g.backbone.dv == bb.dv);
    RC_ASSERT(g.backbone.d_initial_state == bb.d_initial_state);
    if constexpr (B == CcqBackbone::gdn) {
      RC_ASSERT(g.backbone.dalpha == bb.dalpha);
      RC_ASSERT(g.backbone.dbeta == bb.dbeta);
    } else {
      RC_ASSERT(g.backbone.da == bb.da);
    }
    RC_ASSERT(g.d_initial_stats.c.isZero(0) && g.d_initial_stats.m.isZero(0) && g.d_initial_stats.n == 0);
    RC_ASSERT(g.d_decay.isZero(0));
  });
}

RC_GTEST_PROP(CcqBackwardIdentities, CQ3CovarianceIsShiftInvariantInTheKeys, ()) {
  IdentityCase c0 = gen_case();
  c0.shape.initial_state = false;
  for_backbone(c0, []<CcqBackbone B>(const IdentityCase& c) {
    ccq::Cotangents<rational> cot = make_ccq_cotangents(c.shape, c.seeds, c.seed + 1);
    cot.d_final_stats.reset();
    const Evaluated<B> e = evaluate<B>(c, make_ccq_rational_problem<B>(c.shape, c.covariance, c.seed), cot);
    RC_ASSERT(e.dk_cond.colwise().sum().isZero(0));
  });
}

RC_GTEST_PROP(CcqBackwardIdentities, CQ4CovarianceIsQuadraticInTheKeys, ()) {
  for_backbone(gen_case(), []<CcqBackbone B>(const IdentityCase& c) {
    const Evaluated<B> e = evaluate<B>(c);
    const ccq::KeyStats<rational> s0 = e.p.start_stats();
    rational lhs = frobenius(e.p.backbone.k, e.dk_cond) + 2 * frobenius(s0.c, e.g.d_initial_stats.c) +
                   rational(s0.m.dot(e.g.d_initial_stats.m));
    rational rhs = 2 * rational(e.p.opt.lambda->dot(e.g.dlambda));
    if (e.cot.d_final_stats)
      rhs += 2 * frobenius(e.fwd.final_stats.c, e.cot.d_final_stats->c) + rational(e.fwd.final_stats.m.dot(e.cot.d_final_stats->m));
    RC_ASSERT(lhs == rhs);
  });
}

RC_GTEST_PROP(CcqBackwardIdentities, CQ5LaterTokensGetNoGradientFromEarlierOutputs, ()) {
  IdentityCase c0 = gen_case();
  c0.seeds = Seeds::d_o;
  const auto t0 = static_cast<Eigen::Index>(*rc::gen::inRange<int>(0, static_cast<int>(c0.shape.T)));
  for_backbone(c0, [t0]<CcqBackbone B>(const IdentityCase& c) {
    const CcqProblem<B, rational> p = make_ccq_rational_problem<B>(c.shape, c.covariance, c.seed);
    ccq::Cotangents<rational> cot = make_ccq_cotangents(c.shape, c.seeds, c.seed + 1);
    const Eigen::Index n = c.shape.T - t0;
    cot.d_o.bottomRows(n).setZero();
    const auto g = ccq::backward(p, cot, c.checkpoint);
    RC_ASSERT(g.backbone.dq.bottomRows(n).isZero(0));
    RC_ASSERT(g.backbone.dk.bottomRows(n).isZero(0));
    RC_ASSERT(g.backbone.dv.bottomRows(n).isZero(0));
    RC_ASSERT(g.dlambda.tail(n).isZero(0));
    if (g.d_decay.size() != 0) RC_ASSERT(g.d_decay.tail(n).isZero(0));
    if constexpr (B == CcqBackbone::gdn) {
      RC_ASSERT(g.backbone.dalpha.tail(n).isZero(0));
      RC_ASSERT(g.backbone.dbeta.tail(n).isZero(0));
    } else {
      RC_ASSERT(g.backbone.da.bottomRows(n).isZero(0));
    }
  });
}

}  // namespace
