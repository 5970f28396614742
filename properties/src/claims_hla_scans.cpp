// HLA-C4, C5, C6, C8 (SPEC §5): the exclusive Blelloch scans with the paper's operators against the
// serial recurrences, and the operators' associativity on random segment summaries, exactly; the
// derived operators where the printed ones fail, checked the same way; 113-bit runs on long sequences.
#include "claims_hla_checks.h"
#include "claims_hla_support.h"
#include "larc/properties/hla_algebra.h"

namespace larc::props::hla_claims {
namespace {

// Searches random triples of summaries (from the case's seed and sizes) for a non-associative one.
template <class Random, class Combine>
std::optional<Counterexample<HlaCase>> associativity_search(const ClaimConfig& cfg, const HlaCaseLimits& lim, Random random,
                                                            const Combine& combine) {
  return search(lim, cfg, [&](const HlaCase& c) -> std::optional<std::string> {
    proofs::RationalSource src(c.seed, 9, 8);
    const auto a = random(src, c), b = random(src, c), e = random(src, c);
    const rational r = associativity_residual(a, b, e, combine);
    if (r == 0) return std::nullopt;
    std::string text = "(a ⊕ b) ⊕ c − a ⊕ (b ⊕ c) has max |entry| " + r.str() + " (exact)";
    if constexpr (requires { a.rho; }) text += ", segment decays ρ = " + a.rho.str() + ", " + b.rho.str() + ", " + e.rho.str();
    return text;
  });
}

std::string holds_or(const std::optional<Counterexample<HlaCase>>& cx, const std::string& holds) {
  return cx ? "FAILS: " + counterexample_text(*cx) : holds;
}

ClaimOutcome verdict_of(const std::optional<Counterexample<HlaCase>>& cx, const std::string& evidence) {
  ClaimOutcome out;
  out.verdict = cx ? Verdict::falsified : Verdict::holds;
  out.evidence = evidence;
  if (cx) out.counterexample = counterexample_text(*cx);
  return out;
}

hla::SecondOrderSummary<rational> second_summary(proofs::RationalSource& src, const HlaCase& c, bool decayed) {
  return random_second_summary(src, c.d, c.dv + 1, decayed);
}

}  // namespace

ClaimOutcome hla_c4(const ClaimConfig& cfg) {
  const HlaCaseLimits lim{1, 24, 4, 3, 10, 10, true};
  auto cx = search(lim, cfg, [](const HlaCase& c) -> std::optional<std::string> {
    const auto p = c.problem();
    if (auto d = exact_mismatch(hla::second_serial(p, hla::SecondOrder::masked_as_printed),
                                hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::plain), "masked serial vs scan"))
      return d;
    return exact_mismatch(hla::second_serial(p, hla::SecondOrder::unmasked),
                          hla::second_scan(p, hla::SecondOrder::unmasked, hla::ScanOperator::plain), "unmasked serial vs scan");
  });
  auto assoc = associativity_search(cfg, lim, [](auto& src, const HlaCase& c) { return second_summary(src, c, false); },
                                    [](const auto& a, const auto& b) { return hla::second_combine(a, b, hla::ScanOperator::plain); });
  double worst = 0;
  for (std::uint64_t s = 0; s < 2; ++s) {
    const auto p = long_problem(cfg.seed + s, 256, 8, 4, 1.0);
    worst = std::max(worst, relative_deviation(hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::plain).o,
                                               hla::second_serial(p, hla::SecondOrder::masked_as_printed).o));
  }
  const std::string evidence =
      "Exclusive Blelloch scan with ⊕ (inclusive states = exclusive prefix ⊕ the local token) vs State::step, masked and "
      "unmasked reads, normalised or not: " +
      holds_or(cx, "exact (residual 0) on " + trials_text(cfg) + " (T ≤ 24, d ≤ 4)") +
      ". Associativity of ⊕ on random rational summaries (S, [C|m], [G|h]): " +
      holds_or(assoc, "exact (residual 0) on " + std::to_string(cfg.trials) + " random triples") +
      ". At 113 bits, T = 256, d = 8, 2 seeds: largest relative deviation scan vs serial " + fmt(worst) + ".";
  return verdict_of(cx ? cx : assoc, evidence);
}

ClaimOutcome hla_c5(const ClaimConfig& cfg) {
  const HlaCaseLimits decayed{1, 24, 4, 3, 1, 9, true};
  // The claim: the scan with the printed ⊕_γ reproduces the printed decayed recurrence.
  auto cx = search(decayed, cfg, [](const HlaCase& c) -> std::optional<std::string> {
    const auto p = c.problem();
    return exact_mismatch(hla::second_serial(p, hla::SecondOrder::masked_as_printed),
                          hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::decayed_as_printed),
                          "printed decayed serial (predicted) vs scan with the printed ⊕_γ (computed)");
  });
  auto printed_assoc = associativity_search(
      cfg, decayed, [](auto& src, const HlaCase& c) { return second_summary(src, c, true); },
      [](const auto& a, const auto& b) { return hla::second_combine(a, b, hla::ScanOperator::decayed_as_printed); });
  auto printed_vs_target = search(decayed, cfg, [](const HlaCase& c) -> std::optional<std::string> {
    const auto p = c.problem();
    return exact_mismatch(hla::second_materialized(p, hla::SecondOrder::masked),
                          hla::second_serial(p, hla::SecondOrder::masked_as_printed),
                          "((A_γ Aᵀ) ⊙ Γ) V (predicted) vs the printed decayed serial (computed)");
  });
  // The derived statement, checked the same way.
  auto derived = search(decayed, cfg, [](const HlaCase& c) -> std::optional<std::string> {
    const auto p = c.problem();
    const auto serial = hla::second_serial(p, hla::SecondOrder::masked);
    if (auto d = exact_mismatch(hla::second_materialized(p, hla::SecondOrder::masked), serial, "target vs derived serial")) return d;
    return exact_mismatch(serial, hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::decayed),
                          "derived serial vs scan with the derived ⊕_γ");
  });
  auto derived_assoc = associativity_search(
      cfg, decayed, [](auto& src, const HlaCase& c) { return second_summary(src, c, true); },
      [](const auto& a, const auto& b) { return hla::second_combine(a, b, hla::ScanOperator::decayed); });
  double printed_scan = 0, printed_target = 0, derived_dev = 0;
  for (std::uint64_t s = 0; s < 2; ++s) {
    auto p = long_problem(cfg.seed + s, 256, 8, 4, 0.97);
    const auto printed_serial = hla::second_serial(p, hla::SecondOrder::masked_as_printed).o;
    const auto target = hla::second_materialized(p, hla::SecondOrder::masked).o;
    printed_scan = std::max(printed_scan, relative_deviation(
        hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::decayed_as_printed).o, printed_serial));
    printed_target = std::max(printed_target, relative_deviation(printed_serial, target));
    derived_dev = std::max(derived_dev, std::max(relative_deviation(hla::second_serial(p, hla::SecondOrder::masked).o, target),
        relative_deviation(hla::second_scan(p, hla::SecondOrder::masked, hla::ScanOperator::decayed).o, target)));
  }
  const std::string evidence =
      "γ ∈ {1/10, …, 9/10}, T ≤ 24, d ≤ 4, normalised or not. As printed — scan with ⊕_γ vs the decayed recurrence "
      "(every summary ×γ, G ← γG + k kᵀC_{t−1}): " + holds_or(cx, "exact") +
      ". Printed ⊕_γ associative: " + holds_or(printed_assoc, "exact") +
      ". Printed decayed recurrence vs the masked target with decay ((A_γ Aᵀ) ⊙ Γ) V — the pairs i ≤ j ≤ t weighted "
      "γ^{t−i}γ^{t−j}, the weights S^K_t C_t itself gives them: " + holds_or(printed_vs_target, "exact") +
      ". Derived statement: with G ← γ²G + γ k kᵀC_{t−1} (h alike) the recurrence equals the target, and the scan with "
      "⊕_γ' = (ρ_B S_A+S_B, ρ_B C_A+C_B, ρ_B² G_A+G_B+S_B(ρ_B C_A), ρ_Aρ_B) reproduces it: " +
      holds_or(derived, "exact (residual 0) on " + trials_text(cfg)) + "; ⊕_γ' associative: " +
      holds_or(derived_assoc, "exact (residual 0) on " + std::to_string(cfg.trials) + " random triples") +
      ". At 113 bits, T = 256, d = 8, γ = 0.97, 2 seeds: printed scan vs printed serial " + fmt(printed_scan) +
      ", printed serial vs target " + fmt(printed_target) + ", derived serial and scan vs target " + fmt(derived_dev) +
      " (relative).";
  return verdict_of(cx ? cx : (printed_assoc ? printed_assoc : printed_vs_target), evidence);
}

ClaimOutcome hla_c6(const ClaimConfig& cfg) {
  const HlaCaseLimits any_decay{1, 24, 4, 3, 1, 10, true};
  // ((A_γ A_γ) ⊙ L) W written out here, apart from the reference's materialised form.
  auto target = [](const hla::Problem<rational>& p) {
    const Mat<rational> a = hla::decay_matrix(p.T(), p.opt.gamma).cwiseProduct(Mat<rational>(p.q * p.k.transpose()));
    return hla::finish_rows(p, Mat<rational>(hla::lower<rational>(a * a) * hla::values_of(p)));
  };
  auto streaming = search(any_decay, cfg, [&](const HlaCase& c) -> std::optional<std::string> {
    const auto p = c.problem();
    return exact_mismatch(target(p), hla::ahla_serial(p), "((A_γ A_γ) ⊙ L) V (predicted) vs AHLA streaming (computed)");
  });
  auto cx = search(any_decay, cfg, [](const HlaCase& c) -> std::optional<std::string> {
    const auto p = c.problem();
    const auto serial = hla::ahla_serial(p);
    if (p.opt.gamma == 1)
      if (auto d = exact_mismatch(serial, hla::ahla_scan(p, hla::ScanOperator::plain), "serial vs scan with ⊕")) return d;
    return exact_mismatch(serial, hla::ahla_scan(p, hla::ScanOperator::decayed_as_printed),
                          "serial (predicted) vs scan with the printed ⊕_γ (computed)");
  });
  auto printed_assoc = associativity_search(
      cfg, any_decay, [](auto& src, const HlaCase& c) { return random_ahla_summary(src, c.d, c.dv + 1, true); },
      [](const auto& a, const auto& b) { return hla::ahla_combine(a, b, hla::ScanOperator::decayed_as_printed); });
  auto derived = search(any_decay, cfg, [](const HlaCase& c) -> std::optional<std::string> {
    const auto p = c.problem();
    return exact_mismatch(hla::ahla_serial(p), hla::ahla_scan(p, hla::ScanOperator::decayed), "serial vs derived scan");
  });
  auto derived_assoc = associativity_search(
      cfg, any_decay, [](auto& src, const HlaCase& c) { return random_ahla_summary(src, c.d, c.dv + 1, true); },
      [](const auto& a, const auto& b) { return hla::ahla_combine(a, b, hla::ScanOperator::decayed); });
  double printed_dev = 0, derived_dev = 0;
  for (std::uint64_t s = 0; s < 2; ++s) {
    const auto p = long_problem(cfg.seed + s, 256, 8, 4, 0.97);
    const auto serial = hla::ahla_serial(p).o;
    printed_dev = std::max(printed_dev, relative_deviation(hla::ahla_scan(p, hla::ScanOperator::decayed_as_printed).o, serial));
    derived_dev = std::max(derived_dev, std::max(relative_deviation(hla::ahla_scan(p, hla::ScanOperator::decayed).o, serial),
                                                 relative_deviation(hla::ahla_materialized(p).o, serial)));
  }
  const std::string evidence =
      "γ ∈ {1/10, …, 1}, T ≤ 24, d ≤ 4, normalised or not. Streaming (every summary ×γ, E ← γE + k qᵀP_t) vs "
      "((A_γ A_γ) ⊙ L) V, A_γ = Γ ⊙ QKᵀ (γ = 1: ((A A) ⊙ L) V): " + holds_or(streaming, "exact (residual 0) on " + trials_text(cfg)) +
      ". Scans vs serial (⊕ at γ = 1, printed ⊕_γ at every γ): " + holds_or(cx, "exact") +
      ". Printed ⊕_γ associative: " + holds_or(printed_assoc, "exact") +
      ". Derived: the cross pairs (j in A, i in B) carry γ^{t−j} whatever i, so R must be combined undecayed, "
      "(R_A+R_B, ρ_B P_A+P_B, ρ_B E_A+E_B+R_B(ρ_B P_A), ρ_Aρ_B); the printed operator agrees with it when B is one token, "
      "which is why a left fold cannot tell them apart and the Blelloch tree (multi-token right segments) can. Derived scan "
      "vs serial: " + holds_or(derived, "exact (residual 0) on " + trials_text(cfg)) + "; associative: " +
      holds_or(derived_assoc, "exact on " + std::to_string(cfg.trials) + " random triples") +
      ". At 113 bits, T = 256, d = 8, γ = 0.97, 2 seeds: printed scan vs serial " + fmt(printed_dev) +
      ", derived scan and materialised vs serial " + fmt(derived_dev) + " (relative).";
  return verdict_of(streaming ? streaming : (cx ? cx : printed_assoc), evidence);
}

ClaimOutcome hla_c8(const ClaimConfig& cfg) {
  const HlaCaseLimits lim{1, 20, 3, 2, 10, 10, true};
  auto cx = search(lim, cfg, [](const HlaCase& c) -> std::optional<std::string> {
    const auto p = c.problem();
    if (auto d = exact_mismatch(hla::third_serial(p, hla::ThirdOrder::masked_as_printed),
                                hla::third_scan(p, hla::ThirdOrder::masked_as_printed), "printed masked serial vs scan"))
      return d;
    return exact_mismatch(hla::third_serial(p, hla::ThirdOrder::unmasked), hla::third_scan(p, hla::ThirdOrder::unmasked),
                          "unmasked serial vs scan");
  });
  auto assoc = associativity_search(
      cfg, lim, [](auto& src, const HlaCase& c) { return random_third_printed_summary(src, c.d, c.dv + 1); },
      hla::third_printed_combine<rational>);
  auto derived = search(lim, cfg, [](const HlaCase& c) -> std::optional<std::string> {
    const auto p = c.problem();
    return exact_mismatch(hla::third_serial(p, hla::ThirdOrder::masked), hla::third_scan(p, hla::ThirdOrder::masked),
                          "derived serial vs derived scan");
  });
  double worst = 0;
  for (std::uint64_t s = 0; s < 2; ++s) {
    const auto p = long_problem(cfg.seed + s, 128, 6, 3, 1.0);
    worst = std::max(worst, relative_deviation(hla::third_scan(p, hla::ThirdOrder::masked_as_printed).o,
                                               hla::third_serial(p, hla::ThirdOrder::masked_as_printed).o));
  }
  const std::string evidence =
      "Scan with the paper's segment state (S^K, S^Q, [P|m^K], F, R^{QP}, U^{KQ}, M[·] as a (d·d_w)×d² matrix) vs the "
      "serial G1..G3 recurrence, and the unmasked read: " + holds_or(cx, "exact (residual 0) on " + trials_text(cfg) + " (T ≤ 20, d ≤ 3)") +
      ". Operator associative on random summaries: " + holds_or(assoc, "exact on " + std::to_string(cfg.trials) + " random triples") +
      ". (The scan reproduces the printed recurrence, which is not the masked target: see HLA-C7.) Derived (X, Y) scan for "
      "the causal target vs its serial: " + holds_or(derived, "exact") +
      ". At 113 bits, T = 128, d = 6, 2 seeds: largest relative deviation scan vs serial " + fmt(worst) + ".";
  return verdict_of(cx ? cx : assoc, evidence);
}

}  // namespace larc::props::hla_claims
