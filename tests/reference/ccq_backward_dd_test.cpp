// The CCQ adjoint in rounded arithmetic at long sequences (docs/gradients.md, "CCQ"): the duality
//   ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ + ⟨(dC_T, dm_T, dn_T), (Ċ_T, ṁ_T, ṅ_T)⟩ = Σ_x ⟨∇_x L, δx⟩
// in dd_real, J·δ over Dual<dd> from serial's composition (conditioned_queries_recurrent with λ given,
// then the backbone's serial form: ccq::serial itself instantiates λ = σ(wᵀq + b), and duals have no
// e^x), on the GDN (unit keys, so every transition is a contraction) and GLA backbones, the three
// covariances, with initial statistics and S_0, T ∈ {64, 130} (beyond the exact grid's 17 tokens),
// checkpoints C ∈ {1, 16}. The residual must stay below (T + d_k) u M, u dd's unit roundoff and M the
// sum of both sides' |terms|; the worst measured residual / ((T + d_k) u M) over this grid is 0.005.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "ccq_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::dd;

using Param = std::tuple<CcqBackbone, CcqCovariance, Eigen::Index>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [b, cov, T] = info.param;
  return ccq_config_name(b, cov) + "_T" + std::to_string(T);
}

// J·δ: ccq::serial's two stages over duals.
template <CcqBackbone B>
ccq::Result<dd> output_tangents(const CcqProblem<B, dd>& p, const CcqTangent<B, dd>& delta) {
  using D = larc::ref::Dual<dd>;
  const CcqProblem<B, D> pd = ccq_dual_problem<B, dd>(p, delta);
  const ccq::Conditioned<D> conditioned = ccq::conditioned_queries_recurrent(
      pd.backbone.q, pd.backbone.k, *pd.opt.lambda, ccq::covariance_decays(pd), pd.start_stats());
  auto read = pd.backbone;
  read.q = conditioned.q;
  larc::ref::SeqResult<D> r;
  if constexpr (B == CcqBackbone::gdn) r = dr::serial(read);
  else r = gla::serial(read);
  return tangents_of_result<dd>(ccq::Result<D>{r.o, r.final_state, conditioned.final_stats});
}

template <CcqBackbone B>
void expect_duality_to_rounding(CcqCovariance cov, Eigen::Index T) {
  const Shape shape{T, 3, 2, true};
  const std::uint64_t seed = 9000 + static_cast<std::uint64_t>(T) + 10 * static_cast<std::uint64_t>(cov) +
                             2 * static_cast<std::uint64_t>(B);
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  const CcqProblem<B, dd> p = cast_ccq_problem<B, dd>(make_ccq_rational_problem<B>(shape, cov, seed, /*unit_keys=*/true));
  const CcqTangent<B, dd> delta = cast_ccq_tangent<B, dd>(make_ccq_tangent<B>(shape, seed + 1));
  const ccq::Cotangents<dd> cot = cast_ccq_cotangents<dd>(make_ccq_cotangents(shape, Seeds::both, seed + 2));
  const Pairing<dd> lhs = ccq_cotangent_pairing(cot, output_tangents<B>(p, delta));
  const double u = larc::ref::to_double(larc::ref::unit_roundoff<dd>());
  for (const Eigen::Index checkpoint : {1, 16}) {
    const Pairing<dd> rhs = ccq_input_pairing<B, dd>(ccq::backward(p, cot, checkpoint), delta);
    const double residual = std::fabs(larc::ref::to_double(dd(lhs.value - rhs.value)));
    const double scaled = static_cast<double>(T + shape.dk) * u * larc::ref::to_double(dd(lhs.magnitude + rhs.magnitude));
    EXPECT_LE(residual, scaled) << ccq_config_name(B, cov) << " T " << T << " checkpoint " << checkpoint
                                << ": residual / ((T + d_k) u M) = " << residual / scaled;
  }
}

class CcqBackwardDd : public ::testing::TestWithParam<Param> {};

TEST_P(CcqBackwardDd, AdjointIsTheTransposeOfTheDualJacobianToRounding) {
  const auto& [b, cov, T] = GetParam();
  if (b == CcqBackbone::gdn) expect_duality_to_rounding<CcqBackbone::gdn>(cov, T);
  else expect_duality_to_rounding<CcqBackbone::gla>(cov, T);
}

INSTANTIATE_TEST_SUITE_P(Grid, CcqBackwardDd,
                         ::testing::Combine(::testing::Values(CcqBackbone::gdn, CcqBackbone::gla),
                                            ::testing::Values(CcqCovariance::uniform, CcqCovariance::decayed_backbone,
                                                              CcqCovariance::decayed_given),
                                            ::testing::Values<Eigen::Index>(64, 130)),
                         param_name);

}  // namespace
