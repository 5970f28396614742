// VLA's per-step Jacobians (SPEC §1, claim VLA-C1), shared by the claim (claims_vla.cpp) and the
// accuracy report's Jacobian figure (`larc report`): the declared random VLA inputs, the random runs
// the claim draws, each step's J_t = I − k̂_t α̂_t^T computed at 266 bits, and the closed form of its
// spectral norm that the claim verified.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <rapidcheck.h>

#include "larc/proofs_check/exact.h"
#include "larc/properties/generators.h"
#include "larc/reference/vla.h"

namespace larc::props {

// The declared random VLA inputs: raw keys and queries N(0, 1), values N(0, 1), the authors' penalty
// directions u_t = norm(W_u k_t)/√d_k with W_u ~ N(0, 1/d_k) entries, φ = ELU + 1, ratio read.
inline ref::vla::Problem<double> random_vla_problem(Rng& rng, Eigen::Index T, Eigen::Index dk, Eigen::Index dv,
                                                    double lambda0, int nudge_period) {
  ref::vla::Problem<double> p;
  p.q = gaussian(rng, T, dk, 1.0);
  p.k = gaussian(rng, T, dk, 1.0);
  p.v = gaussian(rng, T, dv, 1.0);
  p.u = ref::vla::authors_penalty_directions<double>(p.k, gaussian(rng, dk, dk, 1 / std::sqrt(double(dk))));
  p.opt.lambda0 = lambda0;
  p.opt.nudge_period = nudge_period;
  return p;
}

// ‖J‖₂² as a function of c = k̂^T α̂ (VLA-C1's characterisation): I − k̂ α̂^T (unit k̂, α̂) acts on
// span{k̂, α̂} with singular values σ± where σ+² + σ−² = 3 − 2c and σ+ σ− = |1 − c|, and as the
// identity on the complement (d ≥ 2), so ‖J‖₂² = (3 − 2c + √(5 − 4c))/2 for d ≥ 2, and (1 − c)² for d = 1.
template <class S>
S jacobian_norm_squared(const S& c, Eigen::Index d) {
  using std::sqrt;
  if (d == 1) return (S(1) - c) * (S(1) - c);
  return (S(3) - S(2) * c + sqrt(S(5) - S(4) * c)) / S(2);
}

inline const double kGoldenRatio = (1 + std::sqrt(5.0)) / 2;  // lim_{c→0} √((3 − 2c + √(5 − 4c))/2)

// One random run of VLA-C1: size, length, λ0 and nudging drawn by RapidCheck, numbers from the seed.
struct JacobianCase {
  std::uint64_t seed = 0;
  int d = 1, T = 1, lambda_index = 1;  // λ0 = 0.1, 1, 10
  bool nudge = false;
  double lambda0() const { return lambda_index == 0 ? 0.1 : lambda_index == 1 ? 1.0 : 10.0; }
  std::string describe() const {
    char lambda[16];
    std::snprintf(lambda, sizeof lambda, "%.3g", lambda0());
    return "{seed=" + std::to_string(seed) + ", d_h=" + std::to_string(d) + ", T=" + std::to_string(T) +
           ", λ0=" + lambda + ", nudge=" + (nudge ? "every 20 by 1e-3" : "off") +
           "; keys/queries/values N(0,1), authors' u_t = norm(W_u k_t)/√d, W_u ~ N(0,1/d)}";
  }
};

inline rc::Gen<JacobianCase> gen_jacobian_case() {
  return rc::gen::build<JacobianCase>(rc::gen::set(&JacobianCase::seed, rc::gen::arbitrary<std::uint64_t>()),
                                      rc::gen::set(&JacobianCase::d, rc::gen::inRange(1, 13)),
                                      rc::gen::set(&JacobianCase::T, rc::gen::inRange(1, 31)),
                                      rc::gen::set(&JacobianCase::lambda_index, rc::gen::inRange(0, 3)),
                                      rc::gen::set(&JacobianCase::nudge, rc::gen::arbitrary<bool>()));
}

// The random runs of VLA-C1 for a seed: `count` cases drawn in order from one RapidCheck stream.
inline std::vector<JacobianCase> random_jacobian_cases(std::uint64_t seed, int count) {
  rc::Random random(seed);
  std::vector<JacobianCase> cases;
  for (int i = 0; i < count; ++i) cases.push_back(gen_jacobian_case()(random.split(), 100).value());
  return cases;
}

inline ref::vla::Problem<double> jacobian_problem(const JacobianCase& c) {
  Rng rng(c.seed);
  return random_vla_problem(rng, c.T, c.d, 2, c.lambda0(), c.nudge ? 20 : 0);
}

// One step of a run at 266 bits: F = I − k̂ α̂^T (the Jacobian of S_t with respect to S_{t−1}), A_t and
// c = k̂^T α̂.
struct JacobianStep {
  Mat<proofs::Wide> f, a;
  proofs::Wide c;
};

// Runs the penalty recursion of `pd` at 266 bits and calls on_step(t, step) for every token.
template <class OnStep>
void for_each_jacobian(const ref::vla::Problem<double>& pd, OnStep&& on_step) {
  namespace vla = ref::vla;
  using W = proofs::Wide;
  vla::Options<W> opt;
  opt.lambda0 = W(pd.opt.lambda0);
  opt.nudge_period = pd.opt.nudge_period;
  const Eigen::Index d = pd.dk();
  Mat<W> a = Mat<W>::Identity(d, d) / opt.lambda0;
  for (Eigen::Index t = 0; t < pd.T(); ++t) {
    vla::penalise(opt, a, ref::Vec<W>(ref::cast_matrix<W>(pd.u).row(t).transpose()), t + 1);
    const auto w = vla::write_directions(opt, a, vla::feature(opt.feature, ref::Vec<W>(ref::cast_matrix<W>(pd.k).row(t).transpose())));
    on_step(t, JacobianStep{Mat<W>(Mat<W>::Identity(d, d) - w.khat * w.alpha_hat.transpose()), a, W(w.khat.dot(w.alpha_hat))});
  }
}

}  // namespace larc::props
