// Seeded linear-attention problems (SPEC "Baselines", LA) for the linear_attention_* tests, and the
// tolerance their forms are compared with.
//
// Tolerance (derived): |form − serial| ≤ c · (T + d_k + 2) · u · M per entry, u the scalar's unit
// roundoff, c = 4, and M the sum of absolute terms every form adds up (no term is ever amplified:
// LA has no transitions). With the absolute memory A_t = |S_0| + Σ_{s≤t} |φ(k_s)| |v_s|^T and
// Z_t = |z_0| + Σ_{s≤t} |φ(k_s)| (both grow with t, so they bound the chunk-start memories the
// chunked form reads):
//   plain outputs   M = scale · max_{t,j} Σ_i |φ(q_t)_i| A_t,ij;
//   ratio outputs   M = max_{t,j} Σ_i φ(q_t)_i A_t,ij / den_t (φ > 0 here, so the denominator
//                   den_t = z_t^T φ(q_t) + ε has no cancellation and its relative error is ≤ (T + d_k)u);
//   final memory    M = max A_T for S, max Z_T for z.
// T + d_k + 2: a sum of T + 1 terms, each a product from a dot product of length d_k, then the
// scale or the division. Over 20 seeds of the grid the worst measured ratio |form − serial| /
// ((T + d_k + 2) u M) was 0.61 (double) and 0.30 (dd): c = 4 leaves a margin of 6.
#pragma once

#include <cstdint>
#include <string>

#include "forms_tolerance.h"
#include "larc/proofs_check/exact.h"
#include "larc/properties/generators.h"
#include "larc/reference/delta_rule.h"
#include "larc/reference/linear_attention.h"

namespace larc::testing {

namespace la = larc::ref::linear_attention;

inline constexpr double kLaGrowthConstant = 4;

struct LaVariant {
  la::FeatureMap feature;
  bool ratio;
};

struct LaShape {
  Eigen::Index T, dk, dv;
  bool initial_memory;
};

inline std::string variant_name(const LaVariant& v) {
  return std::string(v.feature == la::FeatureMap::identity ? "identity" : "elu1") + (v.ratio ? "_ratio" : "_plain");
}

inline std::string describe(const LaVariant& v, const LaShape& s, std::uint64_t seed) {
  return "LA " + variant_name(v) + " T=" + std::to_string(s.T) + " dk=" + std::to_string(s.dk) +
         " dv=" + std::to_string(s.dv) + (s.initial_memory ? " with memory" : " empty memory") +
         " seed=" + std::to_string(seed);
}

// q, k, v N(0, 1) in double (exact in every wider rung); plain scale d_k^{-1/2}, ratio ε = 1e-6.
// The initial memory, when asked for, is what 5 earlier tokens would have written:
// S_0 = Σ φ(k') v'^T, z_0 = Σ φ(k'), so the ratio's denominators stay positive under φ = ELU + 1.
template <class S>
la::Problem<S> make_la_problem(const LaVariant& var, const LaShape& s, std::uint64_t seed) {
  using larc::ref::cast_matrix;
  using larc::ref::cast_vector;
  props::Rng rng(seed);
  la::Problem<S> p;
  p.q = cast_matrix<S>(props::gaussian(rng, s.T, s.dk, 1.0));
  p.k = cast_matrix<S>(props::gaussian(rng, s.T, s.dk, 1.0));
  p.v = cast_matrix<S>(props::gaussian(rng, s.T, s.dv, 1.0));
  p.opt.feature = var.feature;
  p.opt.ratio = var.ratio;
  p.opt.eps = var.ratio ? S(1e-6) : S(0);
  p.opt.scale = larc::ref::delta_rule::default_scale<S>(s.dk);
  if (s.initial_memory) {
    const Mat<S> fk = la::feature_rows(var.feature, cast_matrix<S>(props::gaussian(rng, 5, s.dk, 1.0)));
    const Mat<S> v = cast_matrix<S>(props::gaussian(rng, 5, s.dv, 1.0));
    p.initial_state = Mat<S>(fk.transpose() * v);
    p.initial_normalizer = Vec<S>(fk.colwise().sum().transpose());
  }
  return p;
}

// The same in exact arithmetic (identity features only: ELU + 1 needs exp): random rationals n/d,
// |n| ≤ 9, d ≤ 8; plain scale 1/2, ratio ε = 1/7919 (so no denominator is exactly 0 by accident).
inline la::Problem<larc::ref::rational> make_la_rational_problem(const LaVariant& var, const LaShape& s,
                                                                 std::uint64_t seed) {
  using larc::ref::rational;
  larc::proofs::RationalSource src(seed, 9, 8);
  la::Problem<rational> p;
  p.q = src.matrix(s.T, s.dk);
  p.k = src.matrix(s.T, s.dk);
  p.v = src.matrix(s.T, s.dv);
  p.opt.feature = var.feature;
  p.opt.ratio = var.ratio;
  p.opt.eps = var.ratio ? rational(1, 7919) : rational(0);
  p.opt.scale = rational(1, 2);
  if (s.initial_memory) {
    const Mat<rational> k = src.matrix(5, s.dk), v = src.matrix(5, s.dv);
    p.initial_state = Mat<rational>(k.transpose() * v);
    p.initial_normalizer = Vec<rational>(k.colwise().sum().transpose());
  }
  return p;
}

struct LaMagnitudes {
  double output = 0, state = 0, normalizer = 0;
};

template <class S>
LaMagnitudes la_magnitudes(const la::Problem<S>& p) {
  using larc::ref::cast_matrix;
  using larc::ref::cast_vector;
  const la::Memory<S> m0 = la::start_memory(p);
  Mat<double> a = cast_matrix<double>(m0.s).cwiseAbs();
  Vec<double> z = cast_vector<double>(m0.z).cwiseAbs();
  const Mat<double> fq = cast_matrix<double>(la::feature_rows(p.opt.feature, p.q));
  const Mat<double> fk = cast_matrix<double>(la::feature_rows(p.opt.feature, p.k));
  const Mat<double> v = cast_matrix<double>(p.v);
  const double scale = std::fabs(larc::ref::to_double(p.opt.scale));
  const double eps = larc::ref::to_double(p.opt.eps);
  LaMagnitudes m;
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    a += fk.row(t).transpose().cwiseAbs() * v.row(t).cwiseAbs();
    z += fk.row(t).transpose().cwiseAbs();
    const double terms = (fq.row(t).cwiseAbs() * a).maxCoeff();
    m.output = std::max(m.output, p.opt.ratio ? terms / (fq.row(t).dot(z) + eps) : scale * terms);
  }
  m.state = a.size() ? a.maxCoeff() : 0.0;
  m.normalizer = z.size() ? z.maxCoeff() : 0.0;
  return m;
}

// One form's result against another's: outputs, final memory S and normaliser z.
template <class S>
void expect_same_la_result(const la::Result<S>& got, const la::Result<S>& want, const la::Problem<S>& p,
                           const std::string& what) {
  LaMagnitudes m;
  if constexpr (!larc::ref::ScalarTraits<S>::exact) m = la_magnitudes(p);
  const double growth = kLaGrowthConstant * static_cast<double>(p.T() + p.dk() + 2);
  expect_agree<S>(got.o, want.o, growth * m.output, what + " outputs");
  expect_agree<S>(got.final_memory.s, want.final_memory.s, growth * m.state, what + " final S");
  expect_agree<S>(Mat<S>(got.final_memory.z), Mat<S>(want.final_memory.z), growth * m.normalizer, what + " final z");
}

inline constexpr Eigen::Index kLaChunkSizes[] = {1, 7, 16, 64};

// serial == materialized == chunked(C) for every C in kLaChunkSizes.
template <class S>
void expect_la_forms_agree(const la::Problem<S>& p, const std::string& label) {
  ::testing::Test::RecordProperty("case", label);
  const la::Result<S> serial = la::serial(p);
  ASSERT_EQ(serial.o.rows(), p.T());
  expect_same_la_result(la::materialized(p), serial, p, label + ": materialized vs serial");
  for (const Eigen::Index c : kLaChunkSizes)
    expect_same_la_result(la::chunked(p, c), serial, p, label + ": chunked C=" + std::to_string(c) + " vs serial");
}

}  // namespace larc::testing
