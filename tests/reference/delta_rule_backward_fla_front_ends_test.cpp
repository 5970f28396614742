// FLA's in-kernel front ends composed with the delta-rule adjoint (docs/gradients.md, "Front ends"),
// at 266-bit MPFR: for raw inputs (q, k before l2norm; the gate's x, A_log, b; the step's z; v; S_0),
// q̂, k̂ = l2norm(q, k), g = −e^{A_log} softplus(x + b), α = e^g, β = c σ(z) (c = 1, 2), the chain
// backward → log_decay_gradient → gate / sigmoid / l2norm backward gives ⟨∇L, δ⟩ for a random tangent
// δ of the raw inputs, which must agree with the central difference (L(x + hδ) − L(x − hδ)) / 2h,
// h = 2⁻⁸⁰, to 30 digits (truncation ≈ 2⁻¹⁶⁰ times the third derivative, rounding ≈ 2⁻¹⁸⁶ relative). Keys are not normalised
// beforehand, so the radial part of dk (projected out by the l2norm's backward) is exercised.
#include <gtest/gtest.h>

#include <tuple>

#include "delta_rule_backward_check.h"
#include "larc/reference/delta_rule_fla_front_ends.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::mpfr80;
using W = mpfr80;

// The raw inputs of one head, and (in the same shapes) their gradients or a tangent of them.
struct RawInputs {
  Mat<W> q, k, v;
  Vec<W> x, z;  // gate and step pre-activations
  W a_log, bias;
  Mat<W> s0;

  RawInputs moved(const RawInputs& d, const W& h) const {
    return {q + h * d.q, k + h * d.k, v + h * d.v, x + h * d.x, z + h * d.z, a_log + h * d.a_log, bias + h * d.bias,
            s0 + h * d.s0};
  }
  W pairing(const RawInputs& d) const {
    return W(q.cwiseProduct(d.q).sum() + k.cwiseProduct(d.k).sum() + v.cwiseProduct(d.v).sum() + x.dot(d.x) +
             z.dot(d.z) + a_log * d.a_log + bias * d.bias + s0.cwiseProduct(d.s0).sum());
  }
};

RawInputs make_raw_inputs(const Shape& s, std::uint64_t seed) {
  larc::proofs::RationalSource src(seed, 9, 8);
  auto mat = [&](Eigen::Index r, Eigen::Index c) { return larc::ref::cast_matrix<W>(src.matrix(r, c)); };
  auto vec = [&](Eigen::Index n) { return larc::ref::cast_vector<W>(src.vector(n)); };
  RawInputs r{mat(s.T, s.dk), mat(s.T, s.dk), mat(s.T, s.dv), vec(s.T), vec(s.T), W(0), W(0), mat(s.dk, s.dv)};
  r.a_log = larc::ref::convert<W>(src.unit_interval());
  r.bias = larc::ref::convert<W>(src.next()) / 9;
  return r;
}

struct FrontEnds {
  W eps = W("1e-6");
  W step_factor = W(1);  // c in β = c σ(z)

  dr::Problem<W> problem(const RawInputs& r) const {
    dr::Problem<W> p{dr::l2_normalized_rows(r.q, eps),
                     dr::l2_normalized_rows(r.k, eps),
                     r.v,
                     dr::decays_from_log(dr::gate_log_decays(r.a_log, r.x, r.bias)),
                     dr::sigmoid_steps(r.z, step_factor),
                     W(1) / 2,
                     r.s0};
    return p;
  }

  W loss(const RawInputs& r, const dr::Cotangents<W>& cot) const {
    return cotangent_pairing(cot, dr::serial(problem(r))).value;
  }

  RawInputs gradients(const RawInputs& r, const dr::Cotangents<W>& cot) const {
    const dr::Problem<W> p = problem(r);
    const dr::Gradients<W> g = dr::backward(p, cot, 7);
    const dr::GateGradients<W> gate =
        dr::gate_log_decays_backward(r.a_log, r.x, r.bias, dr::log_decay_gradient(p.alpha, g.dalpha));
    return {dr::l2_normalized_rows_backward(r.q, g.dq, eps),
            dr::l2_normalized_rows_backward(r.k, g.dk, eps),
            g.dv,
            gate.dx,
            dr::sigmoid_steps_backward(r.z, step_factor, g.dbeta),
            gate.d_a_log,
            gate.d_bias,
            g.d_initial_state};
  }
};

using Param = std::tuple<Eigen::Index, int>;  // T, c

class DeltaRuleBackwardFlaFrontEnds : public ::testing::TestWithParam<Param> {};

TEST_P(DeltaRuleBackwardFlaFrontEnds, ChainRuleAgreesWithMpfrCentralDifferences) {
  const auto& [T, c] = GetParam();
  const Shape shape{T, 3, 2, true};
  const std::uint64_t seed = 100 * static_cast<std::uint64_t>(T) + static_cast<std::uint64_t>(c);
  RecordProperty("seed", std::to_string(seed));
  const FrontEnds fe{W("1e-6"), W(c)};
  const RawInputs raw = make_raw_inputs(shape, seed), delta = make_raw_inputs(shape, seed + 1);
  const dr::Cotangents<W> cot = cast_cotangents<W>(make_rational_cotangents(shape, Seeds::both, seed + 2));
  const W h = ldexp(W(1), -80);
  const W difference = (fe.loss(raw.moved(delta, h), cot) - fe.loss(raw.moved(delta, W(-h)), cot)) / (2 * h);
  const RawInputs grads = fe.gradients(raw, cot);
  const W adjoint = grads.pairing(delta);
  const RawInputs abs_grads{grads.q.cwiseAbs(), grads.k.cwiseAbs(), grads.v.cwiseAbs(), grads.x.cwiseAbs(),
                            grads.z.cwiseAbs(), abs(grads.a_log), abs(grads.bias), grads.s0.cwiseAbs()};
  const RawInputs abs_delta{delta.q.cwiseAbs(), delta.k.cwiseAbs(), delta.v.cwiseAbs(), delta.x.cwiseAbs(),
                            delta.z.cwiseAbs(), abs(delta.a_log), abs(delta.bias), delta.s0.cwiseAbs()};
  EXPECT_LE(abs(difference - adjoint), W("1e-30") * abs_grads.pairing(abs_delta))
      << "seed " << seed << ": central difference " << difference << ", adjoint " << adjoint;
}

INSTANTIATE_TEST_SUITE_P(Grid, DeltaRuleBackwardFlaFrontEnds,
                         ::testing::Combine(::testing::Values<Eigen::Index>(1, 5, 37), ::testing::Values(1, 2)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return "T" + std::to_string(std::get<0>(info.param)) + "_c" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
