// Second-order masked HLA and AHLA from an initial state (hla_common.h: the summaries before the first
// token), in exact rational arithmetic over T ∈ {1, 2, 17, 65}, γ ∈ {1, 3/4}, normalised or not, d = 3 ≠
// d_v = 2, from random rational summaries (not those of any sequence):
//   serial (State::step from the summaries) == materialised + the carried rows == the derived chunk form
//   for C ∈ {1, 2, 5, 16};
//   continuation: the run over [0, T) equals the run over [0, s) followed by the run over [s, T) from the
//   first part's final summaries (the streaming state's), in every form;
// and in double over T = 100 from the summaries of 8 earlier tokens, to 1e-12 relative. The forms that
// take none (third order, scans, chunk forms as printed, the unmasked materialised form) and the other
// family's summaries are refused, as are summaries of the wrong shape (by field); hla_batched seeds each
// head with its own summaries.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "hla_exact_cases.h"

#include "larc/proofs_check/exact.h"
#include "larc/reference/hla.h"

namespace {

using namespace larc::ref;
using larc::hla_exact::expect_same;
using larc::hla_exact::Param;
using larc::hla_exact::param_name;

struct HlaShape {
  Eigen::Index T = 1, d = 1, dv = 1;
};

// q, k, v random rationals n/m, |n| ≤ 9, 1 ≤ m ≤ 8; ε = 1/7919 when normalised.
hla::Problem<rational> rational_hla_problem(const HlaShape& s, bool normalized, const rational& gamma, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  hla::Problem<rational> p{src.matrix(s.T, s.d), src.matrix(s.T, s.d), src.matrix(s.T, s.dv), {}};
  p.opt.normalized = normalized;
  p.opt.eps = normalized ? rational(1, 7919) : rational(0);
  p.opt.gamma = gamma;
  return p;
}

// The same in double, entries of q and k scaled by d^{-1/2} (q·k = O(1)); non-negative q, k when normalised
// (every denominator a sum of non-negative terms); ε = 1e-6.
hla::Problem<double> double_hla_problem(const HlaShape& s, bool normalized, double gamma, std::uint64_t seed) {
  const hla::Problem<rational> r = rational_hla_problem(s, false, rational(1), seed);
  const double scale = 1 / (9 * std::sqrt(static_cast<double>(s.d)));
  auto entries = [&](const Mat<rational>& m, double c, bool non_negative) {
    Mat<double> x = m.unaryExpr([](const rational& e) { return to_double(e); }) * c;
    return non_negative ? Mat<double>(x.cwiseAbs()) : x;
  };
  hla::Problem<double> p{entries(r.q, scale, normalized), entries(r.k, scale, normalized), entries(r.v, 1.0 / 9, false), {}};
  p.opt.normalized = normalized;
  p.opt.eps = normalized ? 1e-6 : 0;
  p.opt.gamma = gamma;
  return p;
}

hla::SecondOrderMemory<rational> random_second_order_memory(Eigen::Index d, Eigen::Index w, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  return {src.matrix(d, d), src.matrix(d, w), src.matrix(d, w)};
}

hla::AhlaMemory<rational> random_ahla_memory(Eigen::Index d, Eigen::Index w, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  return {src.matrix(d, w), src.matrix(d, w)};
}

// Rows [from, from + n) of p, with no initial summaries.
template <class S>
hla::Problem<S> rows_of(const hla::Problem<S>& p, Eigen::Index from, Eigen::Index n) {
  return {p.q.middleRows(from, n), p.k.middleRows(from, n), p.v.middleRows(from, n), p.opt};
}

// The result of rows [from, from + n) of r.
template <class S>
hla::Result<S> result_rows(const hla::Result<S>& r, Eigen::Index from, Eigen::Index n) {
  return {r.o.middleRows(from, n), r.den.size() ? Vec<S>(r.den.segment(from, n)) : Vec<S>()};
}

class HlaInitialStateExact : public ::testing::TestWithParam<Param> {
 protected:
  hla::Problem<rational> problem(std::uint64_t base) const {
    const auto& [T, normalized, decayed] = GetParam();
    const std::uint64_t seed = base + 10 * static_cast<std::uint64_t>(T) + (normalized ? 1 : 0) + (decayed ? 2 : 0);
    RecordProperty("seed", std::to_string(seed));
    return rational_hla_problem(HlaShape{T, 3, 2}, normalized, decayed ? rational(3, 4) : rational(1), seed);
  }
};

TEST_P(HlaInitialStateExact, SecondOrderFormsAgree) {
  auto p = problem(6000);
  const Eigen::Index w = hla::value_width(p.opt, p.dv());
  p.second_order_initial = random_second_order_memory(3, w, 6001 + static_cast<std::uint64_t>(p.T()));
  const auto serial = hla::second_serial(p, hla::SecondOrder::masked);
  const auto empty = hla::second_serial(rows_of(p, 0, p.T()), hla::SecondOrder::masked);
  EXPECT_FALSE(serial.o == empty.o) << "the initial summaries change the outputs";
  expect_same(hla::second_materialized(p, hla::SecondOrder::masked), serial, "materialized");
  for (const Eigen::Index c : {1, 2, 5, 16}) expect_same(hla::second_chunked(p, c), serial, "chunked C=" + std::to_string(c));
}

TEST_P(HlaInitialStateExact, AhlaFormsAgree) {
  auto p = problem(7000);
  const Eigen::Index w = hla::value_width(p.opt, p.dv());
  p.ahla_initial = random_ahla_memory(3, w, 7001 + static_cast<std::uint64_t>(p.T()));
  const auto serial = hla::ahla_serial(p);
  EXPECT_FALSE(serial.o == hla::ahla_serial(rows_of(p, 0, p.T())).o) << "the initial summaries change the outputs";
  expect_same(hla::ahla_materialized(p), serial, "materialized");
  for (const Eigen::Index c : {1, 2, 5, 16}) expect_same(hla::ahla_chunked(p, c), serial, "chunked C=" + std::to_string(c));
}

// [0, T) from M0 == [0, s) from M0, then [s, T) from the streaming state's summaries after s tokens.
TEST_P(HlaInitialStateExact, ContinuationFromTheFirstPartsFinalSummaries) {
  auto p = problem(8000);
  if (p.T() < 2) GTEST_SKIP() << "nothing to split";
  const Eigen::Index w = hla::value_width(p.opt, p.dv()), s = p.T() / 3 + 1, rest = p.T() - s;
  p.second_order_initial = random_second_order_memory(3, w, 8001);
  p.ahla_initial.reset();
  hla::SecondOrderState<rational> second(p.opt, hla::SecondOrder::masked, *p.second_order_initial);
  hla::Problem<rational> ahla_whole = p;
  ahla_whole.second_order_initial.reset();
  ahla_whole.ahla_initial = random_ahla_memory(3, w, 8002);
  hla::AhlaState<rational> ahla(p.opt, *ahla_whole.ahla_initial);
  for (Eigen::Index t = 0; t < s; ++t) {
    second.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose());
    ahla.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose());
  }
  hla::Problem<rational> second_tail = rows_of(p, s, rest), ahla_tail = rows_of(p, s, rest);
  second_tail.second_order_initial = second.memory();
  ahla_tail.ahla_initial = ahla.memory();
  const auto whole_second = result_rows(hla::second_serial(p, hla::SecondOrder::masked), s, rest);
  const auto whole_ahla = result_rows(hla::ahla_serial(ahla_whole), s, rest);
  expect_same(hla::second_serial(second_tail, hla::SecondOrder::masked), whole_second, "second order serial");
  expect_same(hla::second_materialized(second_tail, hla::SecondOrder::masked), whole_second, "second order materialized");
  expect_same(hla::second_chunked(second_tail, 4), whole_second, "second order chunked");
  expect_same(hla::ahla_serial(ahla_tail), whole_ahla, "ahla serial");
  expect_same(hla::ahla_materialized(ahla_tail), whole_ahla, "ahla materialized");
  expect_same(hla::ahla_chunked(ahla_tail, 4), whole_ahla, "ahla chunked");
}

INSTANTIATE_TEST_SUITE_P(Grid, HlaInitialStateExact,
                         ::testing::Combine(::testing::Values<Eigen::Index>(1, 2, 17, 65), ::testing::Bool(), ::testing::Bool()),
                         param_name);

double relative_error(const Mat<double>& got, const Mat<double>& want) {
  return (got - want).cwiseAbs().maxCoeff() / std::max(1.0, want.cwiseAbs().maxCoeff());
}

// In double: the summaries of 8 earlier tokens (the streaming states'), then T = 100 tokens, γ = 0.9 and 1.
TEST(HlaInitialState, FormsAgreeInDouble) {
  for (const bool normalized : {false, true})
    for (const double gamma : {0.9, 1.0}) {
      const auto prefix = double_hla_problem({8, 5, 3}, normalized, gamma, 31);
      auto p = double_hla_problem({100, 5, 3}, normalized, gamma, 32);
      hla::SecondOrderState<double> second(p.opt, hla::SecondOrder::masked, 5, 3);
      hla::AhlaState<double> ahla(p.opt, 5, 3);
      for (Eigen::Index t = 0; t < 8; ++t) {
        second.step(prefix.q.row(t).transpose(), prefix.k.row(t).transpose(), prefix.v.row(t).transpose());
        ahla.step(prefix.q.row(t).transpose(), prefix.k.row(t).transpose(), prefix.v.row(t).transpose());
      }
      const std::string what = std::string(normalized ? "normalised" : "plain") + " gamma " + std::to_string(gamma);
      p.second_order_initial = second.memory();
      const auto serial = hla::second_serial(p, hla::SecondOrder::masked).o;
      EXPECT_LT(relative_error(hla::second_materialized(p, hla::SecondOrder::masked).o, serial), 1e-12) << what;
      for (const Eigen::Index c : {7, 16, 64}) EXPECT_LT(relative_error(hla::second_chunked(p, c).o, serial), 1e-12) << what;
      p.second_order_initial.reset();
      p.ahla_initial = ahla.memory();
      const auto ahla_serial = hla::ahla_serial(p).o;
      EXPECT_LT(relative_error(hla::ahla_materialized(p).o, ahla_serial), 1e-12) << what;
      for (const Eigen::Index c : {7, 16, 64}) EXPECT_LT(relative_error(hla::ahla_chunked(p, c).o, ahla_serial), 1e-12) << what;
    }
}

// Applying γ^τ instead of γ^{2τ} to the pairs before the start (a planted defect of the closed form)
// misses the serial form as soon as γ < 1, and only then.
TEST(HlaInitialState, TheCarriedPairsDecayByGammaToTheTwoTau) {
  for (const rational& gamma : {rational(1), rational(3, 4)}) {
    auto p = rational_hla_problem(HlaShape{9, 3, 2}, false, gamma, 91);
    p.second_order_initial = random_second_order_memory(3, 2, 92);
    const auto& m = *p.second_order_initial;
    const Vec<rational> since = hla::decay_since_start(p.T(), gamma);
    // second_carried_rows with γ^τ in place of γ^{2τ}: the difference of the two is the defect's.
    const Mat<rational> defect_shift =
        Mat<rational>(since.asDiagonal() * (p.q * (m.sk * m.c - m.g))) - Mat<rational>(since.cwiseProduct(since).asDiagonal() * (p.q * (m.sk * m.c - m.g)));
    const auto serial = hla::second_serial(p, hla::SecondOrder::masked);
    const Mat<rational> defective = hla::second_materialized(p, hla::SecondOrder::masked).o + defect_shift;
    EXPECT_EQ(defective == serial.o, gamma == 1) << "gamma " << gamma;
  }
}

TEST(HlaInitialState, FormsThatTakeNoneRefuseOne) {
  auto p = rational_hla_problem(HlaShape{4, 3, 2}, false, rational(1), 3);
  p.second_order_initial = random_second_order_memory(3, 2, 4);
  auto refused = [](const auto& run, const std::string& who) {
    try {
      run();
      ADD_FAILURE() << who << " accepted initial summaries";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(who), std::string::npos) << e.what();
    }
  };
  refused([&] { hla::third_serial(p, hla::ThirdOrder::masked); }, "hla::third_serial");
  refused([&] { hla::third_materialized(p, hla::ThirdOrder::masked); }, "hla::third_materialized");
  refused([&] { hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::decayed); }, "hla::second_scan");
  refused([&] { hla::second_chunked_as_printed(p, 2); }, "hla::second_chunked_as_printed");
  refused([&] { hla::second_materialized(p, hla::SecondOrder::unmasked); }, "masked variant only");
  refused([&] { hla::ahla_serial(p); }, "second_order_initial is second order's");
  refused([&] { hla::ahla_chunked(p, 2); }, "second_order_initial is second order's");
  p.second_order_initial.reset();
  p.ahla_initial = random_ahla_memory(3, 2, 5);
  refused([&] { hla::ahla_scan(p, hla::ScanOperator::decayed); }, "hla::ahla_scan");
  refused([&] { hla::ahla_chunked_as_printed(p, 2); }, "hla::ahla_chunked_as_printed");
  refused([&] { hla::second_serial(p, hla::SecondOrder::masked); }, "ahla_initial is AHLA's");
  refused([&] { hla::second_chunked(p, 2); }, "ahla_initial is AHLA's");
}

TEST(HlaInitialState, SummariesOfTheWrongShapeNameTheField) {
  auto p = rational_hla_problem(HlaShape{4, 3, 2}, true, rational(1), 6);  // normalised: w = d_v + 1 = 3
  auto expect_named = [](const auto& run, const std::string& field) {
    try {
      run();
      ADD_FAILURE() << field << " of the wrong shape accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  p.second_order_initial = random_second_order_memory(3, 2, 7);  // d_v columns: the normaliser's missing
  expect_named([&] { hla::second_serial(p, hla::SecondOrder::masked); }, "second_order_initial.c");
  p.second_order_initial = random_second_order_memory(3, 3, 7);
  p.second_order_initial->sk = Mat<rational>::Zero(2, 3);
  expect_named([&] { hla::second_chunked(p, 2); }, "second_order_initial.sk");
  p.second_order_initial = random_second_order_memory(3, 3, 7);
  p.second_order_initial->g = Mat<rational>::Zero(3, 2);
  expect_named([&] { hla::second_materialized(p, hla::SecondOrder::masked); }, "second_order_initial.g");
  p.second_order_initial.reset();
  p.ahla_initial = random_ahla_memory(3, 3, 8);
  p.ahla_initial->e = Mat<rational>::Zero(4, 3);
  expect_named([&] { hla::ahla_serial(p); }, "ahla_initial.e");
  p.ahla_initial->e = Mat<rational>::Zero(3, 3);
  p.ahla_initial->p = Mat<rational>::Zero(3, 2);
  expect_named([&] { hla::ahla_materialized(p); }, "ahla_initial.p");
}

// hla_batched seeds head (b, h) with its own summaries: each head equals its serial run.
TEST(HlaInitialState, BatchedSeedsEveryHeadWithItsOwnSummaries) {
  const std::int64_t B = 2, T = 5, H = 2, K = 3, V = 2;
  larc::proofs::RationalSource src(12, 9, 8);
  auto tensor = [&](std::vector<std::int64_t> shape) {
    Tensor<double> x(shape);
    for (double& e : x.data) e = to_double(src.next());
    return x;
  };
  const Tensor<double> q = tensor({B, T, H, K}), k = tensor({B, T, H, K}), v = tensor({B, T, H, V});
  const hla::BatchedSecondOrderMemory<double> second{tensor({B, H, K, K}), tensor({B, H, K, V}), tensor({B, H, K, V})};
  const hla::BatchedAhlaMemory<double> ahla{tensor({B, H, K, V}), tensor({B, H, K, V})};
  for (const Form form : {Form::serial, Form::materialized, Form::chunked}) {
    const Tensor<double> o2 = hla::hla_batched<hla::SecondOrderFamily, double>(q, k, v, {}, form, 2, OperandFormat::none, second);
    const Tensor<double> oa = hla::hla_batched<hla::AhlaFamily, double>(q, k, v, {}, form, 2, OperandFormat::none, ahla);
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h) {
        hla::Problem<double> p{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h), {}};
        p.second_order_initial = hla::SecondOrderMemory<double>{head_state(second.sk, b, h), head_state(second.c, b, h),
                                                                head_state(second.g, b, h)};
        EXPECT_LT(relative_error(head_rows(o2, b, h), hla::second_serial(p, hla::SecondOrder::masked).o), 1e-12) << form_name(form);
        p.second_order_initial.reset();
        p.ahla_initial = hla::AhlaMemory<double>{head_state(ahla.p, b, h), head_state(ahla.e, b, h)};
        EXPECT_LT(relative_error(head_rows(oa, b, h), hla::ahla_serial(p).o), 1e-12) << form_name(form);
      }
  }
  const hla::BatchedAhlaMemory<double> wrong{tensor({B, H, K, V}), tensor({B, H, K, V + 1})};
  try {
    hla::hla_batched<hla::AhlaFamily, double>(q, k, v, {}, Form::serial, 2, OperandFormat::none, wrong);
    ADD_FAILURE() << "an e of the wrong width accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("initial e"), std::string::npos) << e.what();
  }
}

}  // namespace
