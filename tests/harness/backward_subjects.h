// Backward subjects for the gradient-gate tests: GDN gradients computed the way a chunked backward
// kernel computes them — chunk by chunk from the forward states at chunk starts, with ∂L/∂S carried
// from each chunk to the one before — honest, or with a realistic defect planted in the carry or in the
// gradients it returns (never a copy of the adjoint's arithmetic). Within a chunk, an fp32 kernel's
// arithmetic is the reference adjoint's (serial, float); an io kernel's is the chunked (UT/WY) backward
// with every matrix-product operand rounded to the input dtype (delta_rule_chunked_backward.h).
#pragma once

#include <functional>
#include <string>

#include "io_subjects.h"
#include "larc/reference/delta_rule_backward_batched.h"
#include "larc/reference/low_precision.h"

namespace larc::harness::backward_subjects {

namespace dr = ref::delta_rule;
using ref::Mat;

inline ref::Tensor<float> to_float(const ref::Tensor<double>& x) {
  ref::Tensor<float> r(x.shape);
  for (std::size_t i = 0; i < x.data.size(); ++i) r.data[i] = static_cast<float>(x.data[i]);
  return r;
}
inline ref::Tensor<double> to_double(const ref::Tensor<float>& x) {
  ref::Tensor<double> r(x.shape);
  for (std::size_t i = 0; i < x.data.size(); ++i) r.data[i] = x.data[i];
  return r;
}

// Edits the ∂L/∂S carried from a chunk to the one before it.
using CarryEdit = std::function<void(Mat<float>&)>;

// GDN's gradients (gdn-backward's outputs) in float for decoded inputs: per (sequence, head) the
// forward states at chunk starts, then the backward of each chunk from the last to the first with
// dht = the carry from the chunk after it (`carry` applied in between); with an operand format, the
// forward and backward chunks in chunked form with their products' operands rounded to it.
inline ValueMap chunked_gdn_gradients(const ValueMap& in, std::int64_t chunk, const CarryEdit& carry = {},
                                      ref::OperandFormat operands = ref::OperandFormat::none) {
  const ref::MatmulOperands<float> ops(operands);
  dr::BackwardForm<float> form;  // the serial adjoint, or with rounded operands the chunked backward
  if (ops.rounds()) {
    form.chunk = chunk;
    form.ops = ops;
  }
  const auto q = to_float(in.at("q")), k = to_float(in.at("k")),
             v = to_float(in.at("v")), g = to_float(in.at("g")),
             beta = to_float(in.at("beta")), d_o = to_float(in.at("do"));
  const std::int64_t B = q.dim(0), T = q.dim(1), H = q.dim(2), K = q.dim(3), V = v.dim(3);
  ref::Tensor<float> dq({B, T, H, K}), dk({B, T, H, K}), dv({B, T, H, V}), dg({B, T, H}), dbeta({B, T, H}),
      dh0({B, H, K, V});
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h) {
      dr::Problem<float> whole{ref::head_rows(q, b, h), ref::head_rows(k, b, h), ref::head_rows(v, b, h),
                               dr::decays_from_log(ref::head_gate(g, b, h)), ref::head_gate(beta, b, h),
                               dr::default_scale<float>(K), {}};
      std::vector<Mat<float>> starts{in.count("initial_state")
                                         ? ref::head_state(to_float(in.at("initial_state")), b, h)
                                         : Mat<float>(Mat<float>::Zero(K, V))};
      auto segment = [&](std::int64_t c0) {
        const std::int64_t n = std::min(chunk, T - c0);
        dr::Problem<float> p{whole.q.middleRows(c0, n), whole.k.middleRows(c0, n), whole.v.middleRows(c0, n),
                             whole.alpha.segment(c0, n), whole.beta.segment(c0, n), whole.scale, starts[c0 / chunk]};
        return p;
      };
      auto forward = [&](const dr::Problem<float>& p) { return ops.rounds() ? dr::chunked(p, chunk, ops) : dr::serial(p); };
      for (std::int64_t c0 = chunk; c0 < T; c0 += chunk) starts.push_back(forward(segment(c0 - chunk)).final_state);
      Mat<float> carried = in.count("dht") ? ref::head_state(to_float(in.at("dht")), b, h)
                                           : Mat<float>(Mat<float>::Zero(K, V));
      const Mat<float> d_o_head = ref::head_rows(d_o, b, h);
      Mat<float> hq(T, K), hk(T, K), hv(T, V);
      ref::Vec<float> hg(T), hb(T);
      for (std::int64_t c0 = (T - 1) / chunk * chunk; c0 >= 0; c0 -= chunk) {
        const dr::Problem<float> p = segment(c0);
        const std::int64_t n = p.T();
        const dr::ChunkedGradients<float> gc =
            dr::gradients_in_form(p, dr::Cotangents<float>{d_o_head.middleRows(c0, n), carried}, form);
        const dr::Gradients<float>& gr = gc.grads;
        hq.middleRows(c0, n) = gr.dq;
        hk.middleRows(c0, n) = gr.dk;
        hv.middleRows(c0, n) = gr.dv;
        hg.segment(c0, n) = gc.dg;
        hb.segment(c0, n) = gr.dbeta;
        carried = gr.d_initial_state;
        if (c0 > 0 && carry) carry(carried);
      }
      ref::set_head_rows(dq, b, h, hq);
      ref::set_head_rows(dk, b, h, hk);
      ref::set_head_rows(dv, b, h, hv);
      ref::set_head_gate(dg, b, h, hg);
      ref::set_head_gate(dbeta, b, h, hb);
      ref::set_head_state(dh0, b, h, carried);
    }
  return {{"dq", to_double(dq)}, {"dk", to_double(dk)}, {"dv", to_double(dv)},
          {"dg", to_double(dg)}, {"dbeta", to_double(dbeta)}, {"dh0", to_double(dh0)}};
}

// Registers (once) a gdn-backward subject: `compute` on the decoded inputs and the case's dtype, then
// `edit_outputs`; it declares `grades` and runs on `dtypes`.
inline void register_gdn_backward(const std::string& name, std::function<ValueMap(const ValueMap&, Dtype)> compute,
                                  io_subjects::Edit edit_outputs = {}, GradeDeclaration grades = {},
                                  std::vector<Dtype> dtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32}) {
  for (const Subject& s : subjects())
    if (s.name == name) return;
  Subject s;
  s.name = name;
  s.mechanism = "gdn-backward";
  s.dtypes = std::move(dtypes);
  s.grades = std::move(grades);
  s.launch = [compute, edit_outputs](const TensorMap& in, TensorMap& out) {
    ValueMap o = compute(decode_all(in), in.at("q").dtype());
    if (edit_outputs) edit_outputs(o);
    io_subjects::write_outputs(o, out);
  };
  register_subject(std::move(s));
}
inline void register_gdn_backward(const std::string& name, std::function<ValueMap(const ValueMap&)> compute,
                                  io_subjects::Edit edit_outputs = {}) {
  register_gdn_backward(name, [compute](const ValueMap& in, Dtype) { return compute(in); }, std::move(edit_outputs));
}

}  // namespace larc::harness::backward_subjects
