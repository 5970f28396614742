// GDN subjects for the precision-grade and profile tests: kernels built from the reference's own
// forms (never a copy of their arithmetic), honest or with a realistic defect planted by editing the
// inputs the form sees or the outputs it returns.
#pragma once

#include <cmath>
#include <functional>
#include <string>

#include "larc/harness/grade.h"
#include "larc/harness/subject.h"
#include "larc/reference/delta_rule.h"

namespace larc::harness::io_subjects {

using Edit = std::function<void(ValueMap&)>;

// The gate's chunk size, at which the planted defects act.
inline constexpr std::int64_t kChunk = 64;

// Writes float64 values into the poisoned outputs (rounded to each output's dtype).
inline void write_outputs(const ValueMap& values, TensorMap& out) {
  for (auto& [name, t] : out)
    for (std::size_t i = 0; i < t.size(); ++i) t.set(i, values.at(name).data[i]);
}

// Registers (once) a GDN subject: `compute` on the decoded inputs after `edit_inputs`, then
// `edit_outputs`; it declares `grades`.
inline void register_gdn(const std::string& name, std::function<ValueMap(const ValueMap&, Dtype)> compute,
                         GradeDeclaration grades, Edit edit_inputs = {}, Edit edit_outputs = {}) {
  for (const Subject& s : subjects())
    if (s.name == name) return;
  Subject s;
  s.name = name;
  s.mechanism = "gdn";
  s.dtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};
  s.grades = std::move(grades);
  s.launch = [compute, edit_inputs, edit_outputs](const TensorMap& in, TensorMap& out) {
    ValueMap values = decode_all(in);
    if (edit_inputs) edit_inputs(values);
    ValueMap o = compute(values, in.at("q").dtype());
    if (edit_outputs) edit_outputs(o);
    write_outputs(o, out);
  };
  register_subject(std::move(s));
}

// The io chunked form (operands in the input dtype's format, TF32 rounded to nearest for fp32) at
// chunk `chunk`.
inline std::function<ValueMap(const ValueMap&, Dtype)> io_form(std::int64_t chunk) {
  return [chunk](const ValueMap& v, Dtype d) {
    return find_mechanism("gdn").compute_io(v, io_operand_format(relaxed_grades_for(d).front(), d), chunk);
  };
}
// The fp32 chunked form (the fp32 grade's arithmetic) at chunk `chunk`.
inline std::function<ValueMap(const ValueMap&, Dtype)> fp32_form(std::int64_t chunk) {
  return [chunk](const ValueMap& v, Dtype) { return find_mechanism("gdn").compute(v, Precision::f32, ref::Form::chunked, chunk); };
}

// The io form run one chunk at a time with the state handed between chunks rounded to the input
// dtype (bf16 or fp16; fp32 stays): a kernel that stores its carried state in its input dtype (a
// known blind spot of the io grade, docs/gate.md).
inline ValueMap io_form_with_low_precision_carry(const ValueMap& v, Dtype d) {
  namespace dr = ref::delta_rule;
  using F = float;
  const ref::Tensor<double>& q = v.at("q");
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3), V = v.at("v").dim(3);
  auto rows = [](const ref::Tensor<double>& x, std::int64_t t0, std::int64_t n) {
    std::vector<std::int64_t> shape = x.shape;
    shape[1] = n;
    ref::Tensor<F> r(shape);
    const std::int64_t per_t = x.data.size() / (x.dim(0) * x.dim(1));
    for (std::int64_t b = 0; b < x.dim(0); ++b)
      for (std::int64_t i = 0; i < n * per_t; ++i)
        r.data[b * n * per_t + i] = static_cast<F>(x.data[(b * x.dim(1) + t0) * per_t + i]);
    return r;
  };
  ValueMap out{{"o", ref::Tensor<double>({B, T, H, V})}, {"final_state", ref::Tensor<double>({B, H, K, V})}};
  ref::Tensor<F> state({B, H, K, V});
  for (std::int64_t t0 = 0; t0 < T; t0 += kChunk) {
    const std::int64_t n = std::min(kChunk, T - t0);
    const dr::BatchedResult<F> r =
        dr::gdn_batched<F>(rows(q, t0, n), rows(v.at("k"), t0, n), rows(v.at("v"), t0, n), rows(v.at("g"), t0, n),
                           rows(v.at("beta"), t0, n), {}, state, ref::Form::chunked, kChunk,
                           io_operand_format(relaxed_grades_for(d).front(), d));
    for (std::int64_t b = 0; b < B; ++b)
      for (std::int64_t i = 0; i < n * H * V; ++i) out["o"].data[(b * T + t0) * H * V + i] = r.o.data[b * n * H * V + i];
    for (std::size_t i = 0; i < state.data.size(); ++i) state.data[i] = static_cast<F>(ref::round_to(d, r.final_state.data[i]));
    for (std::size_t i = 0; i < state.data.size(); ++i) out["final_state"].data[i] = r.final_state.data[i];
  }
  return out;
}

// --- planted defects (input and output edits) -----------------------------------------------------

// Applies f(b, t, h, value) to every element of a [B, T, H] gate tensor.
inline void for_each_gate(ref::Tensor<double>& g, const std::function<void(std::int64_t t, double&)>& f) {
  const std::int64_t B = g.dim(0), T = g.dim(1), H = g.dim(2);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t h = 0; h < H; ++h) f(t, g.data[(b * T + t) * H + h]);
}

// The carried state scaled by `factor` at every chunk boundary (a dropped carry for 0, a damped one
// otherwise): the decay of each chunk's first token scaled, which scales exactly the carried part.
inline Edit carry_scaled(double factor) {
  return [factor](ValueMap& v) {
    for_each_gate(v.at("g"), [&](std::int64_t t, double& g) {
      if (t > 0 && t % kChunk == 0) g += std::log(factor);
    });
  };
}
// The last token of every chunk masked out (an off-by-one chunk mask): its β set to 0.
inline void last_token_dropped(ValueMap& v) {
  for_each_gate(v.at("beta"), [](std::int64_t t, double& beta) {
    if (t % kChunk == kChunk - 1) beta = 0;
  });
}
// Every token decayed by its successor's gate (a one-token slip of the cumulative decay).
inline void decay_slipped(ValueMap& v) {
  ref::Tensor<double>& g = v.at("g");
  const std::int64_t B = g.dim(0), T = g.dim(1), H = g.dim(2);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t t = 0; t + 1 < T; ++t)
      for (std::int64_t h = 0; h < H; ++h) g.data[(b * T + t) * H + h] = g.data[(b * T + t + 1) * H + h];
}
// One 64-token chunk of o (the second, or the first when there is one) 2 % off.
inline void one_chunk_of_o_off(ValueMap& out) {
  ref::Tensor<double>& o = out.at("o");
  const std::int64_t T = o.dim(1), per_t = o.dim(2) * o.dim(3);
  const std::int64_t c0 = T > kChunk ? kChunk : 0, c1 = std::min(T, c0 + kChunk);
  for (std::int64_t b = 0; b < o.dim(0); ++b)
    for (std::int64_t i = (b * T + c0) * per_t; i < (b * T + c1) * per_t; ++i) o.data[i] *= 1.02;
}

}  // namespace larc::harness::io_subjects
