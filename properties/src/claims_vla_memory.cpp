// VLA-C3, C7, C8 (SPEC §1): memory-level experiments on declared random inputs, VLA beside its
// baselines LA, DeltaNet, GDN, KLA and softmax attention (larc/properties/vla_memory.h: the memories,
// the declared inputs and the experiments, shared with `larc report`). The paper measured inside
// trained models; these runs measure the memories themselves, in double.
#include <algorithm>
#include <array>
#include <sstream>

#include "claims_vla_common.h"
#include "larc/properties/vla_memory.h"

namespace larc::props::vla_claims {
namespace {

using namespace vla_memory;

// ---- C3 / C7: state norms along T ---------------------------------------------------------------------

constexpr std::array<int, 6> kCheckpoints = {10, 100, 1000, 2000, 5000, 10000};

// norms[mech][checkpoint], mean over trials; values N(value_mean, 1) entries (clipped).
struct NormCurve {
  std::array<std::array<double, kCheckpoints.size()>, kMechs> mean{};
  std::array<std::array<double, kCheckpoints.size()>, kMechs> worst{};
};

NormCurve norm_curve(std::uint64_t seed, int trials, double value_mean) {
  NormCurve c;
  for (int s = 0; s < trials; ++s) {
    for (int m = 0; m < kSoftmax; ++m) {
      const std::vector<double> norms = state_norms(Mech(m), seed, s, value_mean, kCheckpoints.back());
      for (std::size_t i = 0; i < kCheckpoints.size(); ++i) {
        const double n = norms[static_cast<std::size_t>(kCheckpoints[i] - 1)];
        c.mean[m][i] += n / trials;
        c.worst[m][i] = std::max(c.worst[m][i], n);
      }
    }
  }
  return c;
}

std::string curve_text(const NormCurve& c) {
  std::ostringstream s;
  for (int m = 0; m < kSoftmax; ++m) {
    s << kNames[m] << " ";
    for (std::size_t i = 0; i < kCheckpoints.size(); ++i) s << (i ? ", " : "") << fmt(c.mean[m][i]);
    s << "; ";
  }
  return s.str();
}

std::size_t checkpoint(int T) { return static_cast<std::size_t>(std::find(kCheckpoints.begin(), kCheckpoints.end(), T) - kCheckpoints.begin()); }

// Plateau: the mean norm at T = 10,000 is within 25% of its value at T = 1000.
bool plateaus(const NormCurve& c, Mech m) { return c.mean[m][checkpoint(10000)] <= 1.25 * c.mean[m][checkpoint(1000)]; }
double growth_exponent(const NormCurve& c, Mech m) {
  return std::log10(c.mean[m][checkpoint(10000)] / c.mean[m][checkpoint(1000)]);
}

std::string full_command(const char* id) { return std::string("larc claims --only ") + id + " --trials 20"; }

}  // namespace

ClaimOutcome vla_c3(const ClaimConfig& cfg) {
  const NormCurve zero = norm_curve(cfg.seed, cfg.trials, 0.0), shifted = norm_curve(cfg.seed, cfg.trials, 1.0);
  const bool vla_bounded = plateaus(zero, kVLA) && plateaus(shifted, kVLA);
  const bool la_grows = growth_exponent(zero, kLA) > 0.3 && growth_exponent(shifted, kLA) > 0.3;
  std::ostringstream ev;
  ev << "Memory level, d_h = 32, declared inputs (bounded: N(0,1) clipped to [−4, 4]; see claims_vla_memory.cpp), "
     << cfg.trials << " trials (full experiment: `" << full_command("VLA-C3") << "`). Mean ‖S_T‖_F at T = 10, 100, 1000, "
        "2000, 5000, 10000 with zero-mean values: " << curve_text(zero) << "with values of mean 1: " << curve_text(shifted)
     << "VLA's norm at T = 10,000 over T = 1000: " << fmt(zero.mean[kVLA][checkpoint(10000)] / zero.mean[kVLA][checkpoint(1000)])
     << " (zero-mean values), " << fmt(shifted.mean[kVLA][checkpoint(10000)] / shifted.mean[kVLA][checkpoint(1000)])
     << " (mean 1); LA grows like T^" << fmt(growth_exponent(zero, kLA)) << " (zero-mean values: a random walk, √T) and T^"
     << fmt(growth_exponent(shifted, kLA)) << " (mean 1: a drift, T), consistent with O(T).";
  ClaimOutcome out;
  out.evidence = ev.str();
  if (vla_bounded && la_grows) {
    out.verdict = Verdict::holds;
  } else {
    out.verdict = Verdict::falsified;
    out.counterexample = !vla_bounded ? "VLA's mean ‖S_T‖_F keeps growing from T = 1000 to 10,000 (more than 25%; see evidence)"
                                      : "LA's ‖S_T‖_F does not grow with T (see evidence)";
  }
  return out;
}

ClaimOutcome vla_c7(const ClaimConfig& cfg) {
  const NormCurve c = norm_curve(cfg.seed, cfg.trials, 0.0);
  const std::size_t i = checkpoint(1000);
  const double la_norm = c.mean[kLA][i], vla_norm = c.mean[kVLA][i];
  const bool shape = vla_norm < la_norm && plateaus(c, kDeltaNet);
  std::ostringstream ev;
  ev << "Paper (inside a trained model, T = 1000): LA ≈ 1600, VLA < 15 (109× smaller), DeltaNet bounded. larc (memory level, "
        "d_h = 32, zero-mean declared inputs, " << cfg.trials << " trials; full experiment: `" << full_command("VLA-C7")
     << "`), mean ‖S_1000‖_F: LA " << fmt(la_norm) << ", DeltaNet " << fmt(c.mean[kDeltaNet][i]) << ", GDN "
     << fmt(c.mean[kGDN][i]) << ", KLA " << fmt(c.mean[kKLA][i]) << ", VLA " << fmt(vla_norm) << " (largest over trials "
     << fmt(c.worst[kVLA][i]) << "); LA/VLA = " << fmt(la_norm / vla_norm) << "×; VLA < 15: " << (c.worst[kVLA][i] < 15 ? "yes" : "no")
     << "; DeltaNet bounded (T = 10,000 within 25% of T = 1000): " << (plateaus(c, kDeltaNet) ? "yes" : "no")
     << ". The absolute figures depend on the trained projections and input scale, which the suite does not have.";
  ClaimOutcome out;
  out.evidence = ev.str();
  if (shape) {
    out.verdict = Verdict::not_checkable_here;
    out.evidence = "The figures need the authors' trained model; the memory-level shape is checked (VLA below LA, DeltaNet "
                   "bounded). " + out.evidence;
  } else {
    out.verdict = Verdict::falsified;
    out.counterexample = "at the memory level VLA's norm is not below LA's or DeltaNet's is not bounded (see evidence)";
  }
  return out;
}

// ---- C8: recall -------------------------------------------------------------------------------------

ClaimOutcome vla_c8(const ClaimConfig& cfg) {
  std::array<std::array<double, kPairs.size()>, kMechs> by_pairs{};
  std::array<std::array<double, kLengths.size()>, kMechs> by_length{};
  std::string vla_miss;  // first trial where VLA missed at n = 24 or at n = 8 with fillers
  for (int s = 0; s < cfg.trials; ++s) {
    const std::uint64_t seed = recall_trial_seed(cfg.seed, s);
    for (int m = 0; m < kMechs; ++m) {
      for (std::size_t i = 0; i < kPairs.size(); ++i) {
        const int hits = recalled_without_fillers(Mech(m), cfg.seed, s, kPairs[i]);
        by_pairs[m][i] += double(hits) / kPairs[i] / cfg.trials;
        if (m == kVLA && kPairs[i] == 24 && hits < 24 && vla_miss.empty())
          vla_miss = "n = 24 pairs, d_h = 32, no fillers, trial seed " + std::to_string(seed) + ": VLA recalled " +
                     std::to_string(hits) + "/24 (predicted 24/24)";
      }
      for (std::size_t i = 0; i < kLengths.size(); ++i) {
        const int hits = recalled_among_fillers(Mech(m), cfg.seed, s, kLengths[i]);
        by_length[m][i] += double(hits) / kPairsAmongFillers / cfg.trials;
        if (m == kVLA && hits < 8 && vla_miss.empty())
          vla_miss = "n = 8 pairs in T = " + std::to_string(kLengths[i]) + " tokens, trial seed " + std::to_string(seed + 1) +
                     ": VLA recalled " + std::to_string(hits) + "/8 (predicted 8/8)";
      }
    }
  }
  const bool graceful = by_pairs[kVLA][4] >= by_pairs[kLA][4] && by_pairs[kVLA][5] >= by_pairs[kLA][5];
  std::ostringstream ev;
  ev << "Paper (trained two-layer models, MQAR): n = 24, d_h = 32: VLA 1.000, DeltaNet 0.010, LA 0.074, softmax 0.26; n = 8 "
        "up to T = 512: VLA 1.000. larc (memory level: write n key/value pairs, read with each key, a hit when the output "
        "is nearest in cosine to its own value among the n; declared inputs of claims_vla_memory.cpp, d_h = 32, "
     << cfg.trials << " trials; full experiment: `" << full_command("VLA-C8") << "`). Accuracy for n = 8, 16, 24, 32, 48, 64 "
        "(no fillers): ";
  for (int m = 0; m < kMechs; ++m) {
    ev << kNames[m] << " ";
    for (std::size_t i = 0; i < kPairs.size(); ++i) ev << (i ? ", " : "") << fmt(by_pairs[m][i]);
    ev << "; ";
  }
  ev << "n = 8 in T = 8, 16, 32, 64, 128, 256, 512 (random fillers between the pairs): ";
  for (int m = 0; m < kMechs; ++m) {
    ev << kNames[m] << " ";
    for (std::size_t i = 0; i < kLengths.size(); ++i) ev << (i ? ", " : "") << fmt(by_length[m][i]);
    ev << "; ";
  }
  ev << "n > d_h: VLA " << (graceful ? "≥" : "<") << " LA at n = 48 and 64. With φ = ELU+1 every feature vector lies in "
        "the positive orthant and random keys' k̂ are strongly aligned, so each write overwrites the common direction; the "
        "identity-φ row shows the same recurrence on nearly orthogonal normalised keys.";
  ClaimOutcome out;
  out.evidence = ev.str();
  if (!vla_miss.empty()) {
    out.verdict = Verdict::falsified;
    out.counterexample = vla_miss + " (double, memory level).";
  } else if (!graceful) {
    out.verdict = Verdict::falsified;
    out.counterexample = "n > d_h: VLA recalls less than LA (see evidence).";
  } else {
    out.verdict = Verdict::holds;
  }
  return out;
}

}  // namespace larc::props::vla_claims
