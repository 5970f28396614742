// log_linear_batched with FLA's chunk_log_linear_attn conventions (reference/log_linear_batched.h):
// q/k [B,T,1,K] shared by the heads (and [B,T,H,K]), v [B,T,H,V], g log-decays [B,T,H], level_scales
// [B,T,H,L], no scale. Checked against FLA's naive definition written out here from its level masks
// (t mod 2^ℓ ≥ 2^{ℓ−1}, t_ℓ − 2^{ℓ−1} ≤ s < t_ℓ) and cumulative log-decays; every form gives the same
// batch; bad shapes throw naming the field.
#include <gtest/gtest.h>

#include <cmath>

#include "larc/properties/generators.h"
#include "larc/reference/log_linear_batched.h"

namespace {

namespace ll = larc::ref::log_linear;
using larc::ref::Form;
using larc::ref::Tensor;

Tensor<double> random_tensor(larc::props::Rng& rng, std::vector<std::int64_t> shape, double lo, double hi) {
  Tensor<double> x(std::move(shape));
  for (double& e : x.data) e = rng.uniform(lo, hi);
  return x;
}

struct Inputs {
  Tensor<double> q, k, v, g, level_scales, beta;
};

Inputs inputs(std::int64_t B, std::int64_t T, std::int64_t G, std::int64_t H, std::int64_t K, std::int64_t V, std::int64_t L) {
  larc::props::Rng rng(B * 1000 + T * 10 + G);
  return {random_tensor(rng, {B, T, G, K}, -1, 1), random_tensor(rng, {B, T, G, K}, -1, 1),
          random_tensor(rng, {B, T, H, V}, -1, 1), random_tensor(rng, {B, T, H}, -0.5, 0),
          random_tensor(rng, {B, T, H, L}, 0, 2), random_tensor(rng, {B, T, H}, 0, 1)};
}

// FLA's naive_log_linear_attn, one (b, h), from its definition: H = Σ_ℓ mask_ℓ ⊙ λ^{(ℓ)}_t ⊙ exp(segsum(g)).
double naive_entry(const Inputs& x, std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t e) {
  const std::int64_t T = x.q.dim(1), G = x.q.dim(2), H = x.v.dim(2), K = x.q.dim(3), V = x.v.dim(3), L = x.level_scales.dim(3);
  const std::int64_t qh = G == 1 ? 0 : h;
  auto at = [](const Tensor<double>& a, std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t i) {
    return a.data[((b * a.dim(1) + t) * a.dim(2) + h) * a.dim(3) + i];
  };
  double o = 0;
  for (std::int64_t s = 0; s <= t; ++s) {
    double weight = 0;
    for (std::int64_t l = 0; l < L; ++l) {
      bool in_level;
      if (l == 0) {
        in_level = s == t;
      } else {
        const std::int64_t half = std::int64_t{1} << (l - 1), tl = t - t % half;
        in_level = t % (std::int64_t{1} << l) >= half && s + half >= tl && s < tl;
      }
      if (in_level) weight += at(x.level_scales, b, t, h, l);
    }
    double segsum = 0;
    for (std::int64_t r = s + 1; r <= t; ++r) segsum += x.g.data[(b * T + r) * H + h];
    double qk = 0;
    for (std::int64_t i = 0; i < K; ++i) qk += at(x.q, b, t, qh, i) * at(x.k, b, s, qh, i);
    o += weight * std::exp(segsum) * qk * at(x.v, b, s, h, e);
  }
  (void)V;
  return o;
}

TEST(LogLinearBatched, MatchesFlasNaiveDefinition) {
  for (std::int64_t G : {1, 3}) {
    for (std::int64_t T : {1, 17, 70}) {
      const std::int64_t L = larc::ref::fenwick::level_count(T) + 1;  // one spare level, ignored
      const Inputs x = inputs(2, T, G, 3, 4, 2, L);
      for (Form form : {Form::serial, Form::materialized, Form::chunked}) {
        const Tensor<double> o = ll::log_linear_batched(x.q, x.k, x.v, x.g, x.level_scales, {}, 1.0, form, 16);
        ASSERT_EQ(o.shape, (std::vector<std::int64_t>{2, T, 3, 2}));
        double worst = 0, scale = 0;
        for (std::int64_t b = 0; b < 2; ++b)
          for (std::int64_t t = 0; t < T; ++t)
            for (std::int64_t h = 0; h < 3; ++h)
              for (std::int64_t e = 0; e < 2; ++e) {
                const double want = naive_entry(x, b, t, h, e);
                worst = std::max(worst, std::abs(o.data[((b * T + t) * 3 + h) * 2 + e] - want));
                scale = std::max(scale, std::abs(want));
              }
        EXPECT_LE(worst, 1e-13 * std::max(1.0, scale)) << "G=" << G << " T=" << T << " " << larc::ref::form_name(form);
      }
    }
  }
}

TEST(LogLinearBatched, GdnVariantIsTheHeadwiseReference) {
  const Inputs x = inputs(2, 19, 1, 2, 3, 2, 6);
  const Tensor<double> o = ll::log_linear_batched(x.q, x.k, x.v, x.g, x.level_scales, x.beta, 0.5, Form::chunked, 4);
  const Tensor<double> om = ll::log_linear_batched(x.q, x.k, x.v, x.g, x.level_scales, x.beta, 0.5, Form::materialized);
  for (std::int64_t b = 0; b < 2; ++b)
    for (std::int64_t h = 0; h < 2; ++h) {
      ll::Problem<double> p{ll::Variant::gdn, larc::ref::head_rows(x.q, b, 0), larc::ref::head_rows(x.k, b, 0),
                            larc::ref::head_rows(x.v, b, h),
                            larc::ref::head_gate(x.g, b, h).unaryExpr([](double g) { return std::exp(g); }),
                            larc::ref::head_gate(x.beta, b, h), larc::ref::head_rows(x.level_scales, b, h), 0.5, std::nullopt};
      EXPECT_EQ(larc::ref::head_rows(o, b, h), ll::chunked(p, 4)) << b << "," << h;
      EXPECT_EQ(larc::ref::head_rows(om, b, h), ll::materialized(p)) << b << "," << h;
    }
}

TEST(LogLinearBatched, BadShapesThrowNamingTheField) {
  const Inputs x = inputs(2, 17, 1, 3, 4, 2, 6);
  auto expect_message = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no exception; expected one naming " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto call = [&](const Inputs& y) { return ll::log_linear_batched(y.q, y.k, y.v, y.g, y.level_scales, y.beta); };
  Inputs y = x;
  y.level_scales = Tensor<double>({2, 17, 3, 5});
  expect_message([&] { call(y); }, "level_scales: the last dimension L must be >= ceil(log2 T) + 1 = 6 for T = 17, got 5");
  y = x;
  y.level_scales = Tensor<double>({2, 17, 2, 6});
  expect_message([&] { call(y); }, "level_scales: expected shape [2, 17, 3, *]");
  y = x;
  y.q = Tensor<double>({2, 17, 2, 4});
  y.k = y.q;
  expect_message([&] { call(y); }, "q: dimension 2 (query/key heads) must be 1");
  y = x;
  y.k = Tensor<double>({2, 17, 1, 3});
  expect_message([&] { call(y); }, "k: expected shape [2, 17, 1, 4]");
  y = x;
  y.v = Tensor<double>({1, 17, 3, 2});
  expect_message([&] { call(y); }, "v: expected shape [2, 17, *, *]");
  y = x;
  y.g = Tensor<double>({2, 17, 1});
  expect_message([&] { call(y); }, "g: expected shape [2, 17, 3]");
  y = x;
  y.beta = Tensor<double>({2, 16, 3});
  expect_message([&] { call(y); }, "beta: expected shape [2, 17, 3]");
  y = x;
  y.q = Tensor<double>({2, 17, 4});
  expect_message([&] { call(y); }, "q: expected shape [*, *, *, *]");
}

}  // namespace
