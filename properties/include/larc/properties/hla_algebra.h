// The algebra of the HLA scan operators (SPEC §5) checked exactly: random rational segment summaries
// (not necessarily ones a token sequence produces, so associativity is checked as an identity of
// the operator) and the residual (a ⊕ b) ⊕ c − a ⊕ (b ⊕ c).
#pragma once

#include <algorithm>
#include <initializer_list>

#include "larc/proofs_check/exact.h"
#include "larc/reference/hla.h"

namespace larc::props {

namespace hla = larc::ref::hla;
using ref::rational;

// Largest |entry| over pairs of equally shaped matrices (0: all equal).
inline rational max_abs_difference(std::initializer_list<std::pair<const ref::Mat<rational>*, const ref::Mat<rational>*>> pairs) {
  rational worst = 0;
  for (const auto& [a, b] : pairs) worst = std::max(worst, proofs::max_abs(ref::Mat<rational>(*a - *b)));
  return worst;
}

// ρ in (0, 1] when decayed, else 1.
inline rational random_rho(proofs::RationalSource& src, bool decayed) { return decayed ? src.unit_interval() : rational(1); }

inline hla::SecondOrderSummary<rational> random_second_summary(proofs::RationalSource& src, Eigen::Index d,
                                                               Eigen::Index dw, bool decayed) {
  return {src.matrix(d, d), src.matrix(d, dw), src.matrix(d, dw), random_rho(src, decayed)};
}

inline rational difference(const hla::SecondOrderSummary<rational>& a, const hla::SecondOrderSummary<rational>& b) {
  return std::max(max_abs_difference({{&a.sk, &b.sk}, {&a.c, &b.c}, {&a.g, &b.g}}), rational(abs(a.rho - b.rho)));
}

inline hla::AhlaSummary<rational> random_ahla_summary(proofs::RationalSource& src, Eigen::Index d, Eigen::Index dw,
                                                      bool decayed) {
  return {src.matrix(d, d), src.matrix(d, dw), src.matrix(d, dw), random_rho(src, decayed)};
}

inline rational difference(const hla::AhlaSummary<rational>& a, const hla::AhlaSummary<rational>& b) {
  return std::max(max_abs_difference({{&a.r, &b.r}, {&a.p, &b.p}, {&a.e, &b.e}}), rational(abs(a.rho - b.rho)));
}

inline hla::ThirdOrderPrintedSummary<rational> random_third_printed_summary(proofs::RationalSource& src, Eigen::Index d,
                                                                            Eigen::Index dw) {
  return {src.matrix(d, d), src.matrix(d, d), src.matrix(d, dw), src.matrix(d, dw),
          src.matrix(d, dw), src.matrix(d, d), src.matrix(d * dw, d * d)};
}

inline rational difference(const hla::ThirdOrderPrintedSummary<rational>& a, const hla::ThirdOrderPrintedSummary<rational>& b) {
  return max_abs_difference({{&a.sk, &b.sk}, {&a.sq, &b.sq}, {&a.p, &b.p}, {&a.f, &b.f}, {&a.r_qp, &b.r_qp},
                             {&a.u_kq, &b.u_kq}, {&a.m_map, &b.m_map}});
}

inline hla::ThirdOrderSummary<rational> random_third_summary(proofs::RationalSource& src, Eigen::Index d, Eigen::Index dw) {
  return {src.matrix(d, d), src.matrix(d, d), src.matrix(d, dw), src.matrix(d, d), src.matrix(d, dw), src.matrix(d, dw)};
}

inline rational difference(const hla::ThirdOrderSummary<rational>& a, const hla::ThirdOrderSummary<rational>& b) {
  return max_abs_difference({{&a.sk, &b.sk}, {&a.sq, &b.sq}, {&a.p, &b.p}, {&a.x, &b.x}, {&a.y, &b.y}, {&a.f, &b.f}});
}

// Largest |entry| of (a ⊕ b) ⊕ c − a ⊕ (b ⊕ c).
template <class Summary, class Combine>
rational associativity_residual(const Summary& a, const Summary& b, const Summary& c, const Combine& combine) {
  return difference(combine(combine(a, b), c), combine(a, combine(b, c)));
}

}  // namespace larc::props
