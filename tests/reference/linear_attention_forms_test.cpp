// Linear attention (SPEC "Baselines", LA) in double and dd_real: serial == materialized == chunked
// (C ∈ {1, 7, 16, 64}) for plain reads with identity and ELU + 1 features and ratio reads with
// ELU + 1 (positive features; identity ratios cancel and are checked exactly in rationals), for
// T ∈ {1, 2, 63, 64, 65, 300}, with and without an initial memory, d_k ≠ d_v both ways; outputs and
// final memory (S and z) to the tolerance of linear_attention_cases.h. Also: stepping a State
// token by token, and split runs carrying the memory, equal one run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <tuple>

#include "linear_attention_cases.h"

namespace {

using namespace larc::testing;
using larc::ref::dd;

using Dims = std::pair<Eigen::Index, Eigen::Index>;  // (d_k, d_v)
using Param = std::tuple<int, Eigen::Index, bool, Dims>;

constexpr LaVariant kVariants[] = {{la::FeatureMap::identity, false},
                                   {la::FeatureMap::elu_plus_one, false},
                                   {la::FeatureMap::elu_plus_one, true}};

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  const auto& [variant, T, init, dims] = info.param;
  return variant_name(kVariants[variant]) + "_T" + std::to_string(T) + (init ? "_memory" : "_empty") + "_dk" +
         std::to_string(dims.first) + "_dv" + std::to_string(dims.second);
}

template <class S>
void check_grid_case(const Param& param) {
  const auto& [variant, T, init, dims] = param;
  const LaShape shape{T, dims.first, dims.second, init};
  const std::uint64_t seed = 1000 * static_cast<std::uint64_t>(T) + 10 * dims.first + (init ? 1 : 0) + 100000 * variant;
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  expect_la_forms_agree(make_la_problem<S>(kVariants[variant], shape, seed), describe(kVariants[variant], shape, seed));
}

class LinearAttentionFormsDouble : public ::testing::TestWithParam<Param> {};
TEST_P(LinearAttentionFormsDouble, SerialMaterializedChunkedAgree) { check_grid_case<double>(GetParam()); }

class LinearAttentionFormsDoubleDouble : public ::testing::TestWithParam<Param> {};
TEST_P(LinearAttentionFormsDoubleDouble, SerialMaterializedChunkedAgree) { check_grid_case<dd>(GetParam()); }

const auto kGrid = ::testing::Combine(::testing::Values(0, 1, 2), ::testing::Values<Eigen::Index>(1, 2, 63, 64, 65, 300),
                                      ::testing::Bool(), ::testing::Values(Dims{5, 3}, Dims{3, 7}));
INSTANTIATE_TEST_SUITE_P(Grid, LinearAttentionFormsDouble, kGrid, param_name);
INSTANTIATE_TEST_SUITE_P(Grid, LinearAttentionFormsDoubleDouble, kGrid, param_name);

// Tokens [begin, begin + len) of p, starting from the given memory.
template <class S>
la::Problem<S> la_piece(const la::Problem<S>& p, Eigen::Index begin, Eigen::Index len, const la::Memory<S>& start) {
  return la::Problem<S>{p.q.middleRows(begin, len), p.k.middleRows(begin, len), p.v.middleRows(begin, len), p.opt,
                        start.s, start.z};
}

// Stepping a State by hand (the streaming decode) reproduces serial bit for bit, and each piece of a
// split run, started from the previous piece's memory, reproduces the whole run: exactly for serial
// (the same operations), to tolerance for the other forms.
TEST(LinearAttentionStreaming, StepByStepAndSplitRunsEqualOneRun) {
  using Form = std::function<la::Result<double>(const la::Problem<double>&)>;
  const std::pair<std::string, Form> forms[] = {
      {"serial", [](const la::Problem<double>& p) { return la::serial(p); }},
      {"materialized", [](const la::Problem<double>& p) { return la::materialized(p); }},
      {"chunked C=16", [](const la::Problem<double>& p) { return la::chunked(p, 16); }}};
  for (const LaVariant& var : kVariants)
    for (const bool init : {false, true}) {
      const LaShape shape{65, 5, 3, init};
      const std::uint64_t seed = 4242;
      const la::Problem<double> p = make_la_problem<double>(var, shape, seed);
      const std::string label = describe(var, shape, seed);

      la::State<double> st(p.opt, la::start_memory(p));
      Mat<double> o(p.T(), p.dv());
      for (Eigen::Index t = 0; t < p.T(); ++t)
        o.row(t) = st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose()).transpose();
      const la::Result<double> serial = la::serial(p);
      EXPECT_TRUE(o == serial.o) << label;
      EXPECT_TRUE(st.memory().s == serial.final_memory.s && st.memory().z == serial.final_memory.z) << label;

      for (const auto& [name, form] : forms) {
        const la::Result<double> whole = form(p);
        for (const Eigen::Index split : {Eigen::Index{0}, Eigen::Index{1}, Eigen::Index{16}, Eigen::Index{33},
                                         Eigen::Index{64}, Eigen::Index{65}}) {
          const la::Result<double> first = form(la_piece(p, 0, split, la::start_memory(p)));
          const la::Result<double> second = form(la_piece(p, split, p.T() - split, first.final_memory));
          la::Result<double> joined{Mat<double>(p.T(), p.dv()), second.final_memory};
          joined.o << first.o, second.o;
          const std::string what = label + " " + name + " split at " + std::to_string(split);
          if (name == "serial") {
            EXPECT_TRUE(joined.o == whole.o) << what;
            EXPECT_TRUE(joined.final_memory.s == whole.final_memory.s) << what;
            EXPECT_TRUE(joined.final_memory.z == whole.final_memory.z) << what;
          } else {
            expect_same_la_result(joined, whole, p, what);
          }
        }
      }
    }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no std::invalid_argument thrown>";
}

TEST(LinearAttentionShapes, BadShapesNameTheField) {
  using ::testing::HasSubstr;
  const la::Problem<double> good = make_la_problem<double>(kVariants[2], {9, 4, 3, true}, 5);
  auto each_form = [](const la::Problem<double>& p, const std::string& field) {
    EXPECT_THAT(error_of([&] { la::serial(p); }), HasSubstr(field));
    EXPECT_THAT(error_of([&] { la::materialized(p); }), HasSubstr(field));
    EXPECT_THAT(error_of([&] { la::chunked(p, 4); }), HasSubstr(field));
  };
  { auto p = good; p.k.conservativeResize(8, 4); each_form(p, "k must be T×d_k"); }
  { auto p = good; p.k.conservativeResize(9, 5); each_form(p, "k must be T×d_k"); }
  { auto p = good; p.v.conservativeResize(10, 3); each_form(p, "v must have T rows"); }
  { auto p = good; p.initial_state->conservativeResize(3, 4); each_form(p, "initial_state must be d_k×d_v"); }
  { auto p = good; p.initial_normalizer->conservativeResize(5); each_form(p, "initial_normalizer must have d_k entries"); }
  EXPECT_THAT(error_of([&] { la::chunked(good, 0); }), HasSubstr("chunk size must be >= 1"));
}

}  // namespace
