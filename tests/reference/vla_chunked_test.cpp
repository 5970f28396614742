// VLA's chunked form (vla_chunked.h, SPEC §1) against serial: in double and dd_real over C ∈ {1, 2, 3, 16, 64},
// T not a multiple of C, every option (normalised or not, ratio and plain reads, λ0, the nudge on with a period
// that is not a multiple of C and off) and with an initial memory; exactly in rationals (unnormalised writes,
// identity feature map: no square roots) including a nudge inside chunks and δ floored at stab_eps; split
// chunked runs keep the nudge phase; a chunk size below 1 is refused.
//
// Tolerance. Unlike scan, chunked recomputes the penalty recursion (blocked), so A_t and α̂_t differ from
// serial's by rounding too. A: the Woodbury form sums at most T + d_k rounded terms, each bounded by
// a_max = max_t ‖A_t‖_F, so |ΔA| ≤ c (T + d_k) u a_max. α̂_t: A_t k̂_t carries that error, relative to its own size
// κ_w = max_t a_max ‖k̂_t‖ / ‖A_t k̂_t‖ times larger (normalising divides by ‖A_t k̂_t‖). S: an error entering at
// token s reaches S_t through F_{s+1} ⋯ F_t (F_r = I − k̂_r α̂_r^T); with G* = max_{s≤t} ‖F_{s+1} ⋯ F_t‖₂, the norm
// of the products themselves (vla_cases.h's product of the norms can grow exponentially in T and then admits
// anything), the affine stage contributes c (T + d_k) u G* (‖S_0‖_F + Σ_t ‖v_t‖ ‖α̂_t‖), and α̂_t off by ε ‖α̂_t‖
// changes S_t by r_t Δα̂_t^T (r_t = v_t − S_{t−1} k̂_t): at most ε G* Σ_t (‖v_t‖ + ‖S_{t−1}‖_F) ‖α̂_t‖, ε = c (T + d_k) u κ_w.
// Outputs multiply by vla_cases.h's read_factor. c = 4. Over EqualsSerial's grid the worst measured
// |chunked − serial| / (u · bound) was 0.023 in double and 0.0088 in dd_real (margin ≥ 40), and the tolerance is
// at most 1.7e-9 (double) and 4.3e-25 (dd_real) relative to the outputs; the test checks it stays ≤ 10⁸ u so
// that a wrong formula, an O(1) relative change, cannot pass.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <Eigen/SVD>

#include <algorithm>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "forms_tolerance.h"
#include "larc/proofs_check/exact.h"
#include "larc/reference/vla_chunked.h"
#include "vla_cases.h"

using namespace larc::ref;
using larc::testing::expect_agree;
using namespace larc::testing::vla_cases;
namespace vla = larc::ref::vla;

namespace {

const Variant kVariants[] = {
    {"default", 1.0, 0, vla::FeatureMap::elu_plus_one, true, true},
    {"lambda0.1_nudge7", 0.1, 7, vla::FeatureMap::elu_plus_one, true, true},
    {"lambda10_identity_plain_nudge5", 10.0, 5, vla::FeatureMap::identity, false, true},
    {"unnormalised_identity_plain", 1.0, 0, vla::FeatureMap::identity, false, false},
    {"unnormalised_identity_ratio_nudge3", 1.0, 3, vla::FeatureMap::identity, true, false},
};
const Eigen::Index kChunks[] = {1, 2, 3, 16, 64};

// Large enough that a nudge handled at the wrong token is far outside the tolerance.
constexpr double kNudgeEps = 0.05;

struct ChunkedBound {
  double a, state, output;
};

ChunkedBound chunked_bound(const vla::Problem<double>& p) {
  const vla::Writes<double> w = vla::writes(p);
  const vla::Memory<double> m0 = vla::start_memory(p);
  const Eigen::Index T = p.T(), dk = p.dk();
  // A_t (serial's recursion replayed) and max_t ‖A_t‖_F.
  std::vector<Mat<double>> a(1, m0.a);
  for (Eigen::Index t = 0; t < T; ++t) {
    a.push_back(a.back());
    vla::penalise(p.opt, a.back(), Vec<double>(p.u.row(t).transpose()), m0.tokens + t + 1);
  }
  double a_max = 0;
  for (const Mat<double>& at : a) a_max = std::max(a_max, at.norm());
  // G*: the largest ‖F_{s+1} ⋯ F_t‖₂ over s ≤ t (1 for the empty product).
  std::vector<Mat<double>> f;
  for (Eigen::Index t = 0; t < T; ++t)
    f.push_back(Mat<double>::Identity(dk, dk) - w.khat.row(t).transpose() * w.alpha_hat.row(t));
  double growth = 1;
  for (Eigen::Index t = 0; t < T; ++t) {
    Mat<double> prod = Mat<double>::Identity(dk, dk);
    for (Eigen::Index s = t; s >= 1; --s) {
      prod = (f[std::size_t(s)] * prod).eval();
      growth = std::max(growth, Eigen::JacobiSVD<Mat<double>>(prod).singularValues()(0));
    }
  }
  // κ_w and the affine stage's magnitudes, with ‖S_{t−1}‖_F from serial's states.
  double kappa_w = 1, terms = m0.s.norm(), alpha_terms = 0, s_prev = m0.s.norm();
  vla::affine_serial<double>(m0.s, w.khat, w.alpha_hat, p.v, [&](Eigen::Index t, const Mat<double>& x) {
    const Vec<double> khat = w.khat.row(t).transpose();
    const double alpha = w.alpha_hat.row(t).norm();
    kappa_w = std::max(kappa_w, a_max * khat.norm() / (a[std::size_t(t + 1)] * khat).norm());
    terms += p.v.row(t).norm() * alpha;
    alpha_terms += (p.v.row(t).norm() + s_prev) * alpha;
    s_prev = x.norm();
  });
  const double c = 4.0 * double(T + dk);
  const double state = c * growth * (terms + kappa_w * alpha_terms);
  return {c * a_max, state, state * read_factor(p)};
}

// The largest relative differences chunked vs serial over a test's cases, recorded in its JUnit XML.
struct Agreement {
  double outputs = 0, state = 0, penalty = 0;
  void record() const {
    auto sci = [](double x) {
      std::ostringstream os;
      os << std::setprecision(3) << x;
      return os.str();
    };
    ::testing::Test::RecordProperty("max_rel_diff_outputs", sci(outputs));
    ::testing::Test::RecordProperty("max_rel_diff_final_state", sci(state));
    ::testing::Test::RecordProperty("max_rel_diff_final_penalty", sci(penalty));
  }
};

template <class S>
double max_rel(const Mat<S>& got, const Mat<S>& want) {
  return larc::testing::max_abs_diff<S>(got, want) / std::max(1e-300, larc::testing::max_abs<S>(want));
}

template <class S>
void expect_chunked_equals_serial(const vla::Problem<double>& pd, Eigen::Index chunk, const std::string& what,
                                  Agreement& agreement) {
  const vla::Problem<S> p = cast<S>(pd);
  const ChunkedBound b = chunked_bound(pd);
  const vla::Result<S> ser = vla::serial(p), chk = vla::chunked(p, chunk);
  // The tolerance must be able to fail on a wrong formula (an O(1) relative change), not only on rounding.
  EXPECT_LT(b.output, 1e8 * larc::testing::max_abs<S>(ser.o)) << what << ": tolerance above 1e8 u of the outputs";
  expect_agree<S>(chk.o, ser.o, b.output, what + " outputs");
  expect_agree<S>(chk.final_memory.s, ser.final_memory.s, b.state, what + " final S^T");
  expect_agree<S>(chk.final_memory.a, ser.final_memory.a, b.a, what + " final A");
  EXPECT_TRUE(chk.final_memory.zeta == ser.final_memory.zeta) << what << " zeta (the same sums in the same order)";
  EXPECT_EQ(chk.final_memory.tokens, ser.final_memory.tokens) << what;
  agreement.outputs = std::max(agreement.outputs, max_rel<S>(chk.o, ser.o));
  agreement.state = std::max(agreement.state, max_rel<S>(chk.final_memory.s, ser.final_memory.s));
  agreement.penalty = std::max(agreement.penalty, max_rel<S>(chk.final_memory.a, ser.final_memory.a));
}

vla::Problem<double> chunked_case(const Variant& var, Eigen::Index T, Eigen::Index dk, Eigen::Index dv, bool init,
                                  std::uint64_t seed) {
  vla::Problem<double> p = make_problem(var, T, dk, dv, false, seed);
  p.opt.nudge_eps = kNudgeEps;
  if (init) p.initial = vla::serial(make_problem(var, 11, dk, dv, false, seed + 1)).final_memory;  // nudge phase 11
  return p;
}

template <class S>
class VlaChunked : public ::testing::Test {};
using Scalars = ::testing::Types<double, dd>;
TYPED_TEST_SUITE(VlaChunked, Scalars);

}  // namespace

TYPED_TEST(VlaChunked, EqualsSerial) {
  Agreement agreement;
  for (const Variant& var : kVariants)
    for (Eigen::Index chunk : kChunks)
      for (Eigen::Index T : {Eigen::Index(1), Eigen::Index(67)})
        for (bool init : {false, true}) {
          const std::uint64_t seed = 100 * T + 10 * chunk + init;
          expect_chunked_equals_serial<TypeParam>(chunked_case(var, T, 6, 4, init, seed), chunk,
                                                  std::string(var.name) + " C=" + std::to_string(chunk) + " T=" + std::to_string(T) +
                                                      (init ? " init" : "") + " seed=" + std::to_string(seed),
                                                  agreement);
        }
  agreement.record();
}

namespace {
using Q = rational;

// Unnormalised writes and the identity feature map keep every quantity rational; the start A is I/λ0 or
// indefinite (diag(1, −2, …)), the latter so that δ_t = 1 + u_t^T z_t falls below stab_eps and is floored.
vla::Problem<Q> rational_case(Eigen::Index T, Eigen::Index dk, Eigen::Index dv, bool ratio, bool indefinite,
                              std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  vla::Problem<Q> p{src.matrix(T, dk), src.matrix(T, dk), src.matrix(T, dv), src.matrix(T, dk), {}, {}};
  p.opt.normalize = false;
  p.opt.feature = vla::FeatureMap::identity;
  p.opt.ratio = ratio;
  p.opt.scale = Q(1) / Q(3);
  p.opt.lambda0 = Q(1) / Q(2);
  p.opt.stab_eps = Q(1) / Q(10000);
  p.opt.nudge_period = 3;  // inside every chunk of 16, across the boundaries of chunks of 2
  p.opt.nudge_eps = Q(1) / Q(20);
  p.initial = vla::empty_memory(p.opt, dk, dv);
  p.initial->s = src.matrix(dk, dv);
  p.initial->zeta = src.vector(dk);
  p.initial->tokens = 2;  // the first nudge follows the first token
  if (indefinite)
    for (Eigen::Index i = 1; i < dk; i += 2) p.initial->a(i, i) = Q(-2);
  return p;
}

// How many δ_t serial floors at stab_eps (the recursion replayed with vla::penalise).
int floored_deltas(const vla::Problem<Q>& p) {
  Mat<Q> a = vla::start_memory(p).a;
  int floored = 0;
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    const Vec<Q> u = p.u.row(t).transpose();
    if (Q(1) + Q(u.dot(Vec<Q>(a * u))) < p.opt.stab_eps) ++floored;
    vla::penalise(p.opt, a, u, vla::start_memory(p).tokens + t + 1);
  }
  return floored;
}

}  // namespace

TEST(VlaChunkedExact, EqualsSerialInRationals) {
  int floored = 0;
  for (Eigen::Index chunk : {1, 2, 3, 16})
    for (bool ratio : {true, false})
      for (bool indefinite : {false, true}) {
        const Eigen::Index T = indefinite ? 7 : 11;
        const vla::Problem<Q> p = rational_case(T, 3, 2, ratio, indefinite, 10 * chunk + 2 * ratio + indefinite);
        floored += floored_deltas(p);
        const vla::Result<Q> ser = vla::serial(p), chk = vla::chunked(p, chunk);
        const std::string what = "C=" + std::to_string(chunk) + (ratio ? " ratio" : " plain") + (indefinite ? " indefinite A" : "");
        EXPECT_TRUE(chk.o == ser.o) << what << " outputs";
        EXPECT_TRUE(chk.final_memory.s == ser.final_memory.s) << what << " S^T";
        EXPECT_TRUE(chk.final_memory.a == ser.final_memory.a) << what << " A";
        EXPECT_TRUE(chk.final_memory.zeta == ser.final_memory.zeta) << what << " zeta";
      }
  EXPECT_GT(floored, 0) << "no δ_t was floored: the indefinite cases do not reach the floor";
}

TEST(VlaChunked, SplitRunsCarryTheMemoryAndTheNudgePhase) {
  vla::Problem<double> p = chunked_case(kVariants[1], 67, 5, 3, false, 21);  // nudge every 7 tokens
  const vla::Result<double> whole = vla::serial(p);
  auto first = p, second = p;
  first.q = p.q.topRows(23), first.k = p.k.topRows(23), first.v = p.v.topRows(23), first.u = p.u.topRows(23);
  second.q = p.q.bottomRows(44), second.k = p.k.bottomRows(44), second.v = p.v.bottomRows(44), second.u = p.u.bottomRows(44);
  const vla::Result<double> r1 = vla::chunked(first, 16);
  second.initial = r1.final_memory;
  const vla::Result<double> r2 = vla::chunked(second, 16);
  const ChunkedBound b = chunked_bound(p);
  expect_agree<double>(r1.o, Mat<double>(whole.o.topRows(23)), b.output, "first part");
  expect_agree<double>(r2.o, Mat<double>(whole.o.bottomRows(44)), b.output, "second part");
  expect_agree<double>(r2.final_memory.a, whole.final_memory.a, b.a, "final A");
  EXPECT_EQ(r2.final_memory.tokens, 67);
}

TEST(VlaChunked, ChunkSizeBelowOneIsRefused) {
  const vla::Problem<double> p = chunked_case(kVariants[0], 5, 3, 2, false, 1);
  EXPECT_THAT([&] { vla::chunked(p, 0); },
              ::testing::ThrowsMessage<std::invalid_argument>(::testing::HasSubstr("chunk size must be >= 1")));
}
