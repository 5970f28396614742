// Log-linear decoding (State::step, SPEC §4 recurrent form): the live memory measured while decoding
// grows as O(log T) (live level states = popcount(t) + 1, at most ⌊log2 T⌋ + 1 over a length-T run);
// each live level holds exactly its bucket's tokens (counts and contents, exactly in rationals); the
// levels of GDN sum to the GDN state of delta_rule::serial; and a cascade at the wrong time (after the
// write instead of before it) is caught by comparison with the materialized form.
#include <gtest/gtest.h>

#include <bit>

#include "larc/properties/log_linear_cases.h"
#include "larc/reference/delta_rule.h"
#include "larc/reference/log_linear.h"

namespace {

namespace ll = larc::ref::log_linear;
namespace fw = larc::ref::fenwick;
using larc::ref::Mat;
using larc::ref::rational;
using larc::ref::Vec;

TEST(LogLinearDecode, LiveMemoryGrowsAsLogT) {
  const int dk = 2, dv = 3;
  for (ll::Variant variant : {ll::Variant::mamba2, ll::Variant::gdn}) {
    ll::State<double> st(variant, dk, dv);
    const Vec<double> q = Vec<double>::Ones(dk), k = Vec<double>::Unit(dk, 0), v = Vec<double>::Ones(dv);
    const Vec<double> lambda = Vec<double>::Ones(fw::level_count(std::uint64_t{1} << 16));
    std::size_t max_live = 0, max_bytes = 0;
    for (std::uint64_t t = 0; t < (std::uint64_t{1} << 16); ++t) {
      st.step(q, k, v, 0.999, 0.5, lambda, 1.0);
      ASSERT_EQ(st.live_levels(), static_cast<std::size_t>(fw::live_levels(t))) << "t=" << t;
      ASSERT_EQ(st.live_bytes(), st.live_levels() * dk * dv * sizeof(double)) << "t=" << t;
      max_live = std::max(max_live, st.live_levels());
      max_bytes = std::max(max_bytes, st.live_bytes());
      const std::uint64_t T = t + 1;
      if (std::has_single_bit(T)) {  // T = 2^k: at most k + 1 live levels so far, and k + 1 reached at t = T − 1
        const std::size_t k_bits = std::countr_zero(T);
        ASSERT_EQ(max_live, k_bits + 1) << "T=" << T;
        ASSERT_EQ(max_bytes, (k_bits + 1) * dk * dv * sizeof(double)) << "T=" << T;
        ::testing::Test::RecordProperty(std::string(ll::variant_name(variant)) + "_max_live_bytes_T" + std::to_string(T),
                                        std::to_string(max_bytes));
      }
    }
  }
}

// Σ_{s in bucket ℓ of t} [Π_{r=s+1..t} a_r] k_s v_s^T, written out independently of the reference.
Mat<rational> mamba2_bucket_state(const ll::Problem<rational>& p, std::uint64_t t, const fw::Bucket& b) {
  Mat<rational> s = Mat<rational>::Zero(p.dk(), p.dv());
  for (std::uint64_t j = b.first; j < b.first + b.size; ++j) {
    rational decay = 1;
    for (std::uint64_t r = j + 1; r <= t; ++r) decay *= p.alpha(r);
    s += decay * p.k.row(j).transpose() * p.v.row(j);
  }
  return s;
}

TEST(LogLinearDecode, LevelsHoldTheirBucketsExactly) {
  const auto p = larc::props::rational_log_linear_problem({9, 40, 2, 2, ll::Variant::mamba2});
  ll::State<rational> st(p.variant, p.dk(), p.dv());
  for (std::uint64_t t = 0; t < 40; ++t) {
    st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(), p.alpha(t), 1,
            p.lambda.row(t).transpose(), 1);
    const auto buckets = fw::buckets(t);
    ASSERT_EQ(st.live_levels(), buckets.size());
    for (const auto& b : buckets) {
      ASSERT_EQ(st.levels().count(b.level), b.size) << "t=" << t << " level " << b.level;
      bool found = false;
      st.levels().for_each_live([&](int l, const Mat<rational>& s) {
        if (l != b.level) return;
        found = true;
        EXPECT_TRUE(s == mamba2_bucket_state(p, t, b)) << "t=" << t << " level " << l;
      });
      EXPECT_TRUE(found);
    }
  }
}

TEST(LogLinearDecode, GdnLevelsSumToTheGdnState) {
  const auto p = larc::props::rational_log_linear_problem({4, 37, 3, 2, ll::Variant::gdn});
  ll::State<rational> st(p.variant, p.dk(), p.dv());
  for (Eigen::Index t = 0; t < p.T(); ++t)
    st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose(), p.alpha(t), p.beta(t),
            p.lambda.row(t).transpose(), 1);
  Mat<rational> sum = Mat<rational>::Zero(p.dk(), p.dv());
  st.levels().for_each_live([&](int, const Mat<rational>& s) { sum += s; });
  const larc::ref::delta_rule::Problem<rational> gdn{p.q, p.k, p.v, p.alpha, p.beta, 1, {}};
  EXPECT_TRUE(sum == larc::ref::delta_rule::serial(gdn).final_state);
}

// The defect: cascading after the write (eagerly, as soon as a level fills) instead of before each
// token moves token t out of level 0 before it is read, so o_t applies λ^{(1)} where λ^{(0)} belongs.
TEST(LogLinearDecode, CascadeAtTheWrongTimeIsCaught) {
  for (ll::Variant variant : {ll::Variant::mamba2, ll::Variant::gdn}) {
    const auto p = larc::props::rational_log_linear_problem({2, 17, 2, 2, variant});
    ll::State<rational> eager(p.variant, p.dk(), p.dv());
    Mat<rational> o(p.T(), p.dv());
    for (Eigen::Index t = 0; t < p.T(); ++t) {
      eager.absorb(p.k.row(t).transpose(), p.v.row(t).transpose(), p.alpha(t), p.beta(t));
      eager.cascade();
      o.row(t) = eager.read(p.q.row(t).transpose(), p.lambda.row(t).transpose(), 1).transpose();
    }
    const Mat<rational> want = ll::materialized(p);
    EXPECT_FALSE(o == want) << ll::variant_name(variant);
    EXPECT_TRUE(ll::serial(p) == want) << ll::variant_name(variant);
    int wrong_rows = 0;
    for (Eigen::Index t = 0; t < p.T(); ++t) wrong_rows += !(o.row(t) == want.row(t));
    EXPECT_EQ(wrong_rows, p.T()) << "every token is read at the wrong level";
  }
}

TEST(LogLinearDecode, SkippedCascadeIsRefused) {
  ll::State<double> st(ll::Variant::mamba2, 1, 1);
  const Vec<double> one = Vec<double>::Ones(1);
  st.absorb(one, one, 1, 1);
  EXPECT_THROW(st.absorb(one, one, 1, 1), std::logic_error);
}

TEST(LogLinearDecode, ReadNeedsALambdaPerLiveLevel) {
  ll::State<double> st(ll::Variant::mamba2, 1, 1);
  const Vec<double> one = Vec<double>::Ones(1);
  for (int t = 0; t < 4; ++t) st.step(one, one, one, 1, 1, Vec<double>::Ones(3), 1);  // t = 3: levels 0, 1, 2
  st.cascade();
  st.absorb(one, one, 1, 1);  // t = 4: levels 0 and 3
  EXPECT_THROW(st.read(one, Vec<double>::Ones(3), 1), std::invalid_argument);
  EXPECT_NO_THROW(st.read(one, Vec<double>::Ones(4), 1));
}

}  // namespace
