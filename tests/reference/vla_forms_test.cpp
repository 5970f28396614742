// VLA (SPEC §1): serial == streamed (State::step) == scan (right-acting composition, and the printed
// composition on the transposed maps) in double and dd_real, over T ∈ {1, 2, 63, 64, 65, 300}, d_k ≠ d_v
// and every option (λ0, nudge, feature map, plain/ratio read, unnormalised ablation, initial memory);
// split runs; the printed composition on the paper's maps differs at O(1); vla_batched per head and its
// shape errors; bad problems name the field.
//
// Tolerance: vla_cases.h's bound (serial and scan share the penalty recursion, writes(), so they differ
// only in the affine stage; c = 4). Over this file's grid (4 variants × 6 sizes × with/without initial memory,
// both correct scan operators) the worst measured |scan − serial| / ((T + d_k) G u M) in double was 0.17, so
// c = 4 leaves a margin of 24.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "forms_tolerance.h"
#include "larc/properties/generators.h"
#include "larc/reference/vla.h"
#include "vla_cases.h"

using namespace larc::ref;
using larc::testing::expect_agree;
namespace vla = larc::ref::vla;
using namespace larc::testing::vla_cases;

namespace {

const Variant kVariants[] = {
    {"default", 1.0, 0, vla::FeatureMap::elu_plus_one, true, true},
    {"lambda0.1_nudge20", 0.1, 20, vla::FeatureMap::elu_plus_one, true, true},
    {"lambda10_identity_plain", 10.0, 0, vla::FeatureMap::identity, false, true},
    {"unnormalised_identity_plain", 1.0, 0, vla::FeatureMap::identity, false, false},
};

template <class S>
void expect_same(const vla::Result<S>& got, const vla::Result<S>& want, const Bound& b, const std::string& what) {
  expect_agree<S>(got.o, want.o, b.output, what + " outputs");
  expect_agree<S>(got.final_memory.s, want.final_memory.s, b.state, what + " final S^T");
  // A and ζ come from the same recursion in every form: equal to the bit.
  EXPECT_TRUE(got.final_memory.a == want.final_memory.a) << what << " A";
  EXPECT_TRUE(got.final_memory.zeta == want.final_memory.zeta) << what << " zeta";
  EXPECT_EQ(got.final_memory.tokens, want.final_memory.tokens) << what;
}

template <class S>
void check_forms(const vla::Problem<double>& pd, const std::string& label) {
  const vla::Problem<S> p = cast<S>(pd);
  const Bound b = bound(pd);
  const vla::Result<S> ser = vla::serial(p);
  expect_same(vla::streamed(p), ser, b, label + " streamed");
  expect_same(vla::scan(p), ser, b, label + " scan right-acting");
  expect_same(vla::scan(p, vla::ScanOperator::as_printed_transposed), ser, b, label + " scan printed-on-transposed");
}

struct Size {
  Eigen::Index T, dk, dv;
};
const Size kSizes[] = {{1, 4, 3}, {2, 3, 5}, {63, 6, 4}, {64, 5, 5}, {65, 4, 7}, {300, 8, 6}};

template <class S>
class VlaForms : public ::testing::Test {};
using Scalars = ::testing::Types<double, dd>;
TYPED_TEST_SUITE(VlaForms, Scalars);

}  // namespace

TYPED_TEST(VlaForms, SerialStreamedAndScansAgree) {
  for (const Variant& var : kVariants)
    for (const Size s : kSizes)
      for (bool init : {false, true}) {
        const std::uint64_t seed = 1000 * s.T + 10 * s.dk + init;
        check_forms<TypeParam>(make_problem(var, s.T, s.dk, s.dv, init, seed),
                               std::string(var.name) + " T=" + std::to_string(s.T) + " dk=" + std::to_string(s.dk) +
                                   " dv=" + std::to_string(s.dv) + (init ? " init" : "") + " seed=" + std::to_string(seed));
      }
}

TYPED_TEST(VlaForms, PrintedOperatorOnThePapersMapsIsWrong) {
  const auto p = cast<TypeParam>(make_problem(kVariants[0], 40, 6, 6, false, 3));
  const auto ser = vla::serial(p), printed = vla::scan(p, vla::ScanOperator::as_printed);
  const double diff = larc::testing::max_abs_diff<TypeParam>(printed.o, ser.o);
  EXPECT_GT(diff, 1e-3 * larc::testing::max_abs<TypeParam>(ser.o));
  EXPECT_THROW(vla::scan(cast<TypeParam>(make_problem(kVariants[0], 4, 3, 2, false, 3)), vla::ScanOperator::as_printed),
               std::invalid_argument);
}

TEST(VlaForms, SplitRunsCarryTheMemoryAndTheNudgePhase) {
  const auto p = make_problem(kVariants[1], 50, 5, 3, false, 21);
  const auto whole = vla::serial(p);
  auto first = p, second = p;
  first.q = p.q.topRows(23), first.k = p.k.topRows(23), first.v = p.v.topRows(23), first.u = p.u.topRows(23);
  second.q = p.q.bottomRows(27), second.k = p.k.bottomRows(27), second.v = p.v.bottomRows(27), second.u = p.u.bottomRows(27);
  const auto r1 = vla::streamed(first);
  second.initial = r1.final_memory;
  const auto r2 = vla::scan(second);
  const Bound b = bound(p);
  expect_agree<double>(Mat<double>(r1.o), Mat<double>(whole.o.topRows(23)), b.output, "first half");
  expect_agree<double>(Mat<double>(r2.o), Mat<double>(whole.o.bottomRows(27)), b.output, "second half");
  EXPECT_TRUE(r2.final_memory.a == whole.final_memory.a);  // the nudge at token 40 (after the split) kept its phase
  EXPECT_EQ(r2.final_memory.tokens, 50);
}

TEST(VlaForms, OptionsChangeTheResult) {
  // Each exposed parameter is live: changing it changes the outputs.
  const auto base = make_problem(kVariants[0], 30, 4, 3, false, 5);
  const auto o = vla::serial(base).o;
  auto differs = [&](auto&& tweak) {
    auto p = base;
    tweak(p);
    return (vla::serial(p).o - o).cwiseAbs().maxCoeff() > 1e-9;
  };
  EXPECT_TRUE(differs([](auto& p) { p.opt.lambda0 = 0.1; }));
  EXPECT_TRUE(differs([](auto& p) { p.opt.nudge_period = 3; p.opt.nudge_eps = 0.5; }));
  EXPECT_TRUE(differs([](auto& p) { p.opt.feature = vla::FeatureMap::identity; }));
  EXPECT_TRUE(differs([](auto& p) { p.opt.ratio = false; }));
  EXPECT_TRUE(differs([](auto& p) { p.u *= 5.0; }));
  EXPECT_TRUE(differs([](auto& p) { p.opt.normalize = false; }));
}

TEST(VlaForms, BadProblemsNameTheField) {
  auto p = make_problem(kVariants[0], 5, 3, 2, false, 1);
  p.u = Mat<double>::Zero(5, 2);
  EXPECT_THAT([&] { vla::serial(p); }, ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("u (penalty directions)")));
  p = make_problem(kVariants[0], 5, 3, 2, false, 1);
  p.opt.lambda0 = 0;
  EXPECT_THAT([&] { vla::scan(p); }, ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("opt.lambda0")));
  p = make_problem(kVariants[0], 5, 3, 2, true, 1);
  p.initial->a = Mat<double>::Identity(2, 2);
  EXPECT_THAT([&] { vla::streamed(p); }, ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("initial.a")));
}

namespace {
Tensor<double> random_tensor(larc::props::Rng& rng, std::vector<std::int64_t> shape) {
  Tensor<double> t(std::move(shape));
  for (double& x : t.data) x = rng.normal();
  return t;
}
}  // namespace

TEST(VlaBatched, EveryHeadEqualsItsOwnRun) {
  larc::props::Rng rng(31);
  const std::int64_t B = 2, T = 11, H = 3, K = 5, V = 4;
  const auto q = random_tensor(rng, {B, T, H, K}), k = random_tensor(rng, {B, T, H, K}), v = random_tensor(rng, {B, T, H, V});
  const auto u = random_tensor(rng, {B, T, H, K}), s0 = random_tensor(rng, {B, H, K, V});
  vla::Options<double> opt;
  opt.lambda0 = 0.5;
  for (vla::Verb verb : {vla::Verb::serial, vla::Verb::streamed, vla::Verb::scan})
    for (bool given_u : {false, true}) {
      const auto r = vla::vla_batched(q, k, v, given_u ? std::optional(u) : std::nullopt, opt, s0, verb);
      ASSERT_EQ(r.o.shape, (std::vector<std::int64_t>{B, T, H, V}));
      ASSERT_EQ(r.final_penalty.shape, (std::vector<std::int64_t>{B, H, K, K}));
      for (std::int64_t b = 0; b < B; ++b)
        for (std::int64_t h = 0; h < H; ++h) {
          vla::Problem<double> p{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h), {}, opt, vla::empty_memory(opt, K, V)};
          p.u = given_u ? head_rows(u, b, h) : vla::authors_penalty_directions<double>(p.k, Mat<double>::Identity(K, K));
          p.initial->s = head_state(s0, b, h);
          const auto ref = vla::serial(p);
          EXPECT_LT((head_rows(r.o, b, h) - ref.o).cwiseAbs().maxCoeff(), 1e-10 * (1 + ref.o.cwiseAbs().maxCoeff())) << vla::verb_name(verb);
          EXPECT_LT((head_state(r.final_state, b, h) - ref.final_memory.s).cwiseAbs().maxCoeff(), 1e-10 * (1 + ref.final_memory.s.cwiseAbs().maxCoeff()));
          EXPECT_LT((head_state(r.final_penalty, b, h) - ref.final_memory.a).cwiseAbs().maxCoeff(), 1e-14);
        }
    }
}

TEST(VlaBatched, ShapeErrorsNameTheField) {
  larc::props::Rng rng(32);
  const auto q = random_tensor(rng, {1, 4, 2, 3}), v = random_tensor(rng, {1, 4, 2, 2});
  EXPECT_THAT([&] { vla::vla_batched(q, q, v, random_tensor(rng, {1, 4, 2, 2})); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("u: expected shape [1, 4, 2, 3], got [1, 4, 2, 2]")));
  EXPECT_THAT([&] { vla::vla_batched(q, random_tensor(rng, {2, 4, 2, 3}), v); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("k: expected shape")));
  EXPECT_THAT([&] { vla::vla_batched(q, q, v, {}, {}, Tensor<double>({1, 2, 2, 3})); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("initial_state: expected shape [1, 2, 3, 2]")));
}
