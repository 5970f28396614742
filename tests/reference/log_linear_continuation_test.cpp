// Log-linear attention continuing a sequence (log_linear.h, "Continuing a sequence"), Mamba-2 and GDN, in
// exact rational arithmetic: for t0 ∈ {1, 5, 64, 100} earlier tokens and T ∈ {1, 3, 16, 29} more, running
// [0, t0 + T) whole equals running [0, t0) and continuing [t0, t0 + T) from continuation_start of the first
// part, in serial, materialized and chunked (C = 1, 2, 4, …, 64: t0 a multiple of some, not of others),
// residual 0; a continuation read with the offset forgotten, or with one carried state dropped, differs;
// a Start that does not fit t0 or the problem is refused, naming the field; and the batched wrapper
// continues [B, T, H, D] sequences from initial_level_states [B, H, L, K, V] slot by slot (GDN and
// Mamba-2 in double, every form), refusing a tensor of another shape by name.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>

#include "larc/reference/log_linear_batched.h"
#include "log_linear_forms_check.h"

namespace {

using namespace larc::testing;
using larc::props::LogLinearCase;
using larc::ref::Mat;
using larc::ref::rational;

// Rows [first, first + n) of p as a problem of its own (λ keeps every column).
ll::Problem<rational> rows_of(const ll::Problem<rational>& p, Eigen::Index first, Eigen::Index n) {
  return {p.variant,
          p.q.middleRows(first, n),
          p.k.middleRows(first, n),
          p.v.middleRows(first, n),
          p.alpha.segment(first, n),
          p.beta.segment(first, n),
          p.lambda.middleRows(first, n),
          p.scale,
          std::nullopt};
}

struct Split {
  ll::Problem<rational> whole, continuation;
};

Split split(ll::Variant variant, int t0, int T) {
  const LogLinearCase c{static_cast<std::uint64_t>(t0) * 101 + static_cast<std::uint64_t>(T), t0 + T, T % 2 ? 3 : 2,
                        T % 2 ? 2 : 3, variant, larc::props::GateKind::moderate, 1};
  Split s{larc::props::rational_log_linear_problem(c), {}};
  s.continuation = rows_of(s.whole, t0, T);
  s.continuation.start = ll::continuation_start(rows_of(s.whole, 0, t0));
  return s;
}

using Param = std::tuple<ll::Variant, int, int>;

class LogLinearContinuation : public ::testing::TestWithParam<Param> {};

TEST_P(LogLinearContinuation, ContinuingEqualsTheWholeRunInEveryForm) {
  const auto [variant, t0, T] = GetParam();
  const Split s = split(variant, t0, T);
  ASSERT_EQ(s.continuation.start->level_states.size(), larc::ref::fenwick::carried_levels(t0).size());
  const Mat<rational> want = ll::serial(s.whole).bottomRows(T);
  EXPECT_TRUE(ll::serial(s.continuation) == want) << "serial";
  EXPECT_TRUE(ll::materialized(s.continuation) == want) << "materialized";
  for (Eigen::Index chunk : kLogLinearChunks) EXPECT_TRUE(ll::chunked(s.continuation, chunk) == want) << "chunked C=" << chunk;
  // The state after the whole run is the continuation's own continuation_start.
  const ll::Start<rational> after_whole = ll::continuation_start(s.whole), after_parts = ll::continuation_start(s.continuation);
  EXPECT_EQ(after_whole.offset, after_parts.offset);
  EXPECT_TRUE(after_whole.level_states == after_parts.level_states);
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(ll::variant_name(std::get<0>(info.param))) + "_t0_" + std::to_string(std::get<1>(info.param)) +
         "_T" + std::to_string(std::get<2>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Grid, LogLinearContinuation,
                         ::testing::Combine(::testing::Values(ll::Variant::mamba2, ll::Variant::gdn),
                                            ::testing::Values(1, 5, 64, 100), ::testing::Values(1, 3, 16, 29)),
                         param_name);

// The defects the gate plants, at the reference's level: each changes the continuation's outputs.
TEST(LogLinearContinuation, OffsetAndEveryCarriedStateAreRead) {
  for (ll::Variant variant : {ll::Variant::mamba2, ll::Variant::gdn}) {
    const Split s = split(variant, 13, 20);  // 13 = 0b1101: carried levels 1, 3, 4
    const Mat<rational> want = ll::serial(s.continuation);
    ll::Problem<rational> no_offset = s.continuation;  // the same states read as if the levels began at 0
    no_offset.start->offset = 7;                       // popcount 3 as well: only the positions differ
    EXPECT_NE(ll::serial(no_offset), want) << ll::variant_name(variant);
    for (std::size_t i = 0; i < s.continuation.start->level_states.size(); ++i) {
      ll::Problem<rational> dropped = s.continuation;
      dropped.start->level_states[i].setZero();
      EXPECT_NE(ll::serial(dropped), want) << ll::variant_name(variant) << " carried state " << i;
      EXPECT_TRUE(ll::chunked(dropped, 4) == ll::serial(dropped)) << "the forms agree on any start";
    }
  }
}

TEST(LogLinearContinuation, RefusesAStartThatDoesNotFit) {
  const Split s = split(ll::Variant::gdn, 5, 3);  // carried levels 1, 3
  auto refused = [](const ll::Problem<rational>& p, const std::string& field) {
    try {
      ll::serial(p);
      ADD_FAILURE() << "accepted; expected a refusal naming " << field;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  ll::Problem<rational> p = s.continuation;
  p.start->level_states.pop_back();
  refused(p, "start.level_states must hold one state per bucket of t0 = 5");
  p = s.continuation;
  p.start->level_states[1] = Mat<rational>::Zero(p.dk() + 1, p.dv());
  refused(p, "start.level_states[1] (level 3)");
  p = s.continuation;
  p.start->offset = 1000;  // 0b1111101000: six buckets, and λ too narrow for level_count(1003) = 11
  refused(p, "start.level_states");
  p = s.continuation;
  p.lambda = p.lambda.leftCols(2).eval();  // level_count(8) = 4
  refused(p, "lambda must have at least level_count(t0 + T)");
}

// Batched tensors of B = 2 sequences and H = 2 heads, q and k shared (G = 1) as FLA's chunk kernel takes them.
struct Batch {
  larc::ref::Tensor<double> q, k, v, g, lambda, beta;
};

Batch random_batch(std::int64_t T, std::int64_t L) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> unit;
  auto fill = [&](std::vector<std::int64_t> shape, auto draw) {
    larc::ref::Tensor<double> t(std::move(shape));
    for (double& x : t.data) x = draw();
    return t;
  };
  return {fill({2, T, 1, 3}, [&] { return normal(rng) / 2; }), fill({2, T, 1, 3}, [&] { return normal(rng) / 2; }),
          fill({2, T, 2, 4}, [&] { return normal(rng); }),     fill({2, T, 2}, [&] { return -unit(rng) / 4; }),
          fill({2, T, 2, L}, [&] { return unit(rng); }),       fill({2, T, 2}, [&] { return unit(rng); })};
}

// Rows [first, first + n) of every sequence of a [B, T, …] tensor.
larc::ref::Tensor<double> time_rows(const larc::ref::Tensor<double>& x, std::int64_t first, std::int64_t n) {
  std::vector<std::int64_t> shape = x.shape;
  const std::int64_t T = shape[1], row = static_cast<std::int64_t>(x.data.size()) / (shape[0] * T);
  shape[1] = n;
  larc::ref::Tensor<double> r(shape);
  for (std::int64_t b = 0; b < shape[0]; ++b)
    for (std::int64_t i = 0; i < n * row; ++i) r.data[static_cast<std::size_t>(b * n * row + i)] = x.data[static_cast<std::size_t>((b * T + first) * row + i)];
  return r;
}

TEST(LogLinearContinuation, BatchedContinuesFromTheCarriedStatesSlotBySlot) {
  const std::int64_t t0 = 21, T = 19;  // 21 = 0b10101: carried levels 1, 3, 5
  const std::int64_t L = larc::ref::fenwick::level_count(t0 + T);
  const Batch whole = random_batch(t0 + T, L);
  for (const bool gdn : {false, true}) {
    const std::optional<larc::ref::Tensor<double>> beta = gdn ? std::optional(whole.beta) : std::nullopt;
    const auto part = [&](const larc::ref::Tensor<double>& x, std::int64_t first, std::int64_t n) { return time_rows(x, first, n); };
    ll::BatchedStart<double> start{static_cast<std::uint64_t>(t0), larc::ref::Tensor<double>({2, 2, L, 3, 4})};
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t h = 0; h < 2; ++h) {
        const std::optional<larc::ref::Tensor<double>> head_beta = gdn ? std::optional(part(whole.beta, 0, t0)) : std::nullopt;
        const ll::Problem<double> first = ll::head_problem<double>(part(whole.q, 0, t0), part(whole.k, 0, t0), part(whole.v, 0, t0),
                                                                   part(whole.g, 0, t0), part(whole.lambda, 0, t0), head_beta,
                                                                   1.0, b, h);
        ll::set_head_level_states(start.level_states, b, h, static_cast<std::uint64_t>(t0), ll::continuation_start(first).level_states);
      }
    const larc::ref::Tensor<double> want =
        time_rows(ll::log_linear_batched<double>(whole.q, whole.k, whole.v, whole.g, whole.lambda, beta, 1.0, larc::ref::Form::serial), t0, T);
    const std::optional<larc::ref::Tensor<double>> tail_beta = gdn ? std::optional(part(whole.beta, t0, T)) : std::nullopt;
    for (const larc::ref::Form form : {larc::ref::Form::serial, larc::ref::Form::materialized, larc::ref::Form::chunked}) {
      const larc::ref::Tensor<double> got =
          ll::log_linear_batched<double>(part(whole.q, t0, T), part(whole.k, t0, T), part(whole.v, t0, T), part(whole.g, t0, T),
                                         part(whole.lambda, t0, T), tail_beta, 1.0, form, 4, larc::ref::OperandFormat::none, start);
      double worst = 0;
      for (std::size_t i = 0; i < got.data.size(); ++i) worst = std::max(worst, std::fabs(got.data[i] - want.data[i]));
      EXPECT_LT(worst, 1e-12) << (gdn ? "gdn " : "mamba2 ") << larc::ref::form_name(form);
    }
    ll::BatchedStart<double> narrow = start;
    narrow.level_states = larc::ref::Tensor<double>({2, 2, L - 1, 3, 4});
    EXPECT_THROW(
        {
          try {
            ll::log_linear_batched<double>(part(whole.q, t0, T), part(whole.k, t0, T), part(whole.v, t0, T), part(whole.g, t0, T),
                                           part(whole.lambda, t0, T), tail_beta, 1.0, larc::ref::Form::serial, 4,
                                           larc::ref::OperandFormat::none, narrow);
          } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find("initial_level_states"), std::string::npos) << e.what();
            throw;
          }
        },
        std::invalid_argument);
  }
}

}  // namespace
