// VLA-C1, C2, C4, C5, C6, C9, C10 (SPEC §1); the memory-level experiments C3, C7, C8 are in
// claims_vla_memory.cpp. Exact statements run in rationals (exact unit vectors stand in for k̂, α̂ where
// a norm would otherwise be irrational), the rest at 266-bit MPFR (proofs::Wide) or dd_real.
#include <algorithm>
#include <optional>
#include <sstream>

#include "claims_vla_common.h"
#include "larc/proofs_check/exact.h"
#include "larc/properties/search.h"
#include "larc/properties/vla_jacobian.h"
#include "larc/properties/vla_kernel_speed.h"
#include "larc/reference/linear_attention.h"
#include "larc/reference/op_count.h"
#include "larc/reference/vla.h"

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>

namespace larc::props {
namespace {

using namespace vla_claims;
using ref::dd;
using ref::rational;
using W = proofs::Wide;

// ---- C9: the Blelloch scan over S ↦ S F + G ---------------------------------------------------------

struct ScanCase {
  std::uint64_t seed = 0;
  int T = 1, dk = 1, dv = 1;
  std::string describe() const {
    return "{seed=" + std::to_string(seed) + ", T=" + std::to_string(T) + ", d_k=" + std::to_string(dk) +
           ", d_v=" + std::to_string(dv) + "}";
  }
};

rc::Gen<ScanCase> gen_scan_case(bool square) {
  return rc::gen::map(
      rc::gen::build<ScanCase>(rc::gen::set(&ScanCase::seed, rc::gen::arbitrary<std::uint64_t>()),
                               rc::gen::set(&ScanCase::T, rc::gen::inRange(1, 41)),
                               rc::gen::set(&ScanCase::dk, rc::gen::inRange(1, 5)),
                               rc::gen::set(&ScanCase::dv, rc::gen::inRange(1, 5))),
      [square](ScanCase c) {
        if (square) c.dv = c.dk;
        return c;
      });
}

// Exact inputs of the affine stage: rational unit vectors k̂_t, α̂_t, rational v_t and S_0^T.
struct AffineInputs {
  Mat<rational> khat, ahat, v, s0;
};

AffineInputs affine_inputs(const ScanCase& c) {
  proofs::RationalSource src(c.seed, 9, 8);
  AffineInputs in{Mat<rational>(c.T, c.dk), Mat<rational>(c.T, c.dk), src.matrix(c.T, c.dv), src.matrix(c.dk, c.dv)};
  for (int t = 0; t < c.T; ++t) {
    in.khat.row(t) = src.unit_vector(c.dk).transpose();
    in.ahat.row(t) = src.unit_vector(c.dk).transpose();
  }
  return in;
}

// First token whose state differs between serial and the scan with `op`, described; nullopt if none.
std::optional<std::string> scan_disagreement(const ScanCase& c, vla::ScanOperator op) {
  const AffineInputs in = affine_inputs(c);
  std::vector<Mat<rational>> serial_states;
  vla::affine_serial<rational>(in.s0, in.khat, in.ahat, in.v,
                               [&](Eigen::Index, const Mat<rational>& x) { serial_states.push_back(x); });
  std::optional<std::string> failure;
  try {
    vla::affine_scan<rational>(in.s0, in.khat, in.ahat, in.v, op, [&](Eigen::Index t, const Mat<rational>& x) {
      if (failure || x == serial_states[static_cast<std::size_t>(t)]) return;
      const Mat<rational> diff = x - serial_states[static_cast<std::size_t>(t)];
      failure = "state S_" + std::to_string(t + 1) + " (1-based): serial S^T(0,0) = " +
                fmt(ref::to_double(serial_states[static_cast<std::size_t>(t)](0, 0)), 6) + ", scan S^T(0,0) = " +
                fmt(ref::to_double(x(0, 0)), 6) + ", max |difference| = " + proofs::max_abs(diff).str() + " ≈ " +
                fmt(ref::to_double(proofs::max_abs(diff))) + " (exact rationals)";
    });
  } catch (const std::invalid_argument& e) {
    return std::string("undefined: ") + e.what();
  }
  return failure;
}

// The full mechanism (normalised k̂, α̂ from the penalty recursion) in dd: serial vs scan, relative.
double numeric_scan_deviation(std::uint64_t seed, vla::ScanOperator op) {
  Rng rng(seed);
  const auto pd = random_vla_problem(rng, 300, 16, 8, 1.0, 20);
  vla::Problem<dd> p{ref::cast_matrix<dd>(pd.q), ref::cast_matrix<dd>(pd.k), ref::cast_matrix<dd>(pd.v),
                     ref::cast_matrix<dd>(pd.u), {}, {}};
  p.opt.nudge_period = 20;
  const auto a = vla::serial(p), b = vla::scan(p, op);
  return ref::to_double(dd((a.o - b.o).cwiseAbs().maxCoeff() / a.o.cwiseAbs().maxCoeff()));
}

ClaimOutcome vla_c9(const ClaimConfig& cfg) {
  const auto printed = find_counterexample(gen_scan_case(true), cfg.seed, cfg.trials,
                                           [](const ScanCase& c) { return scan_disagreement(c, vla::ScanOperator::as_printed); });
  const auto derived = find_counterexample(gen_scan_case(false), cfg.seed, cfg.trials,
                                           [](const ScanCase& c) { return scan_disagreement(c, vla::ScanOperator::right_acting); });
  const auto transposed = find_counterexample(gen_scan_case(false), cfg.seed, cfg.trials, [](const ScanCase& c) {
    return scan_disagreement(c, vla::ScanOperator::as_printed_transposed);
  });
  const auto undefined = scan_disagreement(ScanCase{cfg.seed, 1, 2, 1}, vla::ScanOperator::as_printed);
  double dev_derived = 0, dev_transposed = 0;
  for (std::uint64_t i = 0; i < 2; ++i) {
    dev_derived = std::max(dev_derived, numeric_scan_deviation(cfg.seed + i, vla::ScanOperator::right_acting));
    dev_transposed = std::max(dev_transposed, numeric_scan_deviation(cfg.seed + i, vla::ScanOperator::as_printed_transposed));
  }
  std::ostringstream ev;
  const std::string sizes = std::to_string(cfg.trials) + " random cases each (T ≤ 40, d_k, d_v ≤ 4, exact rational unit vectors "
                            "k̂_t, α̂_t, rational v_t and S_0), every state S_1..S_T compared";
  auto verdict_of = [](const auto& cx) { return cx ? "FAILS: " + cx->value.describe() + " " + cx->failure : std::string("exact (residual 0)"); };
  ev << "Scan = the generic Blelloch scan of reference/scan.h over the token maps S ↦ S F_t + G_t, F_t = I − k̂_t α̂_t^T, "
     << "G_t = v_t α̂_t^T, against the sequential recurrence S_t = S_{t−1} + (v_t − S_{t−1} k̂_t) α̂_t^T; " << sizes << ". "
     << "(1) The printed composition (F_l, G_l) ⊕ (F_r, G_r) = (F_r F_l, F_r G_l + G_r) on these maps (d_v = d_k so that F_r G_l is "
     << "defined): " << (printed ? "disagrees with serial (counterexample below)" : "agrees exactly") << "; for d_v ≠ d_k it is "
     << (undefined && undefined->rfind("undefined", 0) == 0 ? "undefined (F_r G_l multiplies d_k×d_k by d_v×d_k)" : "defined") << ". "
     << "(2) Derived operator for right-acting maps, first l then r = (F_l F_r, G_l F_r + G_r): " << verdict_of(derived) << ". "
     << "(3) The printed formula is the composition of left-acting maps X ↦ F X + G; applied to the transposed maps "
     << "S^T ↦ F_t^T S^T + G_t^T (a memory stored as S^T, as larc stores it): " << verdict_of(transposed) << ". "
     << "Full mechanism in dd_real (k̂, α̂ from the Sherman–Morrison recursion, T = 300, d_k = 16, d_v = 8, λ0 = 1, nudge every 20, "
     << "2 seeds): largest relative output deviation serial vs scan " << fmt(dev_derived) << " (derived) and " << fmt(dev_transposed)
     << " (printed on S^T).";
  ClaimOutcome out;
  out.evidence = ev.str();
  if (printed) {
    out.verdict = Verdict::falsified;
    out.counterexample = "Printed composition on S ↦ S F + G, case " + printed->value.describe() + " (trial " +
                         std::to_string(printed->trial) + ", " + std::to_string(printed->shrink_steps) +
                         " shrink steps): " + printed->failure + ". Predicted (claim): the scan reproduces serial exactly.";
  } else {
    out.verdict = derived || transposed ? Verdict::falsified : Verdict::holds;
    if (derived) out.counterexample = "derived operator, case " + derived->value.describe() + ": " + derived->failure;
  }
  return out;
}

// ---- shared numerics: positive definiteness and SPD solves by LDL^T without pivoting ------------------

// LDL^T of a symmetric matrix without pivoting; nullopt unless every pivot is > 0, i.e. unless the
// matrix is positive definite (Sylvester's criterion on the leading minors). Exact in rationals.
template <class S>
struct Ldl {
  Mat<S> l;
  Vec<S> d;
};
template <class S>
std::optional<Ldl<S>> ldl_positive_definite(const Mat<S>& m) {
  const Eigen::Index n = m.rows();
  Ldl<S> f{Mat<S>::Identity(n, n), Vec<S>(n)};
  for (Eigen::Index j = 0; j < n; ++j) {
    S dj = m(j, j);
    for (Eigen::Index k = 0; k < j; ++k) dj -= f.l(j, k) * f.l(j, k) * f.d(k);
    if (!(dj > S(0))) return std::nullopt;
    f.d(j) = dj;
    for (Eigen::Index i = j + 1; i < n; ++i) {
      S x = m(i, j);
      for (Eigen::Index k = 0; k < j; ++k) x -= f.l(i, k) * f.l(j, k) * f.d(k);
      f.l(i, j) = x / dj;
    }
  }
  return f;
}
template <class S>
bool positive_definite(const Mat<S>& m) {
  return ldl_positive_definite(m).has_value();
}

// X with M X = B for symmetric positive definite M.
template <class S>
Mat<S> spd_solve(const Mat<S>& m, Mat<S> b) {
  const auto f = ldl_positive_definite(m);
  if (!f) throw std::runtime_error("spd_solve: matrix is not positive definite");
  const Eigen::Index n = m.rows();
  for (Eigen::Index i = 0; i < n; ++i)
    for (Eigen::Index k = 0; k < i; ++k) b.row(i) -= f->l(i, k) * b.row(k);
  for (Eigen::Index i = 0; i < n; ++i) b.row(i) /= f->d(i);
  for (Eigen::Index i = n - 1; i >= 0; --i)
    for (Eigen::Index k = i + 1; k < n; ++k) b.row(i) -= f->l(k, i) * b.row(k);
  return b;
}

// The largest generalised eigenvalue of the pencil (gram, weight), weight ≻ 0, lies in ((1−δ)x, (1+δ)x]:
// (1+δ)x·weight − gram is positive definite and (1−δ)x·weight − gram is not.
bool top_eigenvalue_bracketed(const Mat<W>& gram, const Mat<W>& weight, const W& x, const W& delta) {
  return positive_definite<W>(Mat<W>((W(1) + delta) * x * weight - gram)) &&
         !positive_definite<W>(Mat<W>((W(1) - delta) * x * weight - gram));
}

// ---- C1: per-step Jacobian spectral norms -----------------------------------------------------------

const W kBracket("1e-60");  // relative width of the eigenvalue brackets (the rounding of 266-bit arithmetic is ~1e-78)

// The claim at one step: ‖J‖₂ = 1, i.e. the top eigenvalue of J^T J is 1.
bool norm_is_one(const JacobianStep& s) {
  const Eigen::Index d = s.f.rows();
  return top_eigenvalue_bracketed(Mat<W>(s.f.transpose() * s.f), Mat<W>::Identity(d, d), W(1), kBracket);
}

struct CharacterisationCheck {
  bool euclidean = true, weighted = true, positive_cosine = true, kantorovich = true;
  bool all() const { return euclidean && weighted && positive_cosine && kantorovich; }
};

// (a) ‖J‖₂² = jacobian_norm_squared(c); (b) in the norm ‖S‖_M = tr(S M S^T)^{1/2}, M = A_t^{-1}, the map
// S ↦ S J has norm exactly 1 (d ≥ 2; J = 0 for d = 1): ‖S J‖_M ≤ ‖S‖_M ⟺ J M J^T ⪯ M ⟺ (congruence by A,
// using J^T A = A J) J^T A J ⪯ A, so the norm is the top eigenvalue of the pencil (J^T A J, A);
// (c) c > 0; (d) c ≥ 2√κ/(1 + κ), κ = cond(A_t) (Kantorovich), which bounds ‖J‖ by g(2√κ/(1+κ)) < φ.
CharacterisationCheck check_characterisation(const JacobianStep& s) {
  CharacterisationCheck r;
  const Eigen::Index d = s.f.rows();
  r.euclidean = top_eigenvalue_bracketed(Mat<W>(s.f.transpose() * s.f), Mat<W>::Identity(d, d),
                                         jacobian_norm_squared(s.c, d), kBracket) ||
                (d == 1 && s.f.cwiseAbs().maxCoeff() < W("1e-70"));
  r.weighted = d == 1 ? s.f.cwiseAbs().maxCoeff() < W("1e-70")
                      : top_eigenvalue_bracketed(Mat<W>(s.f.transpose() * s.a * s.f), s.a, W(1), kBracket);
  r.positive_cosine = s.c > W(0);
  const Eigen::SelfAdjointEigenSolver<Mat<double>> eig(ref::cast_matrix<double>(s.a));
  const double kappa = eig.eigenvalues().maxCoeff() / eig.eigenvalues().minCoeff();
  r.kantorovich = ref::to_double(s.c) >= 2 * std::sqrt(kappa) / (1 + kappa) * (1 - 1e-12);
  return r;
}

// Searched runs: a run of n penalty tokens along one direction w with magnitude ρ (the authors' ρ = 1/√d,
// or larger when u is free), then a final token whose raw key is hill-climbed (double) to make ‖J‖
// largest or smallest; the extreme found is then re-evaluated and bracket-checked at 266 bits.
struct SearchResult {
  double norm = 0, c = 1, kappa = 1;
  int d = 0, n = 0;
  double rho = 0, lambda0 = 1;
  bool verified = false;
};

SearchResult search_extreme(std::uint64_t seed, bool maximise, double rho_scale, int restarts) {
  SearchResult best;
  best.norm = maximise ? 0 : 1e300;
  Rng rng(seed);
  for (int r = 0; r < restarts; ++r) {
    const int d = static_cast<int>(rng.integer(2, 16));
    const int n = static_cast<int>(std::pow(10.0, static_cast<double>(rng.integer(0, 3))));
    const double lambda0 = std::pow(10.0, static_cast<double>(rng.integer(-1, 1)));
    const double rho = rho_scale > 0 ? rho_scale : 1 / std::sqrt(double(d));
    const Vec<double> w = unit_rows(rng, 1, d).row(0).transpose();
    vla::Options<double> opt;
    opt.lambda0 = lambda0;
    Mat<double> a = Mat<double>::Identity(d, d) / lambda0;
    for (int t = 0; t < n; ++t) vla::penalise(opt, a, Vec<double>(rho * w), t + 1);
    auto norm_of = [&](const Vec<double>& k) {
      const auto wd = vla::write_directions(opt, a, vla::feature(opt.feature, k));
      return std::sqrt(jacobian_norm_squared(wd.khat.dot(wd.alpha_hat), d));
    };
    Vec<double> k = gaussian(rng, d, 1, 1.0);
    double value = norm_of(k), step = 1;
    for (int it = 0; it < 400; ++it) {
      const Vec<double> cand = k + step * gaussian(rng, d, 1, 1.0);
      const double v = norm_of(cand);
      if (maximise ? v > value : v < value) k = cand, value = v;
      else if (it % 40 == 39) step /= 2;
    }
    if (maximise ? value > best.norm : value < best.norm) {
      // Re-evaluate at 266 bits: the same run, then the bracket of the characterisation.
      vla::Options<W> ow;
      ow.lambda0 = W(lambda0);
      Mat<W> aw = Mat<W>::Identity(d, d) / ow.lambda0;
      for (int t = 0; t < n; ++t) vla::penalise(ow, aw, ref::Vec<W>(ref::cast_vector<W>(Vec<double>(rho * w))), t + 1);
      const auto wd = vla::write_directions(ow, aw, vla::feature(ow.feature, ref::cast_vector<W>(k)));
      const JacobianStep s{Mat<W>(Mat<W>::Identity(d, d) - wd.khat * wd.alpha_hat.transpose()), aw, W(wd.khat.dot(wd.alpha_hat))};
      const Eigen::SelfAdjointEigenSolver<Mat<double>> eig(ref::cast_matrix<double>(aw));
      best = {ref::to_double(W(sqrt(jacobian_norm_squared(s.c, d)))), ref::to_double(s.c),
              eig.eigenvalues().maxCoeff() / eig.eigenvalues().minCoeff(), d, n, rho, lambda0,
              check_characterisation(s).all()};
    }
  }
  return best;
}

ClaimOutcome vla_c1(const ClaimConfig& cfg) {
  // Random runs: characterisation on every step of every trial, and the claim's count of steps with ‖J‖ ≠ 1.
  int steps = 0, not_one = 0;
  CharacterisationCheck all;
  double min_norm_d2 = 1e300, max_norm = 0, min_c = 1, d1_max = 0;
  for (const JacobianCase& c : random_jacobian_cases(cfg.seed, cfg.trials)) {
    for_each_jacobian(jacobian_problem(c), [&](Eigen::Index, const JacobianStep& s) {
      ++steps;
      not_one += !norm_is_one(s);
      const CharacterisationCheck k = check_characterisation(s);
      all.euclidean &= k.euclidean, all.weighted &= k.weighted, all.positive_cosine &= k.positive_cosine,
          all.kantorovich &= k.kantorovich;
      const double norm = std::sqrt(ref::to_double(jacobian_norm_squared(s.c, s.f.rows())));
      if (s.f.rows() == 1) d1_max = std::max(d1_max, norm);
      else min_norm_d2 = std::min(min_norm_d2, norm);
      max_norm = std::max(max_norm, norm);
      min_c = std::min(min_c, ref::to_double(s.c));
    });
  }
  const auto cx = find_counterexample(gen_jacobian_case(), cfg.seed, cfg.trials, [](const JacobianCase& c) -> std::optional<std::string> {
    std::optional<std::string> failure;
    for_each_jacobian(jacobian_problem(c), [&](Eigen::Index t, const JacobianStep& s) {
      if (failure || norm_is_one(s)) return;
      failure = "step t = " + std::to_string(t + 1) + ": predicted ‖J_t‖₂ = 1, computed ‖J_t‖₂ = " +
                fmt(ref::to_double(W(sqrt(jacobian_norm_squared(s.c, s.f.rows())))), 12) + " (c = k̂^T α̂ = " +
                fmt(ref::to_double(s.c), 12) + "; 266-bit MPFR, bracketed to 1e-60 by positive-definiteness tests of "
                "x I − J^T J)";
    });
    return failure;
  });
  const int restarts = std::max(4, cfg.trials / 4);
  const SearchResult max_authors = search_extreme(cfg.seed, true, 0, restarts);
  const SearchResult max_free = search_extreme(cfg.seed + 1, true, 10.0, restarts);
  const SearchResult min_found = search_extreme(cfg.seed + 2, false, 0, restarts);
  auto describe_search = [](const SearchResult& s) {
    return fmt(s.norm, 10) + " (d_h = " + std::to_string(s.d) + ", " + std::to_string(s.n) + " penalty tokens of norm " +
           fmt(s.rho) + ", λ0 = " + fmt(s.lambda0) + ", c = " + fmt(s.c, 6) + ", cond(A_t) = " + fmt(s.kappa, 4) +
           ", verified at 266 bits: " + (s.verified ? "yes" : "NO") + ")";
  };
  std::ostringstream ev;
  ev << "Random runs: " << cfg.trials << " runs (d_h 1..12, T 1..30, λ0 ∈ {0.1, 1, 10}, nudge on/off; keys, queries, values "
     << "N(0,1), the authors' u_t), " << steps << " steps, every J_t = I − k̂_t α̂_t^T at 266-bit MPFR: ‖J_t‖₂ = 1 on "
     << steps - not_one << " steps, ≠ 1 on " << not_one << ". Observed ‖J_t‖₂ from " << fmt(min_norm_d2, 10) << " to "
     << fmt(max_norm, 10) << " for d_h ≥ 2 (smallest c = k̂^T α̂ seen " << fmt(min_c, 6) << "), and " << fmt(d1_max)
     << " at d_h = 1. Characterisation (verified on every step by the same 266-bit bracketing): ‖J_t‖₂ depends only on "
     << "c_t = k̂_t^T α̂_t = cos∠(k̂_t, A_t k̂_t): ‖J_t‖₂² = (3 − 2c_t + √(5 − 4c_t))/2 for d_h ≥ 2 "
     << (all.euclidean ? "[verified]" : "[FAILED]") << " and J_t = 0 for d_h = 1; c_t > 0 "
     << (all.positive_cosine ? "[verified]" : "[FAILED]") << " and c_t ≥ 2√κ_t/(1 + κ_t), κ_t = cond(A_t) (Kantorovich) "
     << (all.kantorovich ? "[verified]" : "[FAILED]") << "; hence 1 ≤ ‖J_t‖₂ < φ = (1+√5)/2 ≈ " << fmt(kGoldenRatio, 6)
     << " for d_h ≥ 2, with 1 exactly when k̂_t is an eigenvector of A_t (e.g. A_t ∝ I) and the supremum φ approached as "
        "κ_t → ∞. The unit-norm statement is true in the geometry of the penalty: with ‖S‖_M = tr(S M_t S^T)^{1/2}, "
        "M_t = A_t^{-1}, the map S ↦ S J_t has norm exactly 1 for d_h ≥ 2 "
     << (all.weighted ? "[verified]" : "[FAILED]") << " (J_t^T is the M_t-self-adjoint I − c_t P_t, P_t the M_t-orthogonal "
        "projection onto A_t k̂_t). Searched runs (hill-climbing the final key over runs of repeated penalties, "
     << restarts << " restarts each): largest ‖J‖₂ with the authors' ‖u‖ = 1/√d " << describe_search(max_authors)
     << "; with free ‖u‖ = 10 " << describe_search(max_free) << " (φ = " << fmt(kGoldenRatio, 10)
     << "); smallest " << describe_search(min_found) << ".";
  ClaimOutcome out;
  out.evidence = ev.str();
  if (!all.all()) out.evidence = "THE CHARACTERISATION FAILED on some step (see the [FAILED] marks). " + out.evidence;
  if (cx) {
    out.verdict = Verdict::falsified;
    out.counterexample = "case " + cx->value.describe() + " (trial " + std::to_string(cx->trial) + ", " +
                         std::to_string(cx->shrink_steps) + " shrink steps): " + cx->failure + ".";
  } else {
    out.verdict = Verdict::holds;
  }
  return out;
}

// ---- C2: without the normalisation ------------------------------------------------------------------

struct UnnormalisedRun {
  double first_norm = 0, median_ratio = 0, magnification = 0;
};

// 25 (or T) steps of the unnormalised ablation (k̂ = φ(k), α = A φ(k)) on the declared inputs; per-step
// ‖J_t‖₂ and the gradient magnification ‖J_1 J_2 ⋯ J_T‖₂ = ‖∂S_T/∂S_0‖ (double, Jacobi SVD).
UnnormalisedRun unnormalised_run(std::uint64_t seed, int d, double lambda0, int T, bool normalize) {
  Rng rng(seed);
  auto p = random_vla_problem(rng, T, d, 1, lambda0, 0);
  p.opt.normalize = normalize;
  Mat<double> a = Mat<double>::Identity(d, d) / lambda0, product = Mat<double>::Identity(d, d);
  std::vector<double> ratios;
  UnnormalisedRun r;
  for (int t = 0; t < T; ++t) {
    vla::penalise(p.opt, a, Vec<double>(p.u.row(t).transpose()), t + 1);
    const auto w = vla::write_directions(p.opt, a, vla::feature(p.opt.feature, Vec<double>(p.k.row(t).transpose())));
    const Mat<double> f = Mat<double>::Identity(d, d) - w.khat * w.alpha_hat.transpose();
    const double norm = std::sqrt(Eigen::SelfAdjointEigenSolver<Mat<double>>(Mat<double>(f.transpose() * f), Eigen::EigenvaluesOnly).eigenvalues().maxCoeff());
    if (t == 0) r.first_norm = norm;
    ratios.push_back(norm / (d / lambda0));
    product = (product * f).eval();
  }
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
  r.median_ratio = ratios[ratios.size() / 2];
  r.magnification = Eigen::JacobiSVD<Mat<double>>(product).singularValues()(0);  // up to 1e80: SVD keeps the relative accuracy
  return r;
}

ClaimOutcome vla_c2(const ClaimConfig& cfg) {
  const int dims[] = {16, 32, 64, 96};
  const double lambdas[] = {0.1, 1.0, 10.0};
  std::ostringstream table;
  double lo = 1e300, hi = 0;
  for (double l0 : lambdas) {
    table << "λ0 = " << fmt(l0) << ": ";
    for (int d : dims) {
      double ratio = 0;
      for (int s = 0; s < cfg.trials; ++s) ratio += unnormalised_run(cfg.seed + s, d, l0, 25, false).median_ratio / cfg.trials;
      lo = std::min(lo, ratio), hi = std::max(hi, ratio);
      table << "d_h " << d << " → " << fmt(ratio) << (d == 96 ? "; " : ", ");
    }
  }
  double mag_geo[3] = {0, 0, 0}, mag_normalised = 0;
  for (int s = 0; s < cfg.trials; ++s) {
    for (int i = 0; i < 3; ++i) mag_geo[i] += std::log10(unnormalised_run(cfg.seed + s, 96, lambdas[i], 25, false).magnification) / cfg.trials;
    mag_normalised = std::max(mag_normalised, unnormalised_run(cfg.seed + s, 96, 1.0, 25, true).magnification);
  }
  const bool scaling = hi / lo <= 4;  // one constant times d_h/λ0 across a 60-fold range of d_h/λ0
  const bool magnifies = mag_geo[1] >= 32;
  std::ostringstream ev;
  ev << "Ablation without the normalisations (k̂ = φ(k), α_t = A_t φ(k_t)) on the declared inputs (raw keys N(0,1), "
        "φ = ELU+1, the authors' u_t, nudge off), 25 steps, " << cfg.trials << " seeds, double (‖J_t‖₂ from the eigenvalues of "
        "J_t^T J_t, the product's norm by Jacobi SVD). Median over the "
        "25 steps of ‖J_t‖₂ / (d_h/λ0): " << table.str() << "the ratio stays within a factor " << fmt(hi / lo)
     << " (from " << fmt(lo) << " to " << fmt(hi) << ") while d_h/λ0 ranges over 1.6 .. 960, i.e. ‖J_t‖₂ ≈ "
     << fmt(std::sqrt(lo * hi)) << "·d_h/λ0 (E‖φ(k)‖² ≈ 1.97 d_h for φ = ELU+1 of N(0,1) entries). Gradient magnification "
        "‖J_1⋯J_25‖₂ at d_h = 96 (geometric mean over seeds): 10^" << fmt(mag_geo[0]) << " (λ0 = 0.1), 10^" << fmt(mag_geo[1])
     << " (λ0 = 1), 10^" << fmt(mag_geo[2]) << " (λ0 = 10); the paper's example: 1e32. With the normalisations (VLA as "
        "specified, λ0 = 1): largest ‖J_1⋯J_25‖₂ " << fmt(mag_normalised) << ".";
  ClaimOutcome out;
  out.evidence = ev.str();
  out.verdict = scaling && magnifies ? Verdict::holds : Verdict::falsified;
  if (!scaling) out.counterexample = "‖J_t‖₂ / (d_h/λ0) varies by more than a factor 4 over the grid (see evidence).";
  else if (!magnifies) out.counterexample = "the magnification after 25 steps at d_h = 96, λ0 = 1 stays below 1e32 (see evidence).";
  return out;
}

// ---- C4: Sherman–Morrison keeps A_t = M_t^{-1} ------------------------------------------------------

struct PenaltyCase {
  std::uint64_t seed = 0;
  int d = 1, T = 1;
  std::string describe() const {
    return "{seed=" + std::to_string(seed) + ", d=" + std::to_string(d) + ", T=" + std::to_string(T) + "}";
  }
};

rc::Gen<PenaltyCase> gen_penalty_case(int min_d) {
  return rc::gen::build<PenaltyCase>(rc::gen::set(&PenaltyCase::seed, rc::gen::arbitrary<std::uint64_t>()),
                                     rc::gen::set(&PenaltyCase::d, rc::gen::inRange(min_d, 6)),
                                     rc::gen::set(&PenaltyCase::T, rc::gen::inRange(1, 21)));
}

// Rational u_t, λ0 ∈ (0, 4]; walks A_t by vla::penalise (nudge off), calling on_step(t, A_{t−1}, A_t, u_t, M_t).
template <class OnStep>
void exact_penalty_walk(const PenaltyCase& c, OnStep&& on_step) {
  proofs::RationalSource src(c.seed, 9, 8);
  vla::Options<rational> opt;
  opt.lambda0 = src.unit_interval() * 4;
  opt.stab_eps = rational(1, 10000);
  Mat<rational> a = Mat<rational>::Identity(c.d, c.d) / opt.lambda0;
  Mat<rational> m = Mat<rational>::Identity(c.d, c.d) * opt.lambda0;
  for (int t = 0; t < c.T; ++t) {
    const Vec<rational> u = src.vector(c.d);
    const Mat<rational> before = a;
    vla::penalise(opt, a, u, t + 1);
    m += u * u.transpose();
    on_step(t, before, a, u, m, src);
  }
}

ClaimOutcome vla_c4(const ClaimConfig& cfg) {
  const auto cx = find_counterexample(gen_penalty_case(1), cfg.seed, cfg.trials, [](const PenaltyCase& c) -> std::optional<std::string> {
    std::optional<std::string> failure;
    exact_penalty_walk(c, [&](int t, const Mat<rational>&, const Mat<rational>& a, const Vec<rational>&, const Mat<rational>& m, auto&) {
      const rational r = proofs::max_abs(Mat<rational>(a * m - Mat<rational>::Identity(c.d, c.d)));
      if (!failure && r != 0) failure = "t = " + std::to_string(t + 1) + ": A_t M_t − I has " + proofs::describe_residual(r);
    });
    return failure;
  });
  // Drift in floating point: T = 1000, d = 32, authors' u, λ0 = 1; and the effect of the authors' nudge.
  auto drift = [&](auto scalar_tag, int nudge) {
    using S = decltype(scalar_tag);
    Rng rng(cfg.seed);
    const auto pd = random_vla_problem(rng, 1000, 32, 1, 1.0, nudge);
    vla::Options<S> opt;
    opt.nudge_period = nudge;
    Mat<S> a = Mat<S>::Identity(32, 32), m = Mat<S>::Identity(32, 32);
    double worst = 0;
    for (int t = 0; t < 1000; ++t) {
      const ref::Vec<S> u = ref::cast_vector<S>(Vec<double>(pd.u.row(t).transpose()));
      vla::penalise(opt, a, u, t + 1);
      m += u * u.transpose();
      worst = std::max(worst, ref::to_double(S(Mat<S>(a * m - Mat<S>::Identity(32, 32)).cwiseAbs().maxCoeff())));
    }
    return worst;
  };
  std::ostringstream ev;
  ev << "Exact: A_t M_t = I (residual 0, rational arithmetic) at every step of " << cfg.trials
     << " random runs (d ≤ 5, T ≤ 20, rational u_t and λ0 ∈ (0, 4], nudge off; δ_t = 1 + u_t^T A_{t−1} u_t ≥ 1, so the "
        "stab_eps floor never acts)" << (cx ? " — EXCEPT the counterexample below" : "") << ". Floating point, T = 1000, "
        "d = 32, the authors' u_t, λ0 = 1: max_t |A_t M_t − I| = " << fmt(drift(double{}, 0)) << " (double), "
     << fmt(drift(dd{}, 0)) << " (dd_real). With the authors' nudge (A += 1e-3 I every 20 steps) A_t is no longer M_t^{-1} "
        "by construction: max_t |A_t M_t − I| = " << fmt(drift(dd{}, 20)) << " (dd_real).";
  ClaimOutcome out;
  out.evidence = ev.str();
  out.verdict = cx ? Verdict::falsified : Verdict::holds;
  if (cx) out.counterexample = "case " + cx->value.describe() + ": " + cx->failure;
  return out;
}

// ---- C5: the exact online least-squares solution? -------------------------------------------------

// S*_T = (Σ_s v_s k̂_s^T)(Σ_s k̂_s k̂_s^T + M_T)^{-1} (paper orientation) from the normal equations.
struct OnlineCheck {
  double gap = 0;          // ‖S_T − S*_T‖_F / ‖S*_T‖_F
  double normal_eq = 0;    // |S*(K + M) − B| relative: the minimiser solves its normal equations
  double relaxed = 0;      // largest relative deviation of S_t − S_{t−1} from c_t (P_t − S_{t−1})
  double constraint = 0;   // largest |P_t k̂_t − v_t|
  double orthogonality = 0;  // largest |⟨P_t − S_{t−1}, Δ⟩_{M_t}| over random Δ with Δ k̂_t = 0
  std::string example;     // T = 1 values
};

OnlineCheck online_check(const PenaltyCase& c) {
  Rng rng(c.seed);
  const auto pd = random_vla_problem(rng, c.T, c.d, 2, 1.0, 0);
  vla::Options<W> opt;
  const Eigen::Index d = c.d, dv = 2;
  Mat<W> a = Mat<W>::Identity(d, d), m = Mat<W>::Identity(d, d), s = Mat<W>::Zero(dv, d);  // paper orientation
  Mat<W> gram = Mat<W>::Zero(d, d), cross = Mat<W>::Zero(dv, d);
  OnlineCheck r;
  for (int t = 0; t < c.T; ++t) {
    const ref::Vec<W> u = ref::cast_vector<W>(Vec<double>(pd.u.row(t).transpose()));
    const ref::Vec<W> v = ref::cast_vector<W>(Vec<double>(pd.v.row(t).transpose()));
    vla::penalise(opt, a, u, t + 1);
    m += u * u.transpose();
    const auto w = vla::write_directions(opt, a, vla::feature(opt.feature, ref::cast_vector<W>(Vec<double>(pd.k.row(t).transpose()))));
    const ref::Vec<W> residual = v - s * w.khat;
    // The M_t-orthogonal projection of S_{t−1} onto {S : S k̂ = v}: P = S + r (A k̂)^T / (k̂^T A k̂).
    const ref::Vec<W> ak = a * w.khat;
    const Mat<W> p = s + residual * ak.transpose() / W(w.khat.dot(ak));
    const Mat<W> next = s + residual * w.alpha_hat.transpose();
    const W c_t = w.khat.dot(w.alpha_hat);
    const W step_norm = (next - s).cwiseAbs().maxCoeff();
    if (step_norm > W(0))
      r.relaxed = std::max(r.relaxed, ref::to_double(W(Mat<W>(next - s - c_t * (p - s)).cwiseAbs().maxCoeff() / step_norm)));
    r.constraint = std::max(r.constraint, ref::to_double(W(ref::Vec<W>(p * w.khat - v).cwiseAbs().maxCoeff())));
    const Mat<W> m_t = spd_solve<W>(a, Mat<W>::Identity(d, d));  // M_t = A_t^{-1}
    for (int j = 0; j < 3; ++j) {
      const Mat<W> delta = ref::cast_matrix<W>(gaussian(rng, dv, d, 1.0)) * (Mat<W>::Identity(d, d) - w.khat * w.khat.transpose());
      r.orthogonality = std::max(r.orthogonality, ref::to_double(W(abs(W(Mat<W>((p - s) * m_t * delta.transpose()).trace())) /
                                                                  (W(1) + delta.cwiseAbs().maxCoeff()))));
    }
    s = next;
    gram += w.khat * w.khat.transpose();
    cross += v * w.khat.transpose();
  }
  const Mat<W> system = gram + m;
  const Mat<W> star = spd_solve<W>(system, Mat<W>(cross.transpose())).transpose();  // system symmetric
  r.normal_eq = ref::to_double(W((star * system - cross).cwiseAbs().maxCoeff() / (W(1) + cross.cwiseAbs().maxCoeff())));
  r.gap = ref::to_double(W(sqrt(W((s - star).squaredNorm())) / sqrt(W(star.squaredNorm()))));
  if (c.T == 1 && c.d == 1)
    r.example = "S_1 = v_1 α̂_1^T = " + fmt(ref::to_double(s(0, 0)), 12) + " (computed), S*_1 = v_1 k̂_1/(1 + λ0 + u_1²) = " +
                fmt(ref::to_double(star(0, 0)), 12) + " (predicted by the claim), u_1² = " + fmt(ref::to_double(W(m(0, 0) - 1)), 6);
  return r;
}

ClaimOutcome vla_c5(const ClaimConfig& cfg) {
  const auto cx = find_counterexample(gen_penalty_case(1), cfg.seed, cfg.trials, [](const PenaltyCase& c) -> std::optional<std::string> {
    const OnlineCheck r = online_check(c);
    if (r.gap < 1e-40) return std::nullopt;
    return "‖S_T − S*_T‖_F/‖S*_T‖_F = " + fmt(r.gap) + (r.example.empty() ? "" : "; " + r.example);
  });
  double worst_gap = 0, min_gap = 1e300, normal = 0, relaxed = 0, constraint = 0, orth = 0;
  rc::Random random(cfg.seed);
  for (int i = 0; i < cfg.trials; ++i) {
    const OnlineCheck r = online_check(gen_penalty_case(1)(random.split(), 100).value());
    worst_gap = std::max(worst_gap, r.gap), min_gap = std::min(min_gap, r.gap);
    normal = std::max(normal, r.normal_eq), relaxed = std::max(relaxed, r.relaxed);
    constraint = std::max(constraint, r.constraint), orth = std::max(orth, r.orthogonality);
  }
  const bool true_statement = relaxed < 1e-60 && constraint < 1e-60 && orth < 1e-60;
  std::ostringstream ev;
  ev << "266-bit MPFR, " << cfg.trials << " random runs (d ≤ 5, T ≤ 20, λ0 = 1, nudge off, declared inputs): the "
        "regularised least-squares minimiser S*_T = (Σ v_s k̂_s^T)(Σ k̂_s k̂_s^T + M_T)^{-1} (its normal equations hold to "
     << fmt(normal) << ") differs from VLA's S_T by a relative Frobenius distance from " << fmt(min_gap) << " to "
     << fmt(worst_gap) << ". True statement, checked the same way: each VLA write is a relaxed projection in the "
        "penalty's geometry, S_t = S_{t−1} + c_t (P_t − S_{t−1}) with c_t = k̂_t^T α̂_t and P_t the closest state to "
        "S_{t−1} in ‖·‖_{M_t} (M_t = A_t^{-1}) with P_t k̂_t = v_t: deviation " << fmt(relaxed) << ", constraint residual "
     << fmt(constraint) << ", M_t-orthogonality to feasible directions " << fmt(orth)
     << (true_statement ? "" : " — THE TRUE STATEMENT FAILED") << ". It is an online step, not the batch solution: the "
        "minimiser needs all of Σ v_s k̂_s^T and Σ k̂_s k̂_s^T + M_t, which VLA does not keep.";
  ClaimOutcome out;
  out.evidence = ev.str();
  out.verdict = cx ? Verdict::falsified : Verdict::holds;
  if (cx)
    out.counterexample = "case " + cx->value.describe() + " (trial " + std::to_string(cx->trial) + ", " +
                         std::to_string(cx->shrink_steps) + " shrink steps; 266-bit MPFR, declared inputs): " + cx->failure + ".";
  return out;
}

// ---- C6: contraction along penalised directions, orthogonal writes? --------------------------------

ClaimOutcome vla_c6(const ClaimConfig& cfg) {
  // Exact (rationals; k̂ an exact unit vector, α̂'s normalisation does not change orthogonality):
  //  (i) u_t^T A_t u_t = s/(1 + s), s = u_t^T A_{t−1} u_t (contraction along u_t), A_{t−1} − A_t ⪰ 0 (δ_t > 0);
  //  (ii) the claim's orthogonality u_t^T A_t k̂_t = 0; (iii) the true damping u_t^T A_t k̂ = u_t^T A_{t−1} k̂/(1 + s).
  bool contraction = true, damping = true;
  auto exact_step = [&](const PenaltyCase& c, bool* contraction_ok, bool* damping_ok) -> std::optional<std::string> {
    std::optional<std::string> failure;
    exact_penalty_walk(c, [&](int t, const Mat<rational>& before, const Mat<rational>& a, const Vec<rational>& u, const Mat<rational>&,
                              proofs::RationalSource& src) {
      const rational s = u.dot(before * u);
      if (contraction_ok) *contraction_ok &= (u.dot(a * u) == s / (1 + s)) && (1 + s > 0);
      const Vec<rational> khat = src.unit_vector(c.d);
      const rational along = u.dot(a * khat);
      if (damping_ok) *damping_ok &= along == u.dot(before * khat) / (1 + s);
      if (!failure && along != 0)
        failure = "t = " + std::to_string(t + 1) + ": u_t^T α̂_t ∝ u_t^T A_t k̂_t = " + along.str() + " ≈ " +
                  fmt(ref::to_double(along)) + " (predicted 0), = u_t^T A_{t−1} k̂_t/(1 + s) with s = u_t^T A_{t−1} u_t = " +
                  fmt(ref::to_double(s)) + " (exact rationals)";
    });
    return failure;
  };
  const auto cx = find_counterexample(gen_penalty_case(2), cfg.seed, cfg.trials,
                                      [&](const PenaltyCase& c) { return exact_step(c, nullptr, nullptr); });
  rc::Random random(cfg.seed);
  for (int i = 0; i < cfg.trials; ++i) exact_step(gen_penalty_case(2)(random.split(), 100).value(), &contraction, &damping);
  // The authors' setting in double: d = 32, λ0 = 1, T = 1000: how much the write direction α̂_t leans
  // away from u_t compared with k̂_t, and after n repeats of one penalty direction.
  Rng rng(cfg.seed);
  const auto p = random_vla_problem(rng, 1000, 32, 1, 1.0, 0);
  Mat<double> a = Mat<double>::Identity(32, 32);
  double mean_damping = 0, cos_k = 0, cos_alpha = 0;
  for (int t = 0; t < 1000; ++t) {
    const Vec<double> u = p.u.row(t).transpose();
    const double s = u.dot(a * u);
    vla::penalise(p.opt, a, u, t + 1);
    const auto w = vla::write_directions(p.opt, a, vla::feature(p.opt.feature, Vec<double>(p.k.row(t).transpose())));
    mean_damping += 1 / (1 + s) / 1000;
    cos_k += std::abs(w.khat.dot(u.normalized())) / 1000;
    cos_alpha += std::abs(w.alpha_hat.dot(u.normalized())) / 1000;
  }
  std::ostringstream repeats;
  for (int n : {1, 10, 100, 1000}) {  // s_n = (n/d)/(λ0 + n/d) along a direction penalised n times with ‖u‖² = 1/d
    const double s_along = (n / 32.0);
    repeats << n << " → " << fmt(1 / (1 + s_along)) << (n == 1000 ? "" : ", ");
  }
  std::ostringstream ev;
  ev << "Exact (rationals, " << cfg.trials << " runs, d 2..5, T ≤ 20, rational u_t and λ0, exact unit k̂_t): contraction "
        "along the penalised direction, u_t^T A_t u_t = s/(1 + s) < s = u_t^T A_{t−1} u_t and A_t ⪯ A_{t−1}: "
     << (contraction ? "holds exactly" : "FAILED") << ". Orthogonality of the write to the penalised direction, "
        "u_t^T α̂_t = 0: " << (cx ? "false (counterexample below)" : "holds") << ". True statement (exact): the component of "
        "the write direction along u_t is damped, u_t^T A_t k̂_t = u_t^T A_{t−1} k̂_t/(1 + u_t^T A_{t−1} u_t): "
     << (damping ? "holds exactly" : "FAILED") << "; it vanishes only in the limit of unbounded penalty mass along u_t. "
        "Authors' setting (d = 32, λ0 = 1, ‖u_t‖ = 1/√d, T = 1000, double): mean damping factor 1/(1 + s_t) = "
     << fmt(mean_damping, 4) << "; mean |cos(k̂_t, u_t)| = " << fmt(cos_k, 4) << " vs mean |cos(α̂_t, u_t)| = " << fmt(cos_alpha, 4)
     << ". Damping along a direction penalised n times (‖u‖² = 1/d, d = 32, λ0 = 1, factor 1/(1 + n/d)): " << repeats.str()
     << ".";
  ClaimOutcome out;
  out.evidence = ev.str();
  out.verdict = cx || !contraction ? Verdict::falsified : Verdict::holds;
  if (cx)
    out.counterexample = "case " + cx->value.describe() + " (trial " + std::to_string(cx->trial) + ", " +
                         std::to_string(cx->shrink_steps) + " shrink steps): " + cx->failure + ".";
  return out;
}

// ---- C10: kernel speed (not checkable here); the O(T) part by exact operation counts ---------------

ClaimOutcome vla_c10(const ClaimConfig& cfg) {
  using C = ref::CountedDouble;
  const int d = 16;
  auto ops = [&](int T, int form) {  // 0: VLA serial, 1: VLA scan, 2: LA (ratio, ELU+1)
    Rng rng(cfg.seed);
    const auto pd = random_vla_problem(rng, T, d, d, 1.0, 0);
    vla::Problem<C> p{ref::cast_matrix<C>(pd.q), ref::cast_matrix<C>(pd.k), ref::cast_matrix<C>(pd.v), ref::cast_matrix<C>(pd.u), {}, {}};
    return ref::count_ops([&] {
      if (form == 0) vla::serial(p);
      else if (form == 1) vla::scan(p);
      else {
        ref::linear_attention::Problem<C> la{p.q, p.k, p.v, {ref::linear_attention::FeatureMap::elu_plus_one, true, C(1e-6), C(1)}, {}, {}};
        ref::linear_attention::serial(la);
      }
    });
  };
  std::ostringstream ev;
  bool linear = true;
  double per_token[3];
  for (int form : {0, 1, 2}) {
    const std::uint64_t a = ops(256, form), b = ops(512, form), c = ops(1024, form);
    const bool lin = c - b == 2 * (b - a);  // a fixed setup cost plus the same cost for every token
    if (form == 0) linear = lin;
    per_token[form] = double(b - a) / 256;
    ev << (form == 0 ? "VLA serial" : form == 1 ? "VLA scan (work)" : "LA (ratio, ELU+1)") << ": " << fmt(per_token[form], 6)
       << " ops/token at d = " << d << ", counts exactly affine in T (setup + T × per-token) over 256, 512, 1024: " << (lin ? "yes" : "no") << "; ";
  }
  ev << "VLA/LA operation ratio " << fmt(per_token[0] / per_token[2]) << " (the paper: about 5×). Speed: ";
  // The speed figures are judged from larc's fused VLA kernel (gpu/src/vla_fused.cu) timed on the H200
  // beside SDPA and a sequential PyTorch loop (reports/h200/bench.json; tools/h200/kernels_run.sh full).
  ClaimOutcome out = judge_vla_kernel_speed(read_h200_bench_report(cfg.h200_bench));
  out.evidence = ev.str() + out.evidence;
  if (!linear) {
    out.verdict = Verdict::not_checkable_here;
    out.counterexample = "VLA's serial operation count is not affine in T (see evidence).";
  }
  return out;
}

}  // namespace

void register_vla_claims(std::vector<Claim>& out) {
  using namespace vla_claims;
  out.push_back({"VLA-C1", kPaper,
                 "(Prop. 2) With k̂ and α̂ of unit length, the recurrence Jacobian J_t = ∂S_t/∂S_{t−1} (the map "
                 "S ↦ S(I − k̂ α̂^T)) has spectral norm exactly 1, for every T and every d_h.",
                 30, vla_c1});
  out.push_back({"VLA-C2", kPaper,
                 "Without the normalisation the spectral norm grows like d_h/λ0, e.g. a gradient magnification of 1e32 "
                 "after 25 steps at d_h = 96.",
                 2, vla_c2});
  out.push_back({"VLA-C3", kPaper,
                 "(Prop. 1) Under bounded inputs ‖S_t‖_F is self-limiting: it reaches a finite plateau, whereas for LA "
                 "‖S_T‖_F = O(T).",
                 2, vla_c3});
  out.push_back({"VLA-C4", kPaper,
                 "The Sherman–Morrison recursion keeps A_t = M_t^{-1} exactly, M_t = λ0 I + Σ_{s≤t} u_s u_s^T.", 200, vla_c4});
  out.push_back({"VLA-C5", kPaper,
                 "The recursion is the exact online solution of S*_t = argmin_S Σ_{s≤t} ‖v_s − S k̂_s‖² + tr(S M_t S^T).", 40,
                 vla_c5});
  out.push_back({"VLA-C6", kPaper,
                 "A_t contracts along recently written (penalised) directions, so new writes go into directions orthogonal "
                 "to recently used subspaces.",
                 200, vla_c6});
  out.push_back({"VLA-C7", kPaper,
                 "At T = 1000, ‖S_T‖_F ≈ 1600 for LA and < 15 for VLA (109× smaller); DeltaNet is also bounded.", 2, vla_c7});
  out.push_back({"VLA-C8", kPaper,
                 "Capacity: with n_pairs < d_h (n = 24, d_h = 32) VLA recalls every association exactly (1.000); DeltaNet "
                 "0.010, LA 0.074, softmax 0.26. With n = 8 and T up to 512, VLA stays at 1.000. With n > d_h it degrades "
                 "more gracefully than LA.",
                 3, vla_c8});
  out.push_back({"VLA-C9", kPaper,
                 "The Blelloch parallel scan over the affine maps S ↦ S F_t + G_t (F_t = I − k̂_t α̂_t^T, G_t = v_t α̂_t^T), "
                 "combining (F_l, G_l) then (F_r, G_r) as (F_r F_l, F_r G_l + G_r), reproduces the sequential recurrence exactly.",
                 200, vla_c9});
  out.push_back({"VLA-C10", kPaper,
                 "The fused kernel is ≈14× faster than sequential Python, O(T), and drops below softmax attention latency "
                 "at ≈43,000 tokens.",
                 1, vla_c10});
}

}  // namespace larc::props
