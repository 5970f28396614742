// The accuracy argument for vla-chunked's chunk starts (gpu/src/vla_chunked.cuh, step 0): every chunk
// starts from A_s = M_c⁻¹, M_c = λ0 I + Σ_{s<t0} u_s u_sᵀ (SPEC VLA-C4), the Grams summed and M_c
// inverted by Gauss–Jordan in double from fp32 u, A_s rounded once to fp32, then the chunk's blocked
// Sherman–Morrison steps (vla::penalty_chunk) in float. Modelled here in the reference's types, its α̂_t
// must be at least as accurate as the two float forms the gate takes as baselines for the write
// directions (serial: token by token; chunked: the same blocked steps, A carried from chunk to chunk),
// on well spread and on nearly collinear keys (where M_c's condition grows like t/K). The same start
// inverted in float is not, on the collinear keys: the check can fail, and double is why it passes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>

#include "larc/reference/vla_chunked.h"

using namespace larc::ref;
namespace vla = larc::ref::vla;

namespace {

constexpr Eigen::Index kChunk = 64;  // the kernel's C

// Keys c·w√K + (1 − c)·z, z standard normal, w one unit direction, rows rescaled to norm 1.
Mat<double> keys(Eigen::Index tokens, Eigen::Index dk, double collinearity, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Vec<double> w(dk);
  for (Eigen::Index i = 0; i < dk; ++i) w(i) = normal(rng);
  w.normalize();
  Mat<double> k(tokens, dk);
  for (Eigen::Index t = 0; t < tokens; ++t) {
    for (Eigen::Index i = 0; i < dk; ++i)
      k(t, i) = collinearity * w(i) * std::sqrt(static_cast<double>(dk)) + (1 - collinearity) * normal(rng);
    k.row(t).normalize();
  }
  return k;
}

// M⁻¹ by Gauss–Jordan elimination in place without pivoting, as penalty_start does it (M symmetric
// positive definite), in S.
template <class S>
Mat<S> gauss_jordan_inverse(Mat<S> m) {
  const Eigen::Index n = m.rows();
  for (Eigen::Index p = 0; p < n; ++p) {
    const S inverse = S(1) / m(p, p);
    Vec<S> scaled = m.row(p).transpose() * inverse;
    scaled(p) = inverse;
    Vec<S> factor = m.col(p);
    factor(p) = S(0);
    m.col(p).setZero();
    for (Eigen::Index i = 0; i < n; ++i)
      m.row(i) = i == p ? Mat<S>(scaled.transpose()) : Mat<S>(m.row(i) - factor(i) * scaled.transpose());
  }
  return m;
}

// α̂ (rows) with every chunk's blocked steps in float from A_s: A carried from the chunk before (the
// chunked form), or the kernel's start: the Grams of fp32 u summed in Inv, λ0 I added (M_c), inverted in Inv.
template <class Inv>
Mat<float> alpha_from_starts(const vla::Problem<float>& p, bool carried) {
  const Eigen::Index tokens = p.T(), dk = p.dk();
  const Mat<float> phi_k = linear_attention::feature_rows(p.opt.feature, p.k);
  Mat<float> alpha(tokens, dk), a_carried = Mat<float>::Identity(dk, dk) / p.opt.lambda0;
  Mat<Inv> gram_sum = Mat<Inv>::Zero(dk, dk);
  const Mat<Inv> lambda0_identity = Mat<Inv>::Identity(dk, dk) * static_cast<Inv>(p.opt.lambda0);
  for (Eigen::Index c0 = 0; c0 < tokens; c0 += kChunk) {
    const Eigen::Index n = std::min(kChunk, tokens - c0);
    const Mat<float> u = p.u.middleRows(c0, n);
    Mat<float> khat(n, dk);
    for (Eigen::Index t = 0; t < n; ++t)
      khat.row(t) = vla::key_direction(p.opt, Vec<float>(phi_k.row(c0 + t).transpose())).transpose();
    const Mat<float> a_start =
        carried ? a_carried : Mat<float>(gauss_jordan_inverse(Mat<Inv>(gram_sum + lambda0_identity)).template cast<float>());
    vla::PenaltyChunk<float> pen = vla::penalty_chunk(p.opt, a_start, u, khat, c0 + 1);
    alpha.middleRows(c0, n) = pen.alpha_hat;
    a_carried = std::move(pen.a_end);
    const Mat<Inv> u_inv = u.cast<Inv>();
    gram_sum += u_inv.transpose() * u_inv;
  }
  return alpha;
}

// max_t ‖α̂_t − α̂_t(double serial)‖.
double worst_alpha_error(const Mat<float>& alpha, const Mat<double>& exact) {
  return (alpha.cast<double>() - exact).rowwise().norm().maxCoeff();
}

struct Errors {
  double serial, chunked, double_start, float_start;
};

Errors errors(Eigen::Index tokens, Eigen::Index dk, double collinearity, std::uint64_t seed) {
  const Mat<double> k = keys(tokens, dk, collinearity, seed);
  const vla::Problem<double> exact{Mat<double>::Zero(tokens, dk), k, Mat<double>::Zero(tokens, 1),
                                   vla::authors_penalty_directions<double>(k, Mat<double>::Identity(dk, dk)), {}, {}};
  const Mat<float> k_float = k.cast<float>();
  const vla::Problem<float> fp{Mat<float>::Zero(tokens, dk), k_float, Mat<float>::Zero(tokens, 1),
                               vla::authors_penalty_directions<float>(k_float, Mat<float>::Identity(dk, dk)), {}, {}};
  const Mat<double> alpha = vla::writes(exact).alpha_hat;
  return {worst_alpha_error(vla::writes(fp).alpha_hat, alpha), worst_alpha_error(alpha_from_starts<float>(fp, true), alpha),
          worst_alpha_error(alpha_from_starts<double>(fp, false), alpha),
          worst_alpha_error(alpha_from_starts<float>(fp, false), alpha)};
}

struct Case {
  Eigen::Index tokens, dk;
  double collinearity;
};

TEST(VlaChunkStarts, InvertingThePrefixGramInDoubleIsAtLeastAsAccurateAsTheFloatForms) {
  for (const Case c : {Case{4096, 16, 0.0}, Case{4096, 16, 0.9}, Case{16384, 16, 0.9}, Case{2048, 32, 0.9},
                       Case{1024, 128, 0.0}, Case{1024, 128, 0.9}}) {
    const Errors e = errors(c.tokens, c.dk, c.collinearity, 7);
    SCOPED_TRACE(::testing::Message() << "T = " << c.tokens << ", K = " << c.dk << ", collinearity " << c.collinearity
                                      << ": serial " << e.serial << ", chunked " << e.chunked << ", double start "
                                      << e.double_start << ", float start " << e.float_start);
    EXPECT_LE(e.double_start, std::max(e.serial, e.chunked));
    EXPECT_GT(e.double_start, 0.0);  // the model rounds: it is not the double recurrence itself
  }
}

TEST(VlaChunkStarts, TheSameStartInvertedInFloatIsNotOnCollinearKeys) {
  const Errors e = errors(4096, 16, 0.9, 7);
  EXPECT_GT(e.float_start, std::max(e.serial, e.chunked))
      << "serial " << e.serial << ", chunked " << e.chunked << ", float start " << e.float_start;
}

}  // namespace
