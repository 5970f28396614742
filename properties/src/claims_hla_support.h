// What the HLA claims (claims_hla*.cpp, SPEC §5) share: the case a search draws and shrinks, exact
// comparison with the first differing entry as evidence, the 113-bit numeric comparison, and the
// counterexample text.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "larc/properties/claims.h"
#include "larc/properties/hla_problems.h"
#include "larc/properties/rc_generators.h"
#include "larc/properties/search.h"

namespace larc::props::hla_claims {

using ref::f128;
using ref::Mat;
using ref::rational;

inline constexpr const char* kPaper = "HLA (Higher-order Linear Attention)";

inline std::string fmt(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

// One exact case: sizes, a seed for the rationals, γ = gamma_tenths/10, a chunk size.
struct HlaCase {
  std::uint64_t seed = 0;
  int T = 1, d = 1, dv = 1;
  bool normalized = false;
  int gamma_tenths = 10;
  int chunk = 1;

  rational gamma() const { return rational(gamma_tenths, 10); }
  HlaShape shape() const { return {T, d, dv}; }
  hla::Problem<rational> problem() const { return rational_hla_problem(shape(), normalized, gamma(), seed); }
  std::string describe() const {
    return "{seed=" + std::to_string(seed) + ", T=" + std::to_string(T) + ", d=" + std::to_string(d) +
           ", d_v=" + std::to_string(dv) + ", γ=" + gamma().str() + (normalized ? ", normalised ε=1/7919" : "") +
           ", chunk=" + std::to_string(chunk) + "}";
  }
};

struct HlaCaseLimits {
  int min_T = 1, max_T = 20, max_d = 4, max_dv = 3;
  int min_gamma_tenths = 10, max_gamma_tenths = 10;  // γ = 1 unless a range is asked for
  bool normalized = true;                             // draw normalised cases too
};

inline rc::Gen<HlaCase> gen_hla_case(HlaCaseLimits lim) {
  const int chunks[] = {1, 2, 3, 5, 8, 16};
  return rc::gen::build<HlaCase>(
      rc::gen::set(&HlaCase::seed, rc::gen::arbitrary<std::uint64_t>()),
      rc::gen::set(&HlaCase::T, rc::gen::inRange(lim.min_T, lim.max_T + 1)),
      rc::gen::set(&HlaCase::d, rc::gen::inRange(1, lim.max_d + 1)),
      rc::gen::set(&HlaCase::dv, rc::gen::inRange(1, lim.max_dv + 1)),
      rc::gen::set(&HlaCase::normalized, lim.normalized ? rc::gen::arbitrary<bool>() : rc::gen::just(false)),
      rc::gen::set(&HlaCase::gamma_tenths, rc::gen::inRange(lim.min_gamma_tenths, lim.max_gamma_tenths + 1)),
      rc::gen::set(&HlaCase::chunk, rc::gen::map(rc::gen::inRange(0, 6), [chunks](int i) { return chunks[i]; })));
}

// "at t = 1, column 0: predicted 3/4, computed 5/8 (difference 1/8); max |difference| 1/8" or nullopt.
inline std::optional<std::string> first_difference(const Mat<rational>& predicted, const Mat<rational>& computed) {
  if (predicted == computed) return std::nullopt;
  for (Eigen::Index t = 0; t < predicted.rows(); ++t)
    for (Eigen::Index j = 0; j < predicted.cols(); ++j)
      if (predicted(t, j) != computed(t, j))
        return "at t = " + std::to_string(t) + ", column " + std::to_string(j) + ": predicted " + predicted(t, j).str() +
               ", computed " + computed(t, j).str() + " (difference " + rational(computed(t, j) - predicted(t, j)).str() +
               "); max |difference| " + proofs::max_abs(Mat<rational>(computed - predicted)).str() +
               " (exact rational arithmetic)";
  return std::nullopt;
}

// Outputs, then (normalised) denominators; `what` names the two sides.
inline std::optional<std::string> exact_mismatch(const hla::Result<rational>& predicted, const hla::Result<rational>& computed,
                                                 const std::string& what) {
  if (auto d = first_difference(predicted.o, computed.o)) return what + ", outputs " + *d;
  if (auto d = first_difference(Mat<rational>(predicted.den), Mat<rational>(computed.den))) return what + ", denominators " + *d;
  return std::nullopt;
}

inline std::string counterexample_text(const Counterexample<HlaCase>& cx) {
  return "case " + cx.value.describe() + " (trial " + std::to_string(cx.trial) + ", " + std::to_string(cx.shrink_steps) +
         " shrink steps): " + cx.failure;
}

// Exact search over gen_hla_case(lim); check returns a failure description or nullopt.
template <class Check>
std::optional<Counterexample<HlaCase>> search(const HlaCaseLimits& lim, const ClaimConfig& cfg, Check&& check) {
  return find_counterexample(gen_hla_case(lim), cfg.seed, cfg.trials, std::forward<Check>(check));
}

// max |a − b| / max |b| at 113 bits (float128).
inline double relative_deviation(const Mat<f128>& a, const Mat<f128>& b) {
  const f128 scale = b.size() ? f128(b.cwiseAbs().maxCoeff()) : f128(0);
  if (scale == 0) return ref::to_double(f128(a.cwiseAbs().maxCoeff()));
  return ref::to_double(f128((a - b).cwiseAbs().maxCoeff() / scale));
}

// The numeric rung's problem for a long sequence: Gaussian q, k (N(0, 1/d)), v (N(0, 1)), γ as given.
inline hla::Problem<f128> long_problem(std::uint64_t seed, Eigen::Index T, Eigen::Index d, Eigen::Index dv, double gamma) {
  return numeric_hla_problem<f128>({T, d, dv}, false, gamma, seed);
}

inline std::string trials_text(const ClaimConfig& cfg) { return std::to_string(cfg.trials) + " random rational cases"; }

}  // namespace larc::props::hla_claims
