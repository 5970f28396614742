// Linear attention (SPEC "Baselines", LA):
//   S_t = S_{t−1} + φ(k_t) v_t^T,  z_t = z_{t−1} + φ(k_t)
//   plain: o_t = scale · S_t^T φ(q_t);   ratio: o_t = S_t^T φ(q_t) / (z_t^T φ(q_t) + ε)
// Materialised: O = ((Φ_Q Φ_K^T) ⊙ L) V (and the same with 1 in place of V for the ratio's
// denominator). φ is the identity or ELU+1.
#pragma once

#include <optional>
#include <stdexcept>

#include "larc/reference/family.h"
#include "larc/reference/matmul_operands.h"
#include "larc/reference/tensor.h"
#include "larc/reference/types.h"

namespace larc::ref::linear_attention {

enum class FeatureMap { identity, elu_plus_one };

// How the memory is written and read; a State carries its own copy.
template <class S>
struct Options {
  FeatureMap feature = FeatureMap::identity;
  bool ratio = false;
  S eps = S(0);    // ratio only: added to the denominator
  S scale = S(1);  // plain only: multiplies the read
};

template <class S>
struct Problem {
  Mat<S> q, k, v;  // T×d_k, T×d_k, T×d_v
  Options<S> opt;
  std::optional<Mat<S>> initial_state;  // d_k×d_v
  std::optional<Vec<S>> initial_normalizer;  // d_k (ratio only)

  Eigen::Index T() const { return q.rows(); }
  Eigen::Index dk() const { return q.cols(); }
  Eigen::Index dv() const { return v.cols(); }
};

// LA's state: the memory S and the normaliser z.
template <class S>
struct Memory {
  Mat<S> s;
  Vec<S> z;
};

template <class S>
struct Result {
  Mat<S> o;
  Memory<S> final_memory;
};

template <class S>
void validate(const Problem<S>& p) {
  auto need = [](bool ok, const char* what) {
    if (!ok) throw std::invalid_argument(std::string("linear_attention: ") + what);
  };
  need(p.k.rows() == p.T() && p.k.cols() == p.dk(), "k must be T×d_k like q");
  need(p.v.rows() == p.T(), "v must have T rows like q");
  if (p.initial_state)
    need(p.initial_state->rows() == p.dk() && p.initial_state->cols() == p.dv(), "initial_state must be d_k×d_v");
  if (p.initial_normalizer) need(p.initial_normalizer->size() == p.dk(), "initial_normalizer must have d_k entries");
}

template <class S>
Vec<S> feature(FeatureMap f, const Vec<S>& x) {
  if (f == FeatureMap::identity) return x;
  return x.unaryExpr([](const S& e) { return elu_plus_one(e); });
}
template <class S>
Mat<S> feature_rows(FeatureMap f, const Mat<S>& x) {
  if (f == FeatureMap::identity) return x;
  return x.unaryExpr([](const S& e) { return elu_plus_one(e); });
}

template <class S>
Memory<S> start_memory(const Problem<S>& p) {
  return {p.initial_state ? *p.initial_state : Mat<S>::Zero(p.dk(), p.dv()),
          p.initial_normalizer ? *p.initial_normalizer : Vec<S>::Zero(p.dk())};
}

// Reads o from a memory with a feature-mapped query.
template <class S>
Vec<S> read(const Options<S>& opt, const Memory<S>& m, const Vec<S>& phi_q) {
  const Vec<S> num = m.s.transpose() * phi_q;
  if (!opt.ratio) return opt.scale * num;
  return num / (S(m.z.dot(phi_q)) + opt.eps);
}

template <class S>
class State {
 public:
  State(Options<S> opt, Memory<S> initial) : opt_(std::move(opt)), m_(std::move(initial)) {}
  Vec<S> step(const Vec<S>& q, const Vec<S>& k, const Vec<S>& v) {
    const Vec<S> phi_k = feature(opt_.feature, k);
    m_.s.noalias() += phi_k * v.transpose();
    m_.z += phi_k;
    return read(opt_, m_, feature(opt_.feature, q));
  }
  const Memory<S>& memory() const { return m_; }

 private:
  Options<S> opt_;
  Memory<S> m_;
};

template <class S>
Result<S> serial(const Problem<S>& p) {
  validate(p);
  State<S> st(p.opt, start_memory(p));
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index t = 0; t < p.T(); ++t)
    o.row(t) = st.step(p.q.row(t).transpose(), p.k.row(t).transpose(), p.v.row(t).transpose()).transpose();
  return {std::move(o), st.memory()};
}

// O(T²) definition: o_t from ((Φ_Q Φ_K^T) ⊙ L) V plus the initial memory's contribution.
template <class S>
Result<S> materialized(const Problem<S>& p) {
  validate(p);
  const Mat<S> fq = feature_rows(p.opt.feature, p.q), fk = feature_rows(p.opt.feature, p.k);
  const Memory<S> m0 = start_memory(p);
  const Mat<S> a = (fq * fk.transpose()).template triangularView<Eigen::Lower>();
  const Mat<S> num = a * p.v + fq * m0.s;
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index t = 0; t < p.T(); ++t) {
    if (!p.opt.ratio) {
      o.row(t) = p.opt.scale * num.row(t);
    } else {
      const S den = S(a.row(t).sum()) + S(fq.row(t).dot(m0.z.transpose())) + p.opt.eps;
      o.row(t) = num.row(t) / den;
    }
  }
  Memory<S> final_memory{m0.s + fk.transpose() * p.v, m0.z + fk.colwise().sum().transpose()};
  return {std::move(o), std::move(final_memory)};
}

// Chunked: inter-chunk memory plus the masked intra-chunk product, chunk size C ≥ 1, any T.
// Every matrix product goes through `ops` (matmul_operands.h): with an operand format it is the `io`
// grade's baseline, whose rounded operands are Φ_Q and Φ_K (of A = (Φ_Q Φ_K^T) ⊙ L), Φ_Q and S_c (the
// inter-chunk read), A and V (A V), and Φ_K and V (the memory update). The ratio's denominator is its
// numerator with 1 in place of V (SPEC "Baselines", LA), so it reads the same rounded Φ_Q, z_c, A and
// Φ_K; the feature map, the division and the carried S, z stay in S (docs/gate.md "Precision grades").
template <class S>
Result<S> chunked(const Problem<S>& p, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  validate(p);
  if (chunk < 1) throw std::invalid_argument("linear_attention::chunked: chunk size must be >= 1");
  Memory<S> m = start_memory(p);
  Mat<S> o(p.T(), p.dv());
  for (Eigen::Index c0 = 0; c0 < p.T(); c0 += chunk) {
    const Eigen::Index n = std::min(chunk, p.T() - c0);
    const Mat<S> fq = feature_rows(p.opt.feature, Mat<S>(p.q.middleRows(c0, n)));
    const Mat<S> fk = feature_rows(p.opt.feature, Mat<S>(p.k.middleRows(c0, n)));
    const Mat<S> V = p.v.middleRows(c0, n);
    const Mat<S> a = ops.product(fq, fk.transpose()).template triangularView<Eigen::Lower>();
    const Mat<S> num = ops.product(fq, m.s) + ops.product(a, V);
    if (!p.opt.ratio) {
      o.middleRows(c0, n) = p.opt.scale * num;
    } else {
      const Mat<S> fq_operand = ops.operand(fq), z_operand = ops.operand(m.z), a_operand = ops.operand(a);
      for (Eigen::Index i = 0; i < n; ++i) {
        const S den = S(fq_operand.row(i).dot(z_operand.col(0).transpose())) + S(a_operand.row(i).sum()) + p.opt.eps;
        o.row(c0 + i) = num.row(i) / den;
      }
    }
    m.s += ops.product(fk.transpose(), V);
    m.z += ops.operand(fk).colwise().sum().transpose();
  }
  return {std::move(o), std::move(m)};
}

// Runs the given form (chunk and ops are used by Form::chunked only). serial is State::step over the
// sequence, so Form::streamed and Form::serial coincide for LA.
template <class S>
Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops = {}) {
  switch (form) {
    case Form::serial:
    case Form::streamed: return serial(p);
    case Form::materialized: return materialized(p);
    case Form::chunked: return chunked(p, chunk, ops);
  }
  throw std::invalid_argument("linear_attention::run: unknown form");
}

// The linear-attention family (plain and ratio reads, SPEC §1's LA) for the batched driver and the
// harness (family.h).
struct Family {
  static constexpr std::string_view name = "linear attention";
  static constexpr std::array forms{Form::serial, Form::materialized, Form::chunked};
  template <class S>
  using Problem = linear_attention::Problem<S>;
  template <class S>
  using Result = linear_attention::Result<S>;
  template <class S>
  static Result<S> run(const Problem<S>& p, Form form, Eigen::Index chunk, const MatmulOperands<S>& ops) {
    return linear_attention::run(p, form, chunk, ops);
  }
};
static_assert(MechanismFamily<Family>);

template <class S>
struct BatchedResult {
  Tensor<S> o;                 // [B, T, H, d_v]
  Tensor<S> final_state;       // [B, H, d_k, d_v]
  Tensor<S> final_normalizer;  // [B, H, d_k]

  BatchedResult(const BatchedDims& d)
      : o({d.B, d.T, d.H, d.V}), final_state({d.B, d.H, d.K, d.V}), final_normalizer({d.B, d.H, d.K}) {}
  // Puts head (b, h)'s outputs and final memory in place.
  void set_head(std::int64_t b, std::int64_t h, const Result<S>& r) {
    set_head_rows(o, b, h, r.o);
    set_head_state(final_state, b, h, r.final_memory.s);
    set_head_vector(final_normalizer, b, h, r.final_memory.z);
  }
};

// (b, h)'s problem of a batched call: its rows of q, k, v, the read `opt` and its initial memory
// (state [B, H, d_k, d_v] and normaliser [B, H, d_k]).
template <class S>
Problem<S> head_problem(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Options<S>& opt,
                        const std::optional<Tensor<S>>& initial_state, const std::optional<Tensor<S>>& initial_normalizer,
                        std::int64_t b, std::int64_t h) {
  Problem<S> p{head_rows(q, b, h), head_rows(k, b, h), head_rows(v, b, h), opt, {}, {}};
  if (initial_state) p.initial_state = head_state(*initial_state, b, h);
  if (initial_normalizer) p.initial_normalizer = head_vector(*initial_normalizer, b, h);
  return p;
}

// [B, T, H, D] tensors as FLA lays them out; optional initial memory [B, H, d_k, d_v] and [B, H, d_k];
// `operands` rounds the chunked form's product operands (the io grade's baseline, see chunked).
template <class S>
BatchedResult<S> la_batched(const Tensor<S>& q, const Tensor<S>& k, const Tensor<S>& v, const Options<S>& opt,
                            const std::optional<Tensor<std::type_identity_t<S>>>& initial_state = {},
                            const std::optional<Tensor<std::type_identity_t<S>>>& initial_normalizer = {}, Form form = Form::serial,
                            Eigen::Index chunk = 64, OperandFormat operands = OperandFormat::none) {
  const BatchedDims d = batched_dims(q, k, v, initial_state ? &*initial_state : nullptr);
  if (initial_normalizer) require_shape(*initial_normalizer, "initial_normalizer", {d.B, d.H, d.K});
  BatchedResult<S> r(d);
  run_each_head<Family, S>(
      d.B, d.H, form, chunk, operands,
      [&](std::int64_t b, std::int64_t h) { return head_problem(q, k, v, opt, initial_state, initial_normalizer, b, h); },
      [&](std::int64_t b, std::int64_t h, const Result<S>& res) { r.set_head(b, h, res); });
  return r;
}

}  // namespace larc::ref::linear_attention
