// GLA (SPEC "Baselines"): serial == materialized == chunked(C) == streamed, exactly in rationals (GLA is
// polynomial in its inputs, so the forms must agree to the last bit of a rational) and to the double
// tolerance of forms_tolerance.h; split runs with the carried state; gla_batched per head and its shape
// errors. Sizes include T ∈ {1, 2, 63, 64, 65, 300}, chunk sizes that do not divide T, d_k ≠ d_v.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "forms_tolerance.h"
#include "larc/proofs_check/exact.h"
#include "larc/properties/generators.h"
#include "larc/reference/gla.h"

using namespace larc::ref;
using larc::testing::expect_agree;
namespace gla = larc::ref::gla;

namespace {

constexpr Eigen::Index kChunks[] = {1, 7, 16, 64};

// Random rationals; decays in (0, 1]; optional initial state.
gla::Problem<rational> rational_problem(Eigen::Index T, Eigen::Index dk, Eigen::Index dv, bool init, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  gla::Problem<rational> p{src.matrix(T, dk), src.matrix(T, dk), src.matrix(T, dv), Mat<rational>(T, dk), rational(1, 2), {}};
  for (Eigen::Index t = 0; t < T; ++t)
    for (Eigen::Index i = 0; i < dk; ++i) p.a(t, i) = src.unit_interval();
  if (init) p.initial_state = src.matrix(dk, dv);
  return p;
}

// N(0, 1) inputs, decays e^g with g ∈ [−1, 0] (and a few hard decays e^-30), scale d_k^{-1/2}.
gla::Problem<double> double_problem(Eigen::Index T, Eigen::Index dk, Eigen::Index dv, bool init, std::uint64_t seed) {
  larc::props::Rng rng(seed);
  gla::Problem<double> p{larc::props::gaussian(rng, T, dk, 1.0), larc::props::gaussian(rng, T, dk, 1.0),
                         larc::props::gaussian(rng, T, dv, 1.0), Mat<double>(T, dk), 1 / std::sqrt(double(dk)), {}};
  for (Eigen::Index t = 0; t < T; ++t)
    for (Eigen::Index i = 0; i < dk; ++i) p.a(t, i) = std::exp(t % 17 == 5 ? -30.0 : rng.uniform(-1.0, 0.0));
  if (init) p.initial_state = larc::props::gaussian(rng, dk, dv, 1.0);
  return p;
}

// Tolerance (derived like linear_attention_cases.h; GLA's transitions Diag(a), a ≤ 1, never amplify):
// |form − serial| ≤ c (T + d_k + 2) u M, M = scale · max_t ‖q_t‖₁ · max_{t,i,j}|S_t,ij| for outputs and
// max |S_t| for the state, c = 4.
struct Bound {
  double output, state;
};
Bound bound(const gla::Problem<double>& p) {
  gla::State<double> st(p.start_state());
  double ms = st.matrix().cwiseAbs().maxCoeff(), q1 = 0;
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(), p.a.row(t).transpose(), p.scale);
    ms = std::max(ms, st.matrix().cwiseAbs().maxCoeff());
    q1 = std::max(q1, p.q.row(t).cwiseAbs().sum());
  }
  const double n = 4.0 * double(p.T() + p.dk() + 2);
  return {n * p.scale * q1 * ms, n * ms};
}

template <class S>
void expect_all_forms_agree(const gla::Problem<S>& p, const Bound& b, const std::string& label) {
  const SeqResult<S> ser = gla::serial(p);
  auto check = [&](const SeqResult<S>& r, const std::string& what) {
    expect_agree<S>(r.o, ser.o, b.output, label + " " + what + " outputs");
    expect_agree<S>(r.final_state, ser.final_state, b.state, label + " " + what + " final state");
  };
  check(gla::materialized(p), "materialized");
  for (Eigen::Index c : kChunks) check(gla::chunked(p, c), "chunked C=" + std::to_string(c));
}

struct Size {
  Eigen::Index T, dk, dv;
};

}  // namespace

TEST(GlaForms, ExactInRationals) {
  for (const Size s : {Size{1, 3, 2}, Size{2, 2, 3}, Size{63, 3, 2}, Size{64, 2, 2}, Size{65, 3, 1}})
    for (bool init : {false, true}) {
      const std::uint64_t seed = 100 * s.T + 10 * s.dk + init;
      expect_all_forms_agree(rational_problem(s.T, s.dk, s.dv, init, seed), {0, 0},
                             "T=" + std::to_string(s.T) + " init=" + std::to_string(init) + " seed=" + std::to_string(seed));
    }
}

TEST(GlaForms, DoubleWithinTheDerivedTolerance) {
  for (const Size s : {Size{1, 5, 3}, Size{2, 4, 6}, Size{63, 8, 5}, Size{64, 5, 8}, Size{65, 16, 7}, Size{300, 9, 4}})
    for (bool init : {false, true}) {
      const auto p = double_problem(s.T, s.dk, s.dv, init, 7 * s.T + init);
      expect_all_forms_agree(p, bound(p), "T=" + std::to_string(s.T) + " init=" + std::to_string(init));
    }
}

TEST(GlaForms, ExactCheckDetectsAWrongDecayOrder) {
  // A chunked form that applied a_t after the write instead of before would differ: plant it by
  // shifting the decays one token and check the exact comparison sees it.
  auto p = rational_problem(9, 2, 2, true, 5);
  auto shifted = p;
  for (Eigen::Index t = 0; t + 1 < p.T(); ++t) shifted.a.row(t) = p.a.row(t + 1);
  EXPECT_FALSE(gla::chunked(shifted, 4).o == gla::serial(p).o);
}

TEST(GlaForms, SplitRunsCarryTheState) {
  const auto p = rational_problem(20, 3, 2, true, 9);
  const auto whole = gla::serial(p);
  auto first = p, second = p;
  first.q = p.q.topRows(11), first.k = p.k.topRows(11), first.v = p.v.topRows(11), first.a = p.a.topRows(11);
  second.q = p.q.bottomRows(9), second.k = p.k.bottomRows(9), second.v = p.v.bottomRows(9), second.a = p.a.bottomRows(9);
  const auto r1 = gla::chunked(first, 4);
  second.initial_state = r1.final_state;
  const auto r2 = gla::chunked(second, 5);
  EXPECT_TRUE(r1.o == whole.o.topRows(11));
  EXPECT_TRUE(r2.o == whole.o.bottomRows(9));
  EXPECT_TRUE(r2.final_state == whole.final_state);
}

TEST(GlaForms, BadShapesNameTheField) {
  auto p = double_problem(5, 3, 2, false, 1);
  p.a = Mat<double>::Ones(5, 2);
  EXPECT_THAT([&] { gla::serial(p); }, ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("a (decays)")));
  EXPECT_THROW(gla::chunked(double_problem(5, 3, 2, false, 1), 0), std::invalid_argument);
}

namespace {
Tensor<double> random_tensor(larc::props::Rng& rng, std::vector<std::int64_t> shape, double lo = -1, double hi = 1) {
  Tensor<double> t(std::move(shape));
  for (double& x : t.data) x = rng.uniform(lo, hi);
  return t;
}
}  // namespace

TEST(GlaBatched, EveryHeadEqualsItsOwnRun) {
  larc::props::Rng rng(11);
  const std::int64_t B = 2, T = 13, H = 3, K = 5, V = 4;
  const auto q = random_tensor(rng, {B, T, H, K}), k = random_tensor(rng, {B, T, H, K}), v = random_tensor(rng, {B, T, H, V});
  const auto gk = random_tensor(rng, {B, T, H, K}, -1, 0), s0 = random_tensor(rng, {B, H, K, V});
  for (Form form : {Form::serial, Form::materialized, Form::chunked, Form::streamed}) {
    const auto r = gla::gla_batched(q, k, v, gk, {}, s0, form, 4);
    ASSERT_EQ(r.o.shape, (std::vector<std::int64_t>{B, T, H, V}));
    ASSERT_EQ(r.final_state.shape, (std::vector<std::int64_t>{B, H, K, V}));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h) {
        gla::Problem<double> p{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h),
                               Mat<double>(head_rows(gk, b, h).array().exp()), 1 / std::sqrt(double(K)), head_state(s0, b, h)};
        const auto ref = gla::serial(p);
        EXPECT_LT((head_rows(r.o, b, h) - ref.o).cwiseAbs().maxCoeff(), 1e-12) << form_name(form);
        EXPECT_LT((head_state(r.final_state, b, h) - ref.final_state).cwiseAbs().maxCoeff(), 1e-12) << form_name(form);
      }
  }
}

TEST(GlaBatched, ShapeErrorsNameTheField) {
  larc::props::Rng rng(12);
  const auto q = random_tensor(rng, {1, 4, 2, 3}), v = random_tensor(rng, {1, 4, 2, 2});
  EXPECT_THAT([&] { gla::gla_batched(q, q, v, random_tensor(rng, {1, 4, 2})); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("gk: expected shape [1, 4, 2, 3], got [1, 4, 2]")));
  EXPECT_THAT([&] { gla::gla_batched(q, random_tensor(rng, {1, 4, 2, 5}), v, random_tensor(rng, {1, 4, 2, 3})); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("k: expected shape")));
  EXPECT_THAT([&] { gla::gla_batched(q, q, v, random_tensor(rng, {1, 4, 2, 3}), {}, Tensor<double>({1, 2, 3, 3})); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("initial_state: expected shape [1, 2, 3, 2]")));
}
