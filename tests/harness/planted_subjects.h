// Planted defects for the fuzzer's tests: subjects registered for gdn that compute the reference
// serial form in float and then corrupt its outputs in a known way.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "larc/harness/subject.h"

namespace larc::harness::planted {

// A planted subject: the reference serial form in float, then `corrupt` applied to its outputs.
inline void register_planted(const std::string& name, std::function<void(const TensorMap& in, ValueMap& out)> corrupt,
                      ShapeLimits limits = {}) {
  for (const Subject& s : subjects())
    if (s.name == name) return;
  Subject s;
  s.name = name;
  s.mechanism = "gdn";
  s.dtypes = {Dtype::fp32};
  s.limits = std::move(limits);
  s.launch = [corrupt](const TensorMap& in, TensorMap& out) {
    ValueMap values = find_mechanism("gdn").compute(decode_all(in), Precision::f32, ref::Form::serial, 0);
    corrupt(in, values);
    for (auto& [name, t] : out)
      for (std::size_t i = 0; i < t.size(); ++i) t.set(i, values.at(name).data[i]);
  };
  register_subject(std::move(s));
}

// Planted defect: from T = 3 on, the last timestep's output is scaled by 1.01.
inline const char* kLastStep = "planted-last-step-from-T3";
inline void register_last_step_defect() {
  register_planted(kLastStep, [](const TensorMap&, ValueMap& out) {
    ref::Tensor<double>& o = out.at("o");  // [B, T, H, V]
    const std::int64_t T = o.dim(1), per_t = o.dim(2) * o.dim(3);
    if (T < 3) return;
    for (std::int64_t b = 0; b < o.dim(0); ++b)
      for (std::int64_t i = 0; i < per_t; ++i) o.data[(b * T + T - 1) * per_t + i] *= 1.01;
  });
}

// Planted defect whose error grows steeply with key collinearity: o scaled by 1 + r,
// r = 1e-8 · e^{14m} / (1 − m + 1e-6), m the mean cosine between consecutive keys of a head (0 when
// T = 1), so r runs from about 1e-8 (random keys, where the same-precision baseline's own error is
// about 1e-7) to about 6 (collinearity 0.999); head dimension 8 (with K = 1 every pair of keys is
// collinear whatever the knob says).
inline const char* kCollinear = "planted-collinear-error";
inline void register_collinear_defect() {
  register_planted(kCollinear, [](const TensorMap& in, ValueMap& out) {
    const ref::Tensor<double> k = in.at("k").decode();  // [B, T, H, K]
    const std::int64_t B = k.dim(0), T = k.dim(1), H = k.dim(2), K = k.dim(3);
    double cos_sum = 0;
    std::int64_t pairs = 0;
    auto at = [&](std::int64_t b, std::int64_t t, std::int64_t h, std::int64_t d) {
      return k.data[((b * T + t) * H + h) * K + d];
    };
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t h = 0; h < H; ++h)
        for (std::int64_t t = 0; t + 1 < T; ++t) {
          double dot = 0, n0 = 0, n1 = 0;
          for (std::int64_t d = 0; d < K; ++d) {
            dot += at(b, t, h, d) * at(b, t + 1, h, d);
            n0 += at(b, t, h, d) * at(b, t, h, d);
            n1 += at(b, t + 1, h, d) * at(b, t + 1, h, d);
          }
          cos_sum += dot / std::sqrt(n0 * n1);
          ++pairs;
        }
    const double m = pairs ? cos_sum / static_cast<double>(pairs) : 0;
    const double r = 1e-8 * std::exp(14 * m) / (1 - m + 1e-6);
    for (double& x : out.at("o").data) x *= 1 + r;
  }, ShapeLimits{.head_dims = {8}});
}

}  // namespace larc::harness::planted
