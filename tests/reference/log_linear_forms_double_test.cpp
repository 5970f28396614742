// Log-linear attention, Mamba-2 and GDN variants, in double: materialized == serial == chunked
// (C = 1, 2, 4, …, 64) for T ∈ {1, 2, 3, 15, 16, 17, 300}, d_k ≠ d_v both ways, moderate and hard
// decays, λ with spare columns; plus bad shapes and chunk sizes, which throw naming the field.
#include <gtest/gtest.h>

#include "log_linear_forms_check.h"

namespace {

using namespace larc::testing;
using larc::props::GateKind;
using larc::props::LogLinearCase;

struct Cell {
  ll::Variant variant;
  int T;
  GateKind gates;
};

class LogLinearFormsDouble : public ::testing::TestWithParam<std::tuple<ll::Variant, int, GateKind>> {};

TEST_P(LogLinearFormsDouble, MaterializedSerialChunkedAgree) {
  const auto [variant, T, gates] = GetParam();
  for (std::uint64_t seed : {1u, 2u}) {
    const LogLinearCase c{seed, T, seed == 1 ? 3 : 5, seed == 1 ? 4 : 2, variant, gates, static_cast<int>(seed) - 1};
    ::testing::Test::RecordProperty("case_" + std::to_string(seed), c.describe());
    check_log_linear_forms(larc::props::log_linear_problem(c), c.describe());
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, LogLinearFormsDouble,
                         ::testing::Combine(::testing::Values(ll::Variant::mamba2, ll::Variant::gdn),
                                            ::testing::ValuesIn(kLogLinearTs),
                                            ::testing::Values(GateKind::moderate, GateKind::hard_decay)),
                         [](const auto& info) {
                           return std::string(ll::variant_name(std::get<0>(info.param))) + "_T" +
                                  std::to_string(std::get<1>(info.param)) + "_" +
                                  larc::props::gate_kind_name(std::get<2>(info.param));
                         });

TEST(LogLinearShapes, BadInputsThrowNamingTheField) {
  const auto good = larc::props::log_linear_problem({1, 17, 3, 2, ll::Variant::gdn});
  auto expect_message = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no exception; expected one naming " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto p = good;
  p.lambda = p.lambda.leftCols(5);  // level_count(17) = 6
  expect_message([&] { ll::serial(p); }, "lambda must have at least level_count(T) = ceil(log2 T) + 1 = 6 columns");
  p = good;
  p.beta.resize(3);
  expect_message([&] { ll::materialized(p); }, "beta must have T entries");
  p = good;
  p.k = p.k.leftCols(2);
  expect_message([&] { ll::chunked(p, 4); }, "k must be T×d_k");
  p = good;
  p.alpha.resize(16);
  expect_message([&] { ll::serial(p); }, "alpha must have T entries");
  expect_message([&] { ll::chunked(good, 3); }, "chunk size must be a power of two");
  expect_message([&] { ll::chunked(good, 0); }, "chunk size must be a power of two");
  ll::State<double> st(ll::Variant::mamba2, 3, 2);
  expect_message([&] { st.step(larc::ref::Vec<double>::Zero(3), larc::ref::Vec<double>::Zero(2),
                               larc::ref::Vec<double>::Zero(2), 1, 1, larc::ref::Vec<double>::Ones(1), 1); },
                 "k must have d_k entries");
}

}  // namespace
