// The second-order HLA and AHLA adjoints' exact identities (docs/gradients.md, "HLA", "Identities"), as
// RapidCheck properties over rational problems (any of the four recurrences, plain or normalised with
// ε = 1/1009 and a dden cotangent, γ = 1 or a rational γ < 1, T ≤ 12, d, d_v ≤ 3, a random checkpoint).
// Every identity must hold with residual exactly 0. With Σ o·do = Σ_t o_t·do_t:
//   HA1 Σ_t v_t·dv_t = Σ o·do                      (o linear in v; den does not read v)
//   HA2 Σ_t q_t·dq_t = Σ_t k_t·dk_t = 2 Σ o·do     (plain: o has degree 2 in q and in k)
//       normalised: = 2 Σ_t (ε (o_t·do_t) / (den_t + ε) + den_t dden_t)
//   HA3 causality (HLA-C9): with do_s = dden_s = 0 for s ≥ t0, dq_t = dk_t = dv_t = 0 for t ≥ t0
//   HA4 at γ = 1 the printed and the derived masked recurrences have the same dq, dk, dv
//   HA5 the materialised forms' adjoints equal the serial adjoints (the printed decay has no such form).
//
// Reproducing: rerun with RC_PARAMS="reproduce=..." as RapidCheck prints it; the case is also
// recorded as the JUnit property failing_case.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <string>

#include "hla_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

struct IdentityCase {
  std::uint64_t seed = 0;
  HlaRecurrence recurrence = HlaRecurrence::second_masked;
  HlaShape shape;
  Eigen::Index checkpoint = 1;

  std::string describe() const {
    return hla_recurrence_name(recurrence) + " " + shape.describe() + " seed=" + std::to_string(seed) +
           " checkpoint=" + std::to_string(checkpoint);
  }
};

IdentityCase gen_case() {
  IdentityCase c;
  c.seed = *rc::gen::arbitrary<std::uint64_t>();
  c.recurrence = *rc::gen::element(HlaRecurrence::second_unmasked, HlaRecurrence::second_masked,
                                    HlaRecurrence::second_masked_as_printed, HlaRecurrence::ahla);
  c.shape = {*rc::gen::inRange(1, 13), *rc::gen::inRange(1, 4), *rc::gen::inRange(1, 4), *rc::gen::arbitrary<bool>(),
             *rc::gen::arbitrary<bool>()};
  c.checkpoint = *rc::gen::inRange(1, 6);
  RC_LOG() << c.describe();
  ::testing::Test::RecordProperty("failing_case", c.describe());
  return c;
}

struct Evaluated {
  hla::Problem<rational> p;
  hla::Cotangents<rational> cot;
  hla::Result<rational> fwd;
  hla::Gradients<rational> g;
};

Evaluated evaluate(const IdentityCase& c) {
  Evaluated e{make_hla_rational_problem(c.shape, c.seed), make_hla_cotangents(c.shape, c.seed + 1), {}, {}};
  e.fwd = hla_serial(c.recurrence, e.p);
  e.g = hla_backward(c.recurrence, e.p, e.cot, c.checkpoint);
  return e;
}

rational output_pairing(const Evaluated& e) { return e.fwd.o.cwiseProduct(e.cot.d_o).sum(); }

rational frobenius(const Mat<rational>& a, const Mat<rational>& b) { return a.cwiseProduct(b).sum(); }

RC_GTEST_PROP(HlaBackwardIdentities, HA1LossIsLinearInValues, ()) {
  const Evaluated e = evaluate(gen_case());
  RC_ASSERT(frobenius(e.p.v, e.g.dv) == output_pairing(e));
}

RC_GTEST_PROP(HlaBackwardIdentities, HA2QueriesAndKeysEnterQuadratically, ()) {
  const Evaluated e = evaluate(gen_case());
  rational want = 0;
  if (!e.p.opt.normalized) {
    want = 2 * output_pairing(e);
  } else {
    for (Eigen::Index t = 0; t < e.p.T(); ++t)
      want += 2 * (e.p.opt.eps * rational(e.fwd.o.row(t).dot(e.cot.d_o.row(t))) / (e.fwd.den(t) + e.p.opt.eps) +
                   e.fwd.den(t) * (*e.cot.d_den)(t));
  }
  RC_ASSERT(frobenius(e.p.q, e.g.dq) == want);
  RC_ASSERT(frobenius(e.p.k, e.g.dk) == want);
}

RC_GTEST_PROP(HlaBackwardIdentities, HA3LaterTokensGetNoGradientFromEarlierOutputs, ()) {
  const IdentityCase c = gen_case();
  Evaluated e{make_hla_rational_problem(c.shape, c.seed), make_hla_cotangents(c.shape, c.seed + 1), {}, {}};
  const auto t0 = static_cast<Eigen::Index>(*rc::gen::inRange<int>(0, static_cast<int>(c.shape.T)));
  e.cot.d_o.bottomRows(c.shape.T - t0).setZero();
  if (e.cot.d_den) e.cot.d_den->tail(c.shape.T - t0).setZero();
  const hla::Gradients<rational> g = hla_backward(c.recurrence, e.p, e.cot, c.checkpoint);
  RC_ASSERT(g.dq.bottomRows(c.shape.T - t0).isZero(0));
  RC_ASSERT(g.dk.bottomRows(c.shape.T - t0).isZero(0));
  RC_ASSERT(g.dv.bottomRows(c.shape.T - t0).isZero(0));
}

RC_GTEST_PROP(HlaBackwardIdentities, HA4PrintedAndDerivedDecayAgreeWithoutDecay, ()) {
  IdentityCase c = gen_case();
  c.shape.decay = false;
  const hla::Problem<rational> p = make_hla_rational_problem(c.shape, c.seed);
  const hla::Cotangents<rational> cot = make_hla_cotangents(c.shape, c.seed + 1);
  const auto derived = hla::second_backward(p, hla::SecondOrder::masked, cot, c.checkpoint);
  const auto printed = hla::second_backward(p, hla::SecondOrder::masked_as_printed, cot, c.checkpoint);
  RC_ASSERT(derived.dq == printed.dq);
  RC_ASSERT(derived.dk == printed.dk);
  RC_ASSERT(derived.dv == printed.dv);
}

RC_GTEST_PROP(HlaBackwardIdentities, HA5DenseAdjointEqualsSerialAdjoint, ()) {
  IdentityCase c = gen_case();
  if (c.recurrence == HlaRecurrence::second_masked_as_printed) c.recurrence = HlaRecurrence::second_masked;
  const Evaluated e = evaluate(c);
  const hla::Gradients<rational> dense = hla_materialized_backward(c.recurrence, e.p, e.cot);
  RC_ASSERT(dense.dq == e.g.dq);
  RC_ASSERT(dense.dk == e.g.dk);
  RC_ASSERT(dense.dv == e.g.dv);
  RC_ASSERT(dense.dgamma == e.g.dgamma);
}

}  // namespace
