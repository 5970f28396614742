// The CCQ adjoint in exact rational arithmetic (docs/gradients.md, "CCQ"): on the GDN and GLA backbones,
// uniform covariance, decayed with the backbone's decay and decayed with given decays; λ given directly;
// with and without initial statistics and S_0; T ∈ {1, 2, 5, 17}, d_k ≠ d_v both ways; do only, (dht,
// final statistics) only and both, each at checkpoint C ∈ {1, 3, 64}: the duality
//   ⟨do, ȯ⟩ + ⟨dht, Ṡ_T⟩ + ⟨(dC_T, dm_T, dn_T), (Ċ_T, ṁ_T, ṅ_T)⟩ = Σ_x ⟨∇_x L, δx⟩
// holds exactly (residual 0) for a random rational tangent δ of every input (the backbone's q, k, v,
// decays, β, S_0; λ; the given decays; the initial statistics C_0, m_0, n_0), J·δ from ccq::serial over
// Dual<rational>. A final-statistics cotangent of the wrong shape is refused, naming d_final_stats.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <tuple>

#include "ccq_backward_check.h"

namespace {

using namespace larc::testing::backward_checks;

// backbone, covariance, T, initial state and statistics
using Param = std::tuple<CcqBackbone, CcqCovariance, Eigen::Index, bool>;

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [b, cov, T, init] = info.param;
  return ccq_config_name(b, cov) + "_T" + std::to_string(T) + (init ? "_init" : "_empty");
}

template <CcqBackbone B>
void expect_duality(CcqCovariance cov, const Shape& shape, std::uint64_t seed) {
  const CcqProblem<B, rational> p = make_ccq_rational_problem<B>(shape, cov, seed);
  const CcqTangent<B, rational> delta = make_ccq_tangent<B>(shape, seed + 1);
  const ccq::Result<rational> jvp = ccq_output_tangents<B, rational>(p, delta);
  for (const Seeds w : kAllSeeds) {
    const ccq::Cotangents<rational> cot = make_ccq_cotangents(shape, w, seed + 2);
    const rational lhs = ccq_cotangent_pairing(cot, jvp).value;
    for (const Eigen::Index checkpoint : {1, 3, 64}) {
      const rational rhs = ccq_input_pairing<B, rational>(ccq::backward(p, cot, checkpoint), delta).value;
      EXPECT_EQ(lhs - rhs, rational(0)) << ccq_config_name(B, cov) << " seed " << seed << " T " << shape.T
                                        << " cotangents " << seeds_name(w) << " checkpoint " << checkpoint;
    }
  }
}

class CcqBackwardRational : public ::testing::TestWithParam<Param> {};

TEST_P(CcqBackwardRational, AdjointIsTheTransposeOfTheDualJacobian) {
  const auto& [b, cov, T, init] = GetParam();
  const Shape shape = init ? Shape{T, 3, 2, true} : Shape{T, 2, 3, false};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 10 * static_cast<std::uint64_t>(cov) +
                             2 * static_cast<std::uint64_t>(b) + (init ? 1 : 0);
  RecordProperty("seed", std::to_string(seed));
  if (b == CcqBackbone::gdn) expect_duality<CcqBackbone::gdn>(cov, shape, seed);
  else expect_duality<CcqBackbone::gla>(cov, shape, seed);
}

INSTANTIATE_TEST_SUITE_P(Grid, CcqBackwardRational,
                         ::testing::Combine(::testing::Values(CcqBackbone::gdn, CcqBackbone::gla),
                                            ::testing::Values(CcqCovariance::uniform, CcqCovariance::decayed_backbone,
                                                              CcqCovariance::decayed_given),
                                            ::testing::Values<Eigen::Index>(1, 2, 5, 17), ::testing::Bool()),
                         param_name);

TEST(CcqBackwardRational, RefusesFinalStatisticsCotangentOfTheWrongShape) {
  const Shape shape{4, 2, 3, false};
  const auto p = make_ccq_rational_problem<CcqBackbone::gdn>(shape, CcqCovariance::uniform, 3);
  ccq::Cotangents<rational> cot = make_ccq_cotangents(shape, Seeds::both, 4);
  cot.d_final_stats->m = Vec<rational>::Zero(3);
  try {
    ccq::backward(p, cot);
    ADD_FAILURE() << "a 3-entry dm_T was accepted for d_k = 2";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("d_final_stats"), std::string::npos) << e.what();
  }
}

}  // namespace
