// Linear attention with identity features in exact rational arithmetic: serial == materialized ==
// chunked (C ∈ {1, 7, 16, 64}), plain and ratio reads, T ∈ {1, 2, 63, 64, 65}, with and without an
// initial memory, d_k ≠ d_v both ways (d ≤ 4): outputs and final memory exactly equal; split runs
// carrying the memory equal one run exactly for every form; ELU + 1 refuses rationals (it needs exp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <tuple>

#include "linear_attention_cases.h"

namespace {

using namespace larc::testing;
using larc::ref::rational;

using Dims = std::pair<Eigen::Index, Eigen::Index>;  // (d_k, d_v)
using Param = std::tuple<bool, Eigen::Index, bool, Dims>;  // (ratio, T, initial memory, dims)

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [ratio, T, init, dims] = info.param;
  return variant_name({la::FeatureMap::identity, ratio}) + "_T" + std::to_string(T) + (init ? "_memory" : "_empty") +
         "_dk" + std::to_string(dims.first) + "_dv" + std::to_string(dims.second);
}

class LinearAttentionFormsRational : public ::testing::TestWithParam<Param> {};

TEST_P(LinearAttentionFormsRational, SerialMaterializedChunkedAgreeExactly) {
  const auto& [ratio, T, init, dims] = GetParam();
  const LaVariant var{la::FeatureMap::identity, ratio};
  const LaShape shape{T, dims.first, dims.second, init};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 10 * dims.first + (init ? 1 : 0) + (ratio ? 7 : 0);
  RecordProperty("seed", std::to_string(seed));
  expect_la_forms_agree(make_la_rational_problem(var, shape, seed), describe(var, shape, seed));
}

INSTANTIATE_TEST_SUITE_P(Grid, LinearAttentionFormsRational,
                         ::testing::Combine(::testing::Bool(), ::testing::Values<Eigen::Index>(1, 2, 63, 64, 65),
                                            ::testing::Bool(), ::testing::Values(Dims{3, 2}, Dims{2, 4})),
                         param_name);

TEST(LinearAttentionSplitRunRational, EqualsOneRunExactlyForEveryForm) {
  using Form = std::function<la::Result<rational>(const la::Problem<rational>&)>;
  const std::pair<std::string, Form> forms[] = {
      {"serial", [](const la::Problem<rational>& p) { return la::serial(p); }},
      {"materialized", [](const la::Problem<rational>& p) { return la::materialized(p); }},
      {"chunked C=7", [](const la::Problem<rational>& p) { return la::chunked(p, 7); }}};
  for (const bool ratio : {false, true})
    for (const bool init : {false, true}) {
      const LaVariant var{la::FeatureMap::identity, ratio};
      const LaShape shape{33, 3, 2, init};
      const la::Problem<rational> p = make_la_rational_problem(var, shape, 99);
      for (const auto& [name, form] : forms) {
        const la::Result<rational> whole = form(p);
        for (const Eigen::Index split : {0, 1, 7, 16, 32, 33}) {
          const la::Memory<rational> m0 = la::start_memory(p);
          const la::Result<rational> first = form(la::Problem<rational>{
              p.q.topRows(split), p.k.topRows(split), p.v.topRows(split), p.opt, m0.s, m0.z});
          const Eigen::Index rest = p.T() - split;
          const la::Result<rational> second = form(la::Problem<rational>{
              p.q.bottomRows(rest), p.k.bottomRows(rest), p.v.bottomRows(rest), p.opt, first.final_memory.s,
              first.final_memory.z});
          Mat<rational> o(p.T(), p.dv());
          o << first.o, second.o;
          const std::string what = describe(var, shape, 99) + " " + name + " split at " + std::to_string(split);
          EXPECT_TRUE(o == whole.o) << what;
          EXPECT_TRUE(second.final_memory.s == whole.final_memory.s) << what;
          EXPECT_TRUE(second.final_memory.z == whole.final_memory.z) << what;
        }
      }
    }
}

TEST(LinearAttentionRational, EluFeaturesRefuseToRound) {
  la::Problem<rational> p = make_la_rational_problem({la::FeatureMap::identity, false}, {4, 3, 2, false}, 3);
  p.opt.feature = la::FeatureMap::elu_plus_one;
  p.q(0, 0) = rational(-1, 2);  // ELU + 1 of a non-positive entry is exp(x)
  try {
    la::serial(p);
    ADD_FAILURE() << "ELU + 1 on a rational ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("exp is not exact"));
  }
}

}  // namespace
