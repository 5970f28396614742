// KLA-C1..C6 (SPEC §3). C1–C3 are checked exactly where the paper states them (η = 1, ε = 0; a
// decay α ≤ 1 is allowed, it only changes S̃) and numerically at 266 bits for the regime that is
// trained (η < 1, ε > 0, α < 1), where the true statement is a relaxed projection. C4 compares the
// chunked and recurrent forms exactly; C5 is a memory-level state-norm experiment; C6 counts
// operations exactly and times the reference.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "larc/proofs_check/kla_projection.h"
#include "larc/properties/claims.h"
#include "larc/properties/generators.h"
#include "larc/properties/h200_bench.h"
#include "larc/properties/search.h"
#include "larc/reference/delta_rule.h"
#include "larc/reference/op_count.h"

namespace larc::props {
namespace {

using proofs::KaczmarzInstance;
using ref::dd;
using W = proofs::Wide;
using ref::rational;
namespace dr = ref::delta_rule;

constexpr const char* kPaper = "KLA (Kaczmarz Linear Attention)";

std::string fmt(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

// ---- exact single-write cases (C1–C3) -----------------------------------------------------------

struct StepCase {
  std::uint64_t seed = 0;
  int dk = 1, dv = 1;
  bool decay = false;
  std::string describe() const {
    return "{seed=" + std::to_string(seed) + ", d_k=" + std::to_string(dk) + ", d_v=" + std::to_string(dv) +
           ", decay=" + (decay ? "rational α in (0,1]" : "none") + "}";
  }
  KaczmarzInstance instance() const { return proofs::random_kaczmarz_instance(seed, dk, dv, decay); }
};

rc::Gen<StepCase> gen_step_case() {
  return rc::gen::build<StepCase>(rc::gen::set(&StepCase::seed, rc::gen::arbitrary<std::uint64_t>()),
                                  rc::gen::set(&StepCase::dk, rc::gen::inRange(1, 7)),
                                  rc::gen::set(&StepCase::dv, rc::gen::inRange(1, 6)),
                                  rc::gen::set(&StepCase::decay, rc::gen::arbitrary<bool>()));
}

// Searches for an instance where residual(x, S_t, seed) ≠ 0, S_t the reference's Kaczmarz write of x.
template <class Residual>
ClaimOutcome exact_step_claim(const ClaimConfig& cfg, const std::string& what, Residual residual,
                              const std::string& trained_regime_evidence, bool trained_regime_ok) {
  auto cx = find_counterexample(gen_step_case(), cfg.seed, cfg.trials, [&](const StepCase& c) -> std::optional<std::string> {
    const KaczmarzInstance x = c.instance();
    const rational r = residual(x, proofs::kaczmarz_write(x), c.seed);
    if (r == 0) return std::nullopt;
    return proofs::describe_residual(r);
  });
  ClaimOutcome out;
  if (cx) {
    out.verdict = Verdict::falsified;
    out.counterexample = "case " + cx->value.describe() + " (trial " + std::to_string(cx->trial) + ", " +
                         std::to_string(cx->shrink_steps) + " shrink steps): " + cx->failure +
                         " in exact rational arithmetic.";
    out.evidence = what + ": an exact counterexample exists (see below). " + trained_regime_evidence;
    return out;
  }
  out.verdict = Verdict::holds;
  out.evidence = what + " holds exactly (residual 0 in rational arithmetic) on all " + std::to_string(cfg.trials) +
                 " random rational instances (d_k ≤ 6, d_v ≤ 5, with and without a rational decay α), the write "
                 "computed by delta_rule::State<rational>::step with β = kla_beta(η = 1, ε = 0). " +
                 trained_regime_evidence + (trained_regime_ok ? "" : " THE TRAINED-REGIME STATEMENT FAILED: see above.");
  return out;
}

// The trained regime, at 266 bits (proofs_check's numeric rung): η ∈ [0.05, 1), ε = 1e-6, α ∈ [e^-1, 1], keys of varied norms.
struct TrainedWrite {
  ref::Mat<W> s_tilde, s_t;
  ref::Vec<W> k, v, e;
  W rho;   // η‖k‖²/(‖k‖²+ε): the fraction of the projection step actually taken
  W beta;  // η/(‖k‖²+ε)
};

TrainedWrite trained_write(std::uint64_t seed, int trial) {
  Rng rng(seed * 7919 + static_cast<std::uint64_t>(trial));
  const int dk = 1 + static_cast<int>(rng.integer(0, 15)), dv = 1 + static_cast<int>(rng.integer(0, 15));
  const KeyKind kinds[] = {KeyKind::gaussian, KeyKind::unit, KeyKind::heavy_tailed, KeyKind::tiny_norm, KeyKind::huge_norm};
  const ref::Mat<W> s_prev = ref::cast_matrix<W>(gaussian(rng, dk, dv, 1.0));
  TrainedWrite w;
  w.k = ref::cast_matrix<W>(keys(rng, kinds[trial % 5], 1, dk)).row(0).transpose();
  w.v = ref::cast_matrix<W>(gaussian(rng, 1, dv, 1.0)).row(0).transpose();
  const W eta(rng.uniform(0.05, 1.0)), eps(1e-6), alpha = exp(W(rng.uniform(-1.0, 0.0)));
  w.beta = dr::kla_beta<W>(ref::Mat<W>(w.k.transpose()), ref::Vec<W>::Constant(1, eta), eps)(0);
  w.rho = eta * w.k.squaredNorm() / (w.k.squaredNorm() + eps);
  w.s_tilde = alpha * s_prev;
  w.e = w.v - w.s_tilde.transpose() * w.k;
  dr::State<W> st(s_prev);
  st.step(ref::Vec<W>::Zero(dk), w.k, w.v, alpha, w.beta, W(1));
  w.s_t = st.matrix();
  return w;
}

double rel_dev(const ref::Mat<W>& a, const ref::Mat<W>& b) {
  const W scale = std::max(W(1e-300), W(b.cwiseAbs().maxCoeff()));
  return ref::to_double(W((a - b).cwiseAbs().maxCoeff() / scale));
}

ClaimOutcome kla_c1(const ClaimConfig& cfg) {
  double worst_dev = 0, min_rho = 1, max_rho = 0;
  for (int i = 0; i < cfg.trials; ++i) {
    const TrainedWrite w = trained_write(cfg.seed, i);
    const ref::Mat<W> projection = w.s_tilde + w.k * w.e.transpose() / w.k.squaredNorm();
    worst_dev = std::max(worst_dev, rel_dev(w.s_t, w.s_tilde + w.rho * (projection - w.s_tilde)));
    min_rho = std::min(min_rho, ref::to_double(w.rho));
    max_rho = std::max(max_rho, ref::to_double(w.rho));
  }
  const bool ok = worst_dev < 1e-70;
  const std::string trained =
      "Trained regime (η ∈ [0.05, 1), ε = 1e-6, α < 1; " + std::to_string(cfg.trials) +
      " 266-bit MPFR writes over Gaussian, unit, heavy-tailed, tiny-norm (1e-4) and huge-norm (1e3) keys): the "
      "claim does not hold there — S_t^T k ≠ v — and the true statement is a relaxed projection, S_t = S̃ + ρ(P(S̃) − S̃) "
      "with P the orthogonal projection and ρ = η‖k‖²/(‖k‖²+ε), so the constraint residual is (1−ρ)‖e‖. Checked: largest "
      "relative deviation " + fmt(worst_dev) + " (266-bit MPFR). Observed ρ from " + fmt(min_rho) + " to " +
      fmt(max_rho) + ": for keys with ‖k‖² ≲ ε the ε term dominates and the write almost vanishes.";
  return exact_step_claim(
      cfg, "Orthogonal projection (S_t^T k = v, and ⟨S_t − S̃, Δ⟩ = 0 for every feasible direction Δ)",
      proofs::projection_residual, trained, ok);
}

ClaimOutcome kla_c2(const ClaimConfig& cfg) {
  double worst_dev = 0;
  for (int i = 0; i < cfg.trials; ++i) {
    const TrainedWrite w = trained_write(cfg.seed, i);
    auto loss = [&](const ref::Mat<W>& s) { return proofs::per_token_loss<W>(s, w.k, w.v); };
    const W l0 = loss(w.s_tilde);
    if (l0 == W(0)) continue;
    const W predicted = (W(1) - w.rho) * (W(1) - w.rho);
    worst_dev = std::max(worst_dev, std::abs(ref::to_double(W(loss(w.s_t) / l0 - predicted))));
  }
  const bool ok = worst_dev < 1e-70;
  const std::string trained =
      "Trained regime (" + std::to_string(cfg.trials) + " 266-bit MPFR writes from KLA-C1's generator): β = η/(‖k‖²+ε) is not the "
      "line-search minimiser; the loss falls to (1−ρ)² of its value, ρ = η‖k‖²/(‖k‖²+ε). Checked: largest deviation of "
      "L(β_KLA)/L(0) from (1−ρ)² is " + fmt(worst_dev) + ".";
  return exact_step_claim(
      cfg, "Exact line search (the exactly fitted quadratic L(β) has its minimiser at 1/‖k‖², where L = 0)",
      [](const KaczmarzInstance& x, const Mat<rational>& s_t, std::uint64_t) { return proofs::line_search_residual(x, s_t); },
      trained, ok);
}

ClaimOutcome kla_c3(const ClaimConfig& cfg) {
  double worst_dev = 0;
  for (int i = 0; i < cfg.trials; ++i) {
    const TrainedWrite w = trained_write(cfg.seed, i);
    const ref::Mat<W> grad = proofs::central_difference_gradient(
        w.s_tilde, [&](const ref::Mat<W>& s) { return proofs::per_token_loss<W>(s, w.k, w.v); });
    worst_dev = std::max(worst_dev, rel_dev(w.s_t, w.s_tilde - w.beta * grad));
  }
  const bool ok = worst_dev < 1e-65;
  const std::string trained =
      "Trained regime (" + std::to_string(cfg.trials) + " 266-bit MPFR writes from KLA-C1's generator): the write is a gradient step of size "
      "β = η/(‖k‖²+ε) = ρ/‖k‖², i.e. the normalised step damped by ρ. Checked with central-difference gradients: "
      "largest relative deviation " + fmt(worst_dev) + ".";
  return exact_step_claim(
      cfg, "Normalised gradient step (S_t = S̃ − ∇ℓ(S̃)/‖k‖², ∇ℓ by exact central differences)",
      [](const KaczmarzInstance& x, const Mat<rational>& s_t, std::uint64_t) { return proofs::gradient_step_residual(x, s_t); },
      trained, ok);
}

// ---- C4: chunked == recurrent ---------------------------------------------------------------------

struct ChunkCase {
  std::uint64_t seed = 0;
  int T = 1, dk = 1, dv = 1, chunk = 1;
  std::string describe() const {
    return "{seed=" + std::to_string(seed) + ", T=" + std::to_string(T) + ", d_k=" + std::to_string(dk) +
           ", d_v=" + std::to_string(dv) + ", chunk=" + std::to_string(chunk) + "}";
  }
};

// A KLA problem over rationals: η ∈ (0, 1], ε = 10^-6, rational decays, β = kla_beta.
dr::Problem<rational> rational_kla_problem(const ChunkCase& c) {
  proofs::RationalSource src(c.seed);
  dr::Problem<rational> p;
  p.q = src.matrix(c.T, c.dk);
  p.k = src.matrix(c.T, c.dk);
  p.v = src.matrix(c.T, c.dv);
  p.alpha.resize(c.T);
  ref::Vec<rational> eta(c.T);
  for (int t = 0; t < c.T; ++t) {
    p.alpha(t) = src.unit_interval();
    eta(t) = src.unit_interval();
  }
  p.beta = dr::kla_beta<rational>(p.k, eta, rational(1, 1000000));
  p.scale = 1;
  p.initial_state = src.matrix(c.dk, c.dv);
  return p;
}

ClaimOutcome kla_c4(const ClaimConfig& cfg) {
  const int chunks[] = {1, 2, 3, 5, 8, 16};
  auto gen = rc::gen::build<ChunkCase>(
      rc::gen::set(&ChunkCase::seed, rc::gen::arbitrary<std::uint64_t>()),
      rc::gen::set(&ChunkCase::T, rc::gen::inRange(1, 25)), rc::gen::set(&ChunkCase::dk, rc::gen::inRange(1, 5)),
      rc::gen::set(&ChunkCase::dv, rc::gen::inRange(1, 4)),
      rc::gen::set(&ChunkCase::chunk, rc::gen::map(rc::gen::inRange(0, 6), [chunks](int i) { return chunks[i]; })));
  auto cx = find_counterexample(gen, cfg.seed, cfg.trials, [](const ChunkCase& c) -> std::optional<std::string> {
    const auto p = rational_kla_problem(c);
    const auto a = dr::serial(p), b = dr::chunked(p, c.chunk);
    const rational r = std::max(proofs::max_abs(a.o - b.o), proofs::max_abs(a.final_state - b.final_state));
    if (r == 0) return std::nullopt;
    return proofs::describe_residual(r) + " between serial and chunked outputs/state";
  });
  // Numerically at longer T in dd_real: KLA β on Gaussian (unnormalised) keys, chunk 64.
  double worst = 0;
  for (int i = 0; i < 3; ++i) {
    DeltaCase c{cfg.seed + static_cast<std::uint64_t>(i), 300, 32, 16, KeyKind::heavy_tailed, GateKind::moderate, true};
    auto p = cast_problem<dd>(gdn_problem(c));
    Rng rng(c.seed ^ 0x6b6c61ull);  // η drawn apart from the inputs' stream
    ref::Vec<dd> eta(c.T);
    for (int t = 0; t < c.T; ++t) eta(t) = dd(rng.uniform(0.05, 1.0));
    p.beta = dr::kla_beta<dd>(p.k, eta, dd(1e-6));
    const auto a = dr::serial(p), b = dr::chunked(p, 64);
    worst = std::max(worst, ref::to_double(dd((a.o - b.o).cwiseAbs().maxCoeff() / a.o.cwiseAbs().maxCoeff())));
  }
  ClaimOutcome out;
  const std::string numeric = "In dd_real at T = 300, d_k = 32, d_v = 16, heavy-tailed unnormalised keys, chunk 64, "
                              "3 seeds: largest relative deviation " + fmt(worst) + ". ";
  const std::string dropin =
      "Drop-in: KLA runs through delta_rule::chunked unchanged — the same state shape, gates and UT/WY solver as GDN "
      "— with only β (the diagonal B) computed by kla_beta.";
  if (cx) {
    out.verdict = Verdict::falsified;
    out.counterexample = "case " + cx->value.describe() + ": " + cx->failure;
    out.evidence = "Chunked and recurrent KLA differ in exact arithmetic. " + numeric + dropin;
  } else {
    out.verdict = Verdict::holds;
    out.evidence = "Chunked (UT/WY) equals recurrent exactly (residual 0, rationals) on " + std::to_string(cfg.trials) +
                   " random KLA problems (T ≤ 24, chunk ∈ {1,2,3,5,8,16}, rational η ∈ (0,1], ε = 1e-6, rational "
                   "decays, initial state), outputs and final states. " + numeric + dropin;
  }
  return out;
}

// ---- C5: state norms, GDN (β = σ(·)) against KLA on unnormalised keys of growing norm ---------------

struct NormRun {
  double norm_half = 0, norm_full = 0, max_beta_k2 = 0, min_beta_k2 = 1e300;
  double expanding_fraction = 0;  // share of tokens with β‖k‖² > 2 (an expanding write)
  bool bounded() const { return std::isfinite(norm_full) && norm_full < 1e3 && norm_full <= 2 * norm_half + 1; }
};

// Runs T tokens of the delta rule without decay on keys r·(unit), values N(0, I/d), β from `beta_of`.
template <class BetaOf>
NormRun run_norms(std::uint64_t seed, double r, int T, int d, BetaOf beta_of) {
  Rng rng(seed);
  const Mat<double> k = r * unit_rows(rng, T, d);
  const Mat<double> v = gaussian(rng, T, d, 1.0 / std::sqrt(double(d)));
  dr::State<double> st(d, d);
  NormRun out;
  for (int t = 0; t < T; ++t) {
    const double logit = rng.normal();
    const double beta = beta_of(logit, k.row(t).squaredNorm());
    out.max_beta_k2 = std::max(out.max_beta_k2, beta * k.row(t).squaredNorm());
    out.min_beta_k2 = std::min(out.min_beta_k2, beta * k.row(t).squaredNorm());
    if (beta * k.row(t).squaredNorm() > 2) out.expanding_fraction += 1.0 / T;
    st.step(Vec<double>::Zero(d), k.row(t).transpose(), v.row(t).transpose(), 1.0, beta, 1.0);
    if (t + 1 == T / 2) out.norm_half = st.matrix().norm();
  }
  out.norm_full = st.matrix().norm();
  return out;
}

ClaimOutcome kla_c5(const ClaimConfig& cfg) {
  const double radii[] = {0.25, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0};
  const int T = 1000, d = 32;
  auto sigmoid = [](double x) { return 1.0 / (1.0 + std::exp(-x)); };
  std::ostringstream table;
  table << "‖S_T‖_F at T = " << T << " (d = " << d << ", no decay, values N(0, I/d), logits N(0,1), worst over "
        << cfg.trials << " seeds): ";
  bool kla_always_bounded = true, gdn_bounded_somewhere = false, gdn_diverged_somewhere = false;
  bool threshold_consistent = true;  // GDN bounded whenever max β‖k‖² ≤ 2, diverged whenever min β‖k‖² > 2
  std::string gdn_stable_example;
  for (double r : radii) {
    NormRun worst_gdn, worst_kla;
    bool gdn_ok = true, kla_ok = true;
    for (int s = 0; s < cfg.trials; ++s) {
      const std::uint64_t seed = cfg.seed * 1000003 + static_cast<std::uint64_t>(s);
      const NormRun g = run_norms(seed, r, T, d, [&](double logit, double) { return sigmoid(logit); });
      const NormRun k = run_norms(seed, r, T, d, [&](double logit, double k2) { return sigmoid(logit) / (k2 + 1e-6); });
      gdn_ok = gdn_ok && g.bounded();
      kla_ok = kla_ok && k.bounded();
      if (!(g.norm_full <= worst_gdn.norm_full)) worst_gdn = g;
      if (!(k.norm_full <= worst_kla.norm_full)) worst_kla = k;
      if (g.max_beta_k2 <= 2 && !g.bounded()) threshold_consistent = false;
      if (g.min_beta_k2 > 2 && g.bounded()) threshold_consistent = false;
    }
    kla_always_bounded = kla_always_bounded && kla_ok;
    gdn_bounded_somewhere = gdn_bounded_somewhere || gdn_ok;
    gdn_diverged_somewhere = gdn_diverged_somewhere || !gdn_ok;
    if (gdn_ok && r > 1.0)  // the largest unnormalised key norm at which GDN stayed bounded
      gdn_stable_example = "‖k‖ = " + fmt(r) + ": GDN ‖S_T‖ = " + fmt(worst_gdn.norm_full) + " (max β‖k‖² = " +
                           fmt(worst_gdn.max_beta_k2) + ", expanding writes on " +
                           fmt(100 * worst_gdn.expanding_fraction) + "% of tokens), KLA " + fmt(worst_kla.norm_full);
    table << "‖k‖ = " << fmt(r) << ": GDN " << fmt(worst_gdn.norm_full) << (gdn_ok ? "" : " (diverging)") << " ("
          << fmt(100 * worst_gdn.expanding_fraction) << "% of writes with β‖k‖² > 2), KLA " << fmt(worst_kla.norm_full)
          << "; ";
  }
  const std::string law =
      "Derived statement: along k_t the delta-rule transition multiplies by 1 − β_t‖k_t‖², so GDN's write is "
      "non-expansive iff β_t‖k_t‖² ≤ 2, while KLA's β_t‖k_t‖² = η‖k‖²/(‖k‖²+ε) < 1 always. Observed threshold "
      "consistent with it (bounded whenever max β‖k‖² ≤ 2, diverging whenever min β‖k‖² > 2): " +
      std::string(threshold_consistent ? "yes" : "NO") + ". ";
  const std::string untestable =
      "The paper's evidence (pre-training PPL and synthetic-task stability of trained models) is NOT-CHECKABLE-HERE: "
      "it needs trained models; the memory-level mechanism is what is checked.";
  ClaimOutcome out;
  out.evidence = table.str() + law + untestable;
  if (!kla_always_bounded) {
    out.verdict = Verdict::falsified;
    out.counterexample = "KLA's state norm was not bounded for some key norm above.";
  } else if (gdn_bounded_somewhere && gdn_diverged_somewhere) {
    out.verdict = Verdict::holds_under;
    out.evidence = "Condition: GDN's learned scalar degrades stability only when β_t‖k_t‖² > 2 (an expanding write) "
                   "on a sizeable share of tokens, i.e. for key norms well above √(2/β); below that GDN's state stays "
                   "bounded even with unnormalised keys. KLA stays bounded at every key norm. " + out.evidence;
    out.counterexample = "Outside the condition GDN's state stays bounded too, with unnormalised keys: " + gdn_stable_example + ".";
  } else if (gdn_diverged_somewhere) {
    out.verdict = Verdict::holds;
  } else {
    out.verdict = Verdict::falsified;
    out.counterexample = "GDN with β = σ(·) stayed bounded at every key norm tried: no degradation to normalise away.";
  }
  return out;
}

// ---- C6: O(n) time and memory, prefill cost equal to GDN's -----------------------------------------

ClaimOutcome kla_c6(const ClaimConfig& cfg) {
  using C = ref::CountedDouble;
  const int d = 16;
  auto problem = [&](int T) {
    const auto pd = gdn_problem(DeltaCase{cfg.seed, T, d, d, KeyKind::gaussian, GateKind::moderate, false});
    return cast_problem<C>(pd);
  };
  // Exact operation counts for GDN (β given) and KLA (β = kla_beta(η, ε) computed first).
  auto ops = [&](int T, bool kla, bool chunk) {
    auto p = problem(T);
    return ref::count_ops([&] {
      if (kla) p.beta = dr::kla_beta<C>(p.k, p.beta, C(1e-6));
      if (chunk) dr::chunked(p, 64);
      else dr::serial(p);
    });
  };
  bool linear = true;
  std::ostringstream ev;
  for (bool chunk : {false, true}) {
    const std::uint64_t g1 = ops(256, false, chunk), g2 = ops(512, false, chunk), g4 = ops(1024, false, chunk);
    const std::uint64_t k1 = ops(256, true, chunk), k2 = ops(512, true, chunk), k4 = ops(1024, true, chunk);
    linear = linear && (g4 - g2 == 2 * (g2 - g1)) && (k4 - k2 == 2 * (k2 - k1)) && (2 * g1 == g2) && (2 * k1 == k2);
    const double per_tok_g = double(g2 - g1) / 256, per_tok_k = double(k2 - k1) / 256;
    ev << (chunk ? "Chunked (prefill, C = 64)" : "Serial") << " form, exact operation counts at d = " << d
       << ": GDN " << fmt(per_tok_g) << " ops/token, KLA " << fmt(per_tok_k) << " ops/token (+" << fmt(per_tok_k - per_tok_g)
       << (per_tok_k - per_tok_g == 2 * d + 1 ? " = 2d+1 for β, " : " for β, ") << fmt(100 * (per_tok_k / per_tok_g - 1)) << "%), counts exactly proportional to T over "
       << "T = 256, 512, 1024: " << (linear ? "yes" : "NO") << ". ";
  }
  // Wall clock (informative): serial, double, d = 64; GDN and KLA timed alternately, best of 5 each.
  ev << "Wall clock (double reference, d = 64, GDN and KLA timed alternately, best of 5; informative, not the "
        "verdict): ";
  for (int T : {1024, 4096, 16384}) {
    const auto gdn = gdn_problem(DeltaCase{cfg.seed, T, 64, 64, KeyKind::gaussian, GateKind::moderate, false});
    double best[2] = {1e300, 1e300};
    for (int rep = 0; rep < 10; ++rep) {
      const bool kla = rep % 2 == 1;
      auto p = gdn;
      const auto t0 = std::chrono::steady_clock::now();
      if (kla) p.beta = dr::kla_beta<double>(p.k, gdn.beta, 1e-6);  // η = GDN's β
      dr::serial(p);
      const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / T;
      best[kla] = std::min(best[kla], ns);
    }
    ev << "T = " << T << ": GDN " << fmt(best[0]) << " ns/token, KLA " << fmt(best[1]) << " ns/token; ";
  }
  ev << "State: d_k × d_v = " << d * d << " scalars whatever T (no per-token storage). ";
  // larc's fused kernels, measured (informative: a property of larc's kernels, not of the paper's).
  const std::string measured = measured_time_ratios(read_h200_bench_report(cfg.h200_bench), "kla-fused-recurrent", "gdn-fused-recurrent");
  ev << (measured.empty() ? std::string("No measured KLA/GDN kernel timings (reports/h200/bench.json).")
                          : "Measured, " + measured + " (informative: larc's fused recurrent kernels, where KLA's β "
                                                      "needs a second reduction over K per token before the write).")
     << " The paper's GPU prefill latency (≈1220 ms at 131K) and decode throughput are of its own kernels: "
        "NOT-CHECKABLE-HERE.";
  ClaimOutcome out;
  out.verdict = linear ? Verdict::holds : Verdict::falsified;
  out.evidence = ev.str();
  if (!linear) out.counterexample = "operation counts were not proportional to T (see evidence)";
  return out;
}

}  // namespace

void register_kla_claims(std::vector<Claim>& out) {
  out.push_back({"KLA-C1", kPaper,
                 "Orthogonal projection: with η = 1, ε = 0, S_t is the closest state to S̃_{t−1} in Frobenius norm that "
                 "satisfies S_t^T k_t = v_t.",
                 2000, kla_c1});
  out.push_back({"KLA-C2", kPaper,
                 "Exact line search: with η = 1, ε = 0, β = 1/‖k‖² minimises the per-token loss ½‖S^T k − v‖² along the "
                 "update direction.",
                 2000, kla_c2});
  out.push_back({"KLA-C3", kPaper,
                 "Normalised gradient step: with η = 1, ε = 0, the update is an SGD step of size 1/‖k‖² on that loss.",
                 400, kla_c3});
  out.push_back({"KLA-C4", kPaper,
                 "Drop-in for GDN: same state shape, gates and recurrence; the only change in the chunkwise solver is "
                 "the diagonal B = Diag(β_1..β_C); chunked equals recurrent.",
                 1000, kla_c4});
  out.push_back({"KLA-C5", kPaper,
                 "Key-norm normalisation is what keeps the state stable: with a learned scalar alone (GDN's β = σ(·) on "
                 "unnormalised keys) stability degrades.",
                 5, kla_c5});
  out.push_back({"KLA-C6", kPaper, "O(n) time and memory; prefill cost equal to GDN's.", 1, kla_c6});
}

}  // namespace larc::props
