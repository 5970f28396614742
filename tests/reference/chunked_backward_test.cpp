// The chunked backwards, the delta rule's (UT/WY, delta_rule_chunked_backward.h) and GLA's
// (gla_backward.h, chunked_backward):
//  - over rationals it is the adjoint of serial exactly: dq, dk, dv, dβ and dS_0 equal backward's and
//    its dg (chunk-local identity form) equals α ⊙ dα, for DeltaNet, GDN and KLA, T ∈ {1, 5, 13, 65},
//    chunk sizes 1, 4 and 16 (partial last chunks, a chunk longer than T), with do only, dht only
//    and both;
//  - with bf16 operands (the io grade's gradient baseline) in float it stays within bf16's reach of
//    the double adjoint and further from it than fp32 reaches: its error is bf16's, the unrounded one's
//    fp32's;
//  - GLA's, over rationals, equals its adjoint of serial exactly (dgk against a ⊙ da), same grid.
#include <gtest/gtest.h>

#include "delta_rule_backward_check.h"
#include "gla_backward_check.h"
#include "larc/reference/delta_rule_chunked_backward.h"
#include "larc/reference/low_precision.h"

namespace {

using namespace larc::testing::backward_checks;
using larc::ref::MatmulOperands;
using larc::ref::OperandFormat;

using ExactParam = std::tuple<Mechanism, Eigen::Index, Eigen::Index>;  // mechanism, T, chunk

class DeltaRuleChunkedBackwardRational : public ::testing::TestWithParam<ExactParam> {};

TEST_P(DeltaRuleChunkedBackwardRational, EqualsTheSerialAdjointExactly) {
  const auto [mech, T, chunk] = GetParam();
  const Shape shape = T % 2 == 1 ? Shape{T, 3, 2, true} : Shape{T, 2, 3, false};
  const std::uint64_t seed = 7000 + 100 * static_cast<std::uint64_t>(T) + static_cast<std::uint64_t>(chunk);
  const Case<rational> c = make_rational_case(mech, shape, seed);
  for (Seeds w : {Seeds::d_o, Seeds::d_final_state, Seeds::both}) {
    const dr::Cotangents<rational> cot = make_rational_cotangents(shape, w, seed + 1);
    const dr::Gradients<rational> serial = dr::backward(c.problem, cot, 7);
    const dr::ChunkedGradients<rational> chunked = dr::chunked_backward(c.problem, cot, chunk);
    const std::string where = mechanism_name(mech) + " T " + std::to_string(T) + " chunk " + std::to_string(chunk) +
                              " cotangents " + seeds_name(w);
    EXPECT_TRUE(chunked.grads.dq == serial.dq) << where << ": dq";
    EXPECT_TRUE(chunked.grads.dk == serial.dk) << where << ": dk";
    EXPECT_TRUE(chunked.grads.dv == serial.dv) << where << ": dv";
    EXPECT_TRUE(chunked.grads.dbeta == serial.dbeta) << where << ": dbeta";
    EXPECT_TRUE(chunked.grads.d_initial_state == serial.d_initial_state) << where << ": dS0";
    EXPECT_TRUE(chunked.dg == dr::log_decay_gradient(c.problem.alpha, serial.dalpha)) << where << ": dg";
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, DeltaRuleChunkedBackwardRational,
                         ::testing::Combine(::testing::Values(Mechanism::deltanet, Mechanism::gdn, Mechanism::kla),
                                            ::testing::Values<Eigen::Index>(1, 5, 13, 65),
                                            ::testing::Values<Eigen::Index>(1, 4, 16)));

// max |a − b| / max |b| over a matrix (or vector).
template <class A, class B>
double relative_error(const A& a, const B& b) {
  const double scale = b.cwiseAbs().maxCoeff();
  return (a - b).cwiseAbs().maxCoeff() / (scale > 0 ? scale : 1.0);
}

TEST(DeltaRuleChunkedBackwardIo, Bf16OperandsGiveBf16SizedErrorsWhereFp32OnesGiveFp32Sized) {
  const Shape shape{96, 8, 6, true};
  const Case<rational> exact = make_rational_case(Mechanism::gdn, shape, 4242, /*unit_keys=*/true);
  const dr::Cotangents<rational> cot_exact = make_rational_cotangents(shape, Seeds::both, 4243);
  const Case<double> cd = cast_case<double>(exact);
  const Case<float> cf = cast_case<float>(exact);
  const dr::Cotangents<float> cot = cast_cotangents<float>(cot_exact);
  const dr::Gradients<double> truth = dr::backward(cd.problem, cast_cotangents<double>(cot_exact), 16);
  const dr::ChunkedGradients<float> plain = dr::chunked_backward(cf.problem, cot, 16);
  const dr::ChunkedGradients<float> io = dr::chunked_backward(cf.problem, cot, 16, MatmulOperands<float>(OperandFormat::bf16));
  // bf16's unit roundoff is 2⁻⁸ ≈ 3.9e-3: the io gradients are off by a few of it, the unrounded ones by fp32's.
  const auto check = [&](const char* name, const auto& got_io, const auto& got_plain, const auto& want) {
    const double e_io = relative_error(got_io.template cast<double>(), want);
    const double e_plain = relative_error(got_plain.template cast<double>(), want);
    EXPECT_LT(e_plain, 1e-4) << name;
    EXPECT_GT(e_io, 1e-4) << name << ": the io form rounds nothing";
    EXPECT_LT(e_io, 0.1) << name;
  };
  check("dq", io.grads.dq, plain.grads.dq, truth.dq);
  check("dk", io.grads.dk, plain.grads.dk, truth.dk);
  check("dv", io.grads.dv, plain.grads.dv, truth.dv);
  check("dbeta", io.grads.dbeta, plain.grads.dbeta, truth.dbeta);
  check("dS0", io.grads.d_initial_state, plain.grads.d_initial_state, truth.d_initial_state);
  check("dg", io.dg, plain.dg, dr::log_decay_gradient(cd.problem.alpha, truth.dalpha));
}

class GlaChunkedBackwardRational : public ::testing::TestWithParam<std::tuple<Eigen::Index, Eigen::Index>> {};

TEST_P(GlaChunkedBackwardRational, EqualsTheSerialAdjointExactly) {
  const auto [T, chunk] = GetParam();
  const Shape shape = T % 2 == 1 ? Shape{T, 3, 2, true} : Shape{T, 2, 3, false};
  const std::uint64_t seed = 9000 + 100 * static_cast<std::uint64_t>(T) + static_cast<std::uint64_t>(chunk);
  const larc::ref::gla::Problem<rational> p = make_gla_rational_problem(shape, seed);
  for (Seeds w : {Seeds::d_o, Seeds::d_final_state, Seeds::both}) {
    const larc::ref::gla::Cotangents<rational> cot = make_rational_cotangents(shape, w, seed + 1);
    const larc::ref::gla::Gradients<rational> serial = larc::ref::gla::backward(p, cot, 7);
    const larc::ref::gla::ChunkedGradients<rational> chunked = larc::ref::gla::chunked_backward(p, cot, chunk);
    const std::string where = "GLA T " + std::to_string(T) + " chunk " + std::to_string(chunk) + " cotangents " + seeds_name(w);
    EXPECT_TRUE(chunked.grads.dq == serial.dq) << where << ": dq";
    EXPECT_TRUE(chunked.grads.dk == serial.dk) << where << ": dk";
    EXPECT_TRUE(chunked.grads.dv == serial.dv) << where << ": dv";
    EXPECT_TRUE(chunked.grads.d_initial_state == serial.d_initial_state) << where << ": dS0";
    EXPECT_TRUE(chunked.dgk == larc::ref::gla::log_decay_gradient(p.a, serial.da)) << where << ": dgk";
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, GlaChunkedBackwardRational,
                         ::testing::Combine(::testing::Values<Eigen::Index>(1, 5, 13, 65),
                                            ::testing::Values<Eigen::Index>(1, 4, 16)));

TEST(DeltaRuleChunkedBackward, RefusesAChunkBelowOne) {
  const Case<rational> c = make_rational_case(Mechanism::gdn, Shape{4, 2, 2, false}, 1);
  EXPECT_THROW(dr::chunked_backward(c.problem, make_rational_cotangents(Shape{4, 2, 2, false}, Seeds::both, 2), 0),
               std::invalid_argument);
}

}  // namespace
