// la_batched: FLA's [B, T, H, D] layout cut into heads, each head equal to its own Problem run, the
// initial memory threaded through, and shape errors naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "larc/properties/generators.h"
#include "larc/reference/linear_attention.h"

using namespace larc::ref;
namespace la = larc::ref::linear_attention;

namespace {
Tensor<double> random_tensor(larc::props::Rng& rng, std::vector<std::int64_t> shape) {
  Tensor<double> t(std::move(shape));
  for (double& x : t.data) x = rng.normal();
  return t;
}
}  // namespace

TEST(LinearAttentionBatched, EveryHeadEqualsItsOwnRun) {
  larc::props::Rng rng(3);
  const std::int64_t B = 2, T = 13, H = 3, K = 5, V = 4;
  const auto q = random_tensor(rng, {B, T, H, K}), k = random_tensor(rng, {B, T, H, K}), v = random_tensor(rng, {B, T, H, V});
  const auto s0 = random_tensor(rng, {B, H, K, V});
  Tensor<double> z0({B, H, K});
  for (double& x : z0.data) x = 1.0 + std::abs(rng.normal());
  for (bool ratio : {false, true}) {
    const la::Options<double> opt{la::FeatureMap::elu_plus_one, ratio, 1e-6, 1.0};
    for (Form form : {Form::serial, Form::materialized, Form::chunked}) {
      const auto r = la::la_batched(q, k, v, opt, s0, z0, form, 4);
      ASSERT_EQ(r.o.shape, (std::vector<std::int64_t>{B, T, H, V}));
      for (std::int64_t b = 0; b < B; ++b) {
        for (std::int64_t h = 0; h < H; ++h) {
          la::Problem<double> p{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h), opt, head_state(s0, b, h), {}};
          p.initial_normalizer = Vec<double>(Eigen::Map<const Vec<double>>(&z0.data[(b * H + h) * K], K));
          const auto ref = la::serial(p);
          EXPECT_LT((head_rows(r.o, b, h) - ref.o).cwiseAbs().maxCoeff(), 1e-12 * (1 + ref.o.cwiseAbs().maxCoeff()));
          EXPECT_LT((head_state(r.final_state, b, h) - ref.final_memory.s).cwiseAbs().maxCoeff(), 1e-12 * (1 + ref.final_memory.s.cwiseAbs().maxCoeff()));
          for (std::int64_t i = 0; i < K; ++i)
            EXPECT_NEAR(r.final_normalizer.data[(b * H + h) * K + i], ref.final_memory.z(i), 1e-12 * (1 + std::abs(ref.final_memory.z(i))));
        }
      }
    }
  }
}

TEST(LinearAttentionBatched, ShapeErrorsNameTheField) {
  larc::props::Rng rng(4);
  const auto q = random_tensor(rng, {1, 4, 2, 3}), v = random_tensor(rng, {1, 4, 2, 2});
  const la::Options<double> opt;
  try {
    la::la_batched(q, random_tensor(rng, {1, 4, 2, 5}), v, opt);
    FAIL() << "mismatched k accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("k: expected shape [1, 4, 2, 3], got [1, 4, 2, 5]"));
  }
  try {
    la::la_batched(q, q, v, opt, Tensor<double>({1, 2, 3, 3}));
    FAIL() << "mismatched initial_state accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("initial_state: expected shape [1, 2, 3, 2]"));
  }
}
