// The batched wrappers with FLA's conventions (delta_rule.h): gdn_batched, deltanet_batched and
// kla_batched on [B, T, H, D] tensors (B = 2, H = 3) equal the per-head Problem run of the same form
// bit for bit; the default scale is d_k^{-1/2}; bad shapes throw std::invalid_argument naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "larc/properties/generators.h"
#include "larc/reference/delta_rule.h"

namespace {

namespace ref = larc::ref;
namespace dr = larc::ref::delta_rule;
namespace props = larc::props;
using ::testing::HasSubstr;
using ref::Mat;
using ref::Tensor;
using ref::Vec;

constexpr std::int64_t B = 2, T = 37, H = 3, DK = 4, DV = 5;
constexpr Eigen::Index kChunk = 7;

Tensor<double> random_tensor(props::Rng& rng, std::vector<std::int64_t> shape, double lo, double hi) {
  Tensor<double> t(std::move(shape));
  for (double& x : t.data) x = rng.uniform(lo, hi);
  return t;
}

struct Inputs {
  Tensor<double> q, k, v, g, beta, eta, s0;
};

// Keys in [−0.5, 0.5]^4 (‖k‖² ≤ 1, so β ≤ 1 keeps the recurrence stable), log-decays in [−0.2, 0].
Inputs make_inputs(std::uint64_t seed) {
  props::Rng rng(seed);
  Inputs in;
  in.q = random_tensor(rng, {B, T, H, DK}, -1, 1);
  in.k = random_tensor(rng, {B, T, H, DK}, -0.5, 0.5);
  in.v = random_tensor(rng, {B, T, H, DV}, -1, 1);
  in.g = random_tensor(rng, {B, T, H}, -0.2, 0);
  in.beta = random_tensor(rng, {B, T, H}, 0.05, 1);
  in.eta = random_tensor(rng, {B, T, H}, 0.05, 1);
  in.s0 = random_tensor(rng, {B, H, DK, DV}, -1, 1);
  return in;
}

// Row-major [B, T, H, D] indexing written out here, independently of tensor.h's head helpers.
Mat<double> head(const Tensor<double>& x, std::int64_t b, std::int64_t h) {
  const std::int64_t D = x.dim(3);
  Mat<double> m(T, D);
  for (std::int64_t t = 0; t < T; ++t)
    for (std::int64_t d = 0; d < D; ++d) m(t, d) = x.data[static_cast<std::size_t>(((b * T + t) * H + h) * D + d)];
  return m;
}
Vec<double> gate(const Tensor<double>& x, std::int64_t b, std::int64_t h) {
  Vec<double> g(T);
  for (std::int64_t t = 0; t < T; ++t) g(t) = x.data[static_cast<std::size_t>((b * T + t) * H + h)];
  return g;
}
Mat<double> state(const Tensor<double>& s, std::int64_t b, std::int64_t h) {
  Mat<double> m(DK, DV);
  for (std::int64_t i = 0; i < DK; ++i)
    for (std::int64_t j = 0; j < DV; ++j) m(i, j) = s.data[static_cast<std::size_t>(((b * H + h) * DK + i) * DV + j)];
  return m;
}

ref::SeqResult<double> run(dr::Form form, const dr::Problem<double>& p) { return dr::run(p, form, kChunk); }

constexpr dr::Form kForms[] = {dr::Form::serial, dr::Form::materialized, dr::Form::chunked, dr::Form::streamed};
using ref::form_name;

enum class Mech { deltanet, gdn, kla };

dr::BatchedResult<double> run_batched(Mech m, const Inputs& in, dr::Form form, std::optional<double> scale,
                                      bool with_s0) {
  const std::optional<Tensor<double>> s0 = with_s0 ? std::optional<Tensor<double>>(in.s0) : std::nullopt;
  switch (m) {
    case Mech::deltanet: return dr::deltanet_batched(in.q, in.k, in.v, in.beta, scale, s0, form, kChunk);
    case Mech::gdn: return dr::gdn_batched(in.q, in.k, in.v, in.g, in.beta, scale, s0, form, kChunk);
    case Mech::kla: return dr::kla_batched(in.q, in.k, in.v, in.g, in.eta, 1e-6, scale, s0, form, kChunk);
  }
  throw std::logic_error("unknown mechanism");
}

// The per-head problem, built from the definitions: α = e^g (1 for DeltaNet), KLA's β = η/(‖k‖² + ε).
dr::Problem<double> head_problem(Mech m, const Inputs& in, std::int64_t b, std::int64_t h, double scale, bool with_s0) {
  dr::Problem<double> p;
  p.q = head(in.q, b, h);
  p.k = head(in.k, b, h);
  p.v = head(in.v, b, h);
  p.alpha = gate(in.g, b, h);  // std::exp, not Eigen's vectorised exp (which may differ in the last bit)
  for (std::int64_t t = 0; t < T; ++t) p.alpha(t) = m == Mech::deltanet ? 1.0 : std::exp(p.alpha(t));
  p.beta = gate(in.beta, b, h);
  if (m == Mech::kla) {
    const Vec<double> eta = gate(in.eta, b, h);
    for (std::int64_t t = 0; t < T; ++t) p.beta(t) = eta(t) / (p.k.row(t).squaredNorm() + 1e-6);
  }
  p.scale = scale;
  if (with_s0) p.initial_state = state(in.s0, b, h);
  return p;
}

class DeltaRuleBatched : public ::testing::TestWithParam<Mech> {};

TEST_P(DeltaRuleBatched, EqualsPerHeadProblemRunForEveryForm) {
  const Mech m = GetParam();
  constexpr std::uint64_t seed = 2301;
  RecordProperty("seed", std::to_string(seed));
  const Inputs in = make_inputs(seed);
  for (const dr::Form form : kForms)
    for (const bool with_s0 : {false, true}) {
      const dr::BatchedResult<double> r = run_batched(m, in, form, 0.75, with_s0);
      ASSERT_EQ(r.o.shape, (std::vector<std::int64_t>{B, T, H, DV}));
      ASSERT_EQ(r.final_state.shape, (std::vector<std::int64_t>{B, H, DK, DV}));
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h) {
          const ref::SeqResult<double> want = run(form, head_problem(m, in, b, h, 0.75, with_s0));
          const std::string what = std::string(form_name(form)) + " b=" + std::to_string(b) + " h=" + std::to_string(h) +
                                   (with_s0 ? " with S0" : "");
          EXPECT_TRUE(head(r.o, b, h) == want.o) << what;
          EXPECT_TRUE(state(r.final_state, b, h) == want.final_state) << what;
        }
    }
}

// d_k = 4, so the default scale d_k^{-1/2} is exactly 1/2, and halving is exact: the default run's
// outputs are bit for bit half of those with scale 1 (and the final state does not depend on scale).
TEST_P(DeltaRuleBatched, DefaultScaleIsOneOverSqrtDk) {
  const Mech m = GetParam();
  const Inputs in = make_inputs(2302);
  EXPECT_EQ(dr::default_scale<double>(DK), 0.5);
  for (const dr::Form form : kForms) {
    const auto by_default = run_batched(m, in, form, std::nullopt, true);
    const auto unscaled = run_batched(m, in, form, 1.0, true);
    const auto explicit_half = run_batched(m, in, form, 0.5, true);
    for (std::size_t i = 0; i < by_default.o.data.size(); ++i) {
      ASSERT_EQ(by_default.o.data[i], 0.5 * unscaled.o.data[i]) << form_name(form) << " element " << i;
      ASSERT_EQ(by_default.o.data[i], explicit_half.o.data[i]) << form_name(form) << " element " << i;
    }
    EXPECT_TRUE(by_default.final_state.data == unscaled.final_state.data) << form_name(form);
  }
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, DeltaRuleBatched, ::testing::Values(Mech::deltanet, Mech::gdn, Mech::kla),
                         [](const ::testing::TestParamInfo<Mech>& info) {
                           return std::string(info.param == Mech::deltanet ? "DeltaNet"
                                              : info.param == Mech::gdn   ? "GDN"
                                                                          : "KLA");
                         });

TEST(DeltaRuleDefaultScale, IsDkToTheMinusHalfInEveryRung) {
  for (const Eigen::Index dk : {1, 3, 4, 64, 100}) {
    EXPECT_DOUBLE_EQ(dr::default_scale<double>(dk), 1.0 / std::sqrt(static_cast<double>(dk)));
    const ref::dd s = dr::default_scale<ref::dd>(dk);
    EXPECT_LE(std::fabs(ref::to_double(ref::dd(s * s * ref::dd(static_cast<double>(dk)) - ref::dd(1.0)))), 1e-30);
  }
}

// The message of the std::invalid_argument f throws, or a marker when it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no std::invalid_argument thrown>";
}

Tensor<double> reshaped(Tensor<double> x, std::vector<std::int64_t> shape) {
  x.shape = std::move(shape);
  x.data.resize(Tensor<double>::count(x.shape));
  return x;
}

TEST(DeltaRuleBatchedShapes, BadShapesNameTheField) {
  const Inputs in = make_inputs(2303);
  const auto gdn = [&](const Inputs& x, std::optional<Tensor<double>> s0 = std::nullopt) {
    return error_of([&] { dr::gdn_batched<double>(x.q, x.k, x.v, x.g, x.beta, std::nullopt, s0); });
  };
  auto with = [&](Tensor<double> Inputs::*field, std::vector<std::int64_t> shape) {
    Inputs x = in;
    x.*field = reshaped(x.*field, std::move(shape));
    return x;
  };
  EXPECT_THAT(gdn(with(&Inputs::q, {B, T, H})), HasSubstr("q: expected shape"));
  EXPECT_THAT(gdn(with(&Inputs::q, {B, T})), HasSubstr("q: expected shape [*, *, *, *], got [2, 37]"));
  {
    Inputs empty_heads = with(&Inputs::q, {B, T, H, 0});
    empty_heads.k = reshaped(empty_heads.k, {B, T, H, 0});
    EXPECT_THAT(gdn(empty_heads), HasSubstr("q: head dimension d_k must be >= 1, got 0"));
  }
  EXPECT_THAT(gdn(with(&Inputs::k, {B, T, H, DK + 1})), HasSubstr("k: expected shape [2, 37, 3, 4]"));
  EXPECT_THAT(gdn(with(&Inputs::k, {B, T + 1, H, DK})), HasSubstr("k: expected shape"));
  EXPECT_THAT(gdn(with(&Inputs::v, {B, T, H + 1, DV})), HasSubstr("v: expected shape"));
  EXPECT_THAT(gdn(with(&Inputs::g, {B, T})), HasSubstr("g: expected shape [2, 37, 3]"));
  EXPECT_THAT(gdn(with(&Inputs::beta, {B, T - 1, H})), HasSubstr("beta: expected shape [2, 37, 3]"));
  EXPECT_THAT(gdn(in, reshaped(in.s0, {B, H, DV, DK})), HasSubstr("initial_state: expected shape [2, 3, 4, 5]"));
  Inputs torn = in;  // a shape that does not match the data
  torn.v.data.pop_back();
  EXPECT_THAT(gdn(torn), HasSubstr("v: expected shape"));

  EXPECT_THAT(error_of([&] { dr::deltanet_batched(in.q, in.k, in.v, reshaped(in.beta, {B, T, H, 1})); }),
              HasSubstr("beta: expected shape"));
  EXPECT_THAT(error_of([&] { dr::kla_batched(in.q, in.k, in.v, in.g, reshaped(in.eta, {B + 1, T, H})); }),
              HasSubstr("eta: expected shape"));
  EXPECT_THAT(error_of([&] { dr::kla_batched(in.q, in.k, in.v, reshaped(in.g, {B, T, H, 1}), in.eta); }),
              HasSubstr("g: expected shape"));
}

TEST(DeltaRuleProblemShapes, BadShapesNameTheField) {
  const dr::Problem<double> good = [] {
    const Inputs in = make_inputs(2304);
    return head_problem(Mech::gdn, in, 0, 0, 0.5, true);
  }();
  auto all_forms = [](const dr::Problem<double>& p) {
    std::vector<std::string> errors;
    for (const dr::Form f : kForms) errors.push_back(error_of([&] { run(f, p); }));
    return errors;
  };
  auto expect_named = [&](dr::Problem<double> p, const std::string& field) {
    for (const std::string& e : all_forms(p)) EXPECT_THAT(e, HasSubstr(field));
  };
  for (const std::string& e : all_forms(good)) EXPECT_EQ(e, "<no std::invalid_argument thrown>");
  { auto p = good; p.beta.conservativeResize(T - 1); expect_named(p, "beta must have T entries"); }
  { auto p = good; p.alpha.conservativeResize(T + 1); expect_named(p, "alpha must have T entries"); }
  { auto p = good; p.k.conservativeResize(T - 1, DK); expect_named(p, "k must be T×d_k"); }
  { auto p = good; p.k.conservativeResize(T, DK + 1); expect_named(p, "k must be T×d_k"); }
  { auto p = good; p.v.conservativeResize(T + 2, DV); expect_named(p, "v must have T rows"); }
  { auto p = good; p.initial_state->conservativeResize(DK, DV + 1); expect_named(p, "initial_state must be d_k×d_v"); }
  EXPECT_THAT(error_of([&] { dr::chunked(good, 0); }), HasSubstr("chunk size must be >= 1"));
}

}  // namespace
