// HLA forms on longer sequences in floating point (T = 300, d = 8 ≠ d_v = 5): every form in double
// against the dd_real serial run, and hla_batched ([B, T, H, D], FLA's layout) against per-head runs,
// with shape errors naming the field.
//
// Tolerance (derived): every form sums the same terms — products of at most three (second order, AHLA)
// dot products of length d with a value — in some order, so |form − exact| ≤ c (T + d) u M per entry
// with M the sum of the terms' absolute values, bounded by running the materialised form on |Q|, |K|,
// |V| (|q·k| ≤ |q|·|k|). c = 8. Measured: the largest |form − dd serial| / ((T + d) u M) over these cases and
// seeds 1–6 was 0.0018 (the bound assumes every rounding adds up; it is far from tight).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "larc/properties/hla_problems.h"

namespace {

using namespace larc::ref;
using larc::props::HlaShape;
using larc::props::numeric_hla_problem;

constexpr double kGrowth = 8;

template <class S>
hla::Problem<S> absolute(hla::Problem<S> p) {
  p.q = p.q.cwiseAbs();
  p.k = p.k.cwiseAbs();
  p.v = p.v.cwiseAbs();
  p.opt.normalized = false;
  return p;
}

// Numerators only: the normalised ratio's denominators may cancel to near 0 (they are not positive).
void expect_close(const Mat<double>& got, const Mat<dd>& oracle, double magnitude, double length, const std::string& what) {
  const double err = (cast_matrix<dd>(got) - oracle).cwiseAbs().maxCoeff().x[0];
  const double bound = kGrowth * length * 0x1p-53 * magnitude;
  EXPECT_LE(err, bound) << what << ": error " << err << ", bound " << bound << " (ratio " << err / bound << ")";
}

TEST(HlaNumeric, SecondOrderAndAhlaFormsAgreeInDoubleWithTheDdSerial) {
  const HlaShape shape{300, 8, 5};
  for (const double gamma : {1.0, 0.97}) {
    const auto pd = numeric_hla_problem<double>(shape, false, gamma, 41);
    const auto pdd = numeric_hla_problem<dd>(shape, false, gamma, 41);
    const double length = static_cast<double>(shape.T + shape.d);
    const std::string g = " γ=" + std::to_string(gamma);
    {
      const Mat<dd> oracle = hla::second_serial(pdd, hla::SecondOrder::masked).o;
      const double m = hla::second_materialized(absolute(pd), hla::SecondOrder::masked).o.maxCoeff();
      expect_close(hla::second_serial(pd, hla::SecondOrder::masked).o, oracle, m, length, "second serial" + g);
      expect_close(hla::second_materialized(pd, hla::SecondOrder::masked).o, oracle, m, length, "second materialized" + g);
      expect_close(hla::second_scan(pd, hla::SecondOrder::masked, hla::ScanOperator::decayed).o, oracle, m, length,
                   "second scan" + g);
      for (const Eigen::Index c : {16, 64})
        expect_close(hla::second_chunked(pd, c).o, oracle, m, length, "second chunked C=" + std::to_string(c) + g);
    }
    {
      const Mat<dd> oracle = hla::ahla_serial(pdd).o;
      const double m = hla::ahla_materialized(absolute(pd)).o.maxCoeff();
      expect_close(hla::ahla_serial(pd).o, oracle, m, length, "AHLA serial" + g);
      expect_close(hla::ahla_materialized(pd).o, oracle, m, length, "AHLA materialized" + g);
      expect_close(hla::ahla_scan(pd, hla::ScanOperator::decayed).o, oracle, m, length, "AHLA scan" + g);
      expect_close(hla::ahla_chunked(pd, 16).o, oracle, m, length, "AHLA chunked C=16" + g);
    }
  }
}

TEST(HlaNumeric, ThirdOrderFormsAgreeInDoubleWithTheDdSerial) {
  const HlaShape shape{120, 6, 3};
  const auto pd = numeric_hla_problem<double>(shape, false, 1.0, 42);
  const auto pdd = numeric_hla_problem<dd>(shape, false, 1.0, 42);
  const Mat<dd> oracle = hla::third_serial(pdd, hla::ThirdOrder::masked).o;
  const double m = hla::third_materialized(absolute(pd), hla::ThirdOrder::masked).o.maxCoeff();
  const double length = static_cast<double>(shape.T + shape.d);
  expect_close(hla::third_serial(pd, hla::ThirdOrder::masked).o, oracle, m, length, "third serial");
  expect_close(hla::third_materialized(pd, hla::ThirdOrder::masked).o, oracle, m, length, "third materialized");
  expect_close(hla::third_scan(pd, hla::ThirdOrder::masked).o, oracle, m, length, "third scan");
}

Tensor<double> random_tensor(larc::props::Rng& rng, std::vector<std::int64_t> shape) {
  Tensor<double> t(std::move(shape));
  for (double& x : t.data) x = rng.normal();
  return t;
}

TEST(HlaBatched, EveryHeadEqualsItsOwnRun) {
  larc::props::Rng rng(7);
  const std::int64_t B = 2, T = 13, H = 3, K = 4, V = 3;
  const auto q = random_tensor(rng, {B, T, H, K}), k = random_tensor(rng, {B, T, H, K}), v = random_tensor(rng, {B, T, H, V});
  for (const bool normalized : {false, true})
    for (const double gamma : {1.0, 0.9}) {
      const hla::Options<double> opt{normalized, normalized ? 1e-6 : 0.0, gamma};
      for (const Form form : {Form::serial, Form::materialized, Form::chunked, Form::streamed}) {
        const Tensor<double> o = hla::hla_batched(q, k, v, opt, form, 5);
        ASSERT_EQ(o.shape, (std::vector<std::int64_t>{B, T, H, V}));
        for (std::int64_t b = 0; b < B; ++b)
          for (std::int64_t h = 0; h < H; ++h) {
            const auto ref = hla::second_serial(hla::Problem<double>{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h), opt},
                                                hla::SecondOrder::masked);
            const double scale = 1 + ref.o.cwiseAbs().maxCoeff();
            EXPECT_LT((head_rows(o, b, h) - ref.o).cwiseAbs().maxCoeff(), 1e-11 * scale)
                << form_name(form) << " b=" << b << " h=" << h << " normalised=" << normalized << " γ=" << gamma;
          }
      }
    }
}

TEST(HlaBatched, BadInputNamesTheField) {
  larc::props::Rng rng(8);
  const auto q = random_tensor(rng, {1, 4, 2, 3}), v = random_tensor(rng, {1, 4, 2, 2});
  auto expect_message = [&](auto&& call, const std::string& text) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::invalid_argument& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr(text));
    }
  };
  expect_message([&] { hla::hla_batched(q, random_tensor(rng, {1, 4, 2, 5}), v); }, "k: expected shape [1, 4, 2, 3], got [1, 4, 2, 5]");
  expect_message([&] { hla::hla_batched(q, q, random_tensor(rng, {1, 3, 2, 2})); }, "v: expected shape [1, 4, 2, *], got [1, 3, 2, 2]");
  expect_message([&] { hla::hla_batched(random_tensor(rng, {4, 2, 3}), q, v); }, "q: expected shape [*, *, *, *], got [4, 2, 3]");
  expect_message([&] { hla::hla_batched(q, q, v, hla::Options<double>{false, 0.0, 1.5}); }, "gamma: expected a decay in (0, 1]");
  expect_message([&] { hla::hla_batched(q, q, v, hla::Options<double>{true, -1.0, 1.0}); }, "eps: expected eps >= 0");
  expect_message([&] { hla::hla_batched(q, q, v, hla::Options<double>{}, Form::chunked, 0); }, "chunk: expected a chunk size >= 1");
}

}  // namespace
