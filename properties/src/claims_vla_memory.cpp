// VLA-C3, C7, C8 (SPEC §1): memory-level experiments on declared random inputs, VLA beside its
// baselines LA (linear_attention.h), DeltaNet, GDN, KLA (delta_rule.h) and softmax attention. The paper
// measured inside trained models; these runs measure the memories themselves, in double.
//
// Declared inputs (every mechanism sees the same keys and values; its gates come from a separate stream):
// keys, queries, values N(0, 1) entries clipped to [−4, 4] (bounded inputs), d_k = d_v = d_h = 32.
//   LA       φ = ELU+1, ratio read (ε = 1e-6)
//   DeltaNet keys L2-normalised, β_t = σ(x_t), x_t ~ N(0, 1); read with the normalised query
//   GDN      as DeltaNet, α_t = σ(y_t), y_t ~ N(3, 1) (mean α ≈ 0.93)
//   KLA      raw keys, β_t = η_t/(‖k_t‖² + 1e-6), η_t = σ(x_t), α_t as GDN; read with the normalised query
//   VLA      λ0 = 1, the authors' u_t = norm(W_u k_t)/√d (W_u ~ N(0, 1/d)), φ = ELU+1, ratio read, nudge off
//   softmax  o = Σ_j softmax(q·k_j/√d) v_j over every token written
//   VLA(φ = identity)  VLA as above with the identity feature map (k̂ = k/‖k‖, like DeltaNet's keys); recall only
#include <algorithm>
#include <array>
#include <sstream>

#include "claims_vla_common.h"
#include "larc/reference/delta_rule.h"
#include "larc/reference/linear_attention.h"

namespace larc::props::vla_claims {
namespace {

namespace la = ref::linear_attention;
namespace dr = ref::delta_rule;

constexpr int kDim = 32;
enum Mech { kLA, kDeltaNet, kGDN, kKLA, kVLA, kSoftmax, kVLAIdentity, kMechs };
constexpr std::array<const char*, kMechs> kNames = {"LA", "DeltaNet", "GDN", "KLA", "VLA", "softmax", "VLA(φ = identity)"};

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

Mat<double> clipped_gaussian(Rng& rng, Eigen::Index rows, Eigen::Index cols, double mean = 0) {
  return gaussian(rng, rows, cols, 1.0).unaryExpr([mean](double x) { return mean + std::clamp(x, -4.0, 4.0); });
}

// One mechanism's memory at the memory level: write (k, v), read with q, ‖state‖_F.
class Memory {
 public:
  Memory(Mech mech, std::uint64_t gate_seed, const Mat<double>& w_u)
      : mech_(mech), gates_(gate_seed), w_u_(w_u), la_(la_options(), {Mat<double>::Zero(kDim, kDim), Vec<double>::Zero(kDim)}),
        delta_(kDim, kDim), vla_opt_(vla_options(mech)), vla_(vla_opt_, kDim, kDim) {}

  void write(const Vec<double>& k, const Vec<double>& v) {
    const double x = gates_.normal(), y = 3 + gates_.normal();
    switch (mech_) {
      case kLA: la_.step(Vec<double>::Zero(kDim), k, v); break;
      case kDeltaNet: delta_.step(Vec<double>::Zero(kDim), k.normalized(), v, 1.0, sigmoid(x), 1.0); break;
      case kGDN: delta_.step(Vec<double>::Zero(kDim), k.normalized(), v, sigmoid(y), sigmoid(x), 1.0); break;
      case kKLA: delta_.step(Vec<double>::Zero(kDim), k, v, sigmoid(y), sigmoid(x) / (k.squaredNorm() + 1e-6), 1.0); break;
      case kVLA:
      case kVLAIdentity: {
        const Mat<double> u = vla::authors_penalty_directions<double>(Mat<double>(k.transpose()), w_u_);
        vla_.step(Vec<double>::Zero(kDim), k, v, u.row(0).transpose());
        break;
      }
      case kSoftmax:
        keys_.push_back(k), values_.push_back(v);
        break;
      case kMechs: break;
    }
  }

  Vec<double> read(const Vec<double>& q) const {
    switch (mech_) {
      case kLA: return la::read(la_options(), la_.memory(), la::feature(la::FeatureMap::elu_plus_one, q));
      case kDeltaNet:
      case kGDN:
      case kKLA: return delta_.matrix().transpose() * q.normalized();
      case kVLA:
      case kVLAIdentity: {
        const auto& m = vla_.memory();
        return vla::read(vla_opt_, m.s, m.zeta, vla::feature(vla_opt_.feature, q));
      }
      case kSoftmax: {
        std::vector<double> logits;
        double top = -1e300;
        for (const auto& k : keys_) logits.push_back(q.dot(k) / std::sqrt(double(kDim))), top = std::max(top, logits.back());
        Vec<double> o = Vec<double>::Zero(kDim);
        double z = 0;
        for (std::size_t j = 0; j < keys_.size(); ++j) z += std::exp(logits[j] - top), o += std::exp(logits[j] - top) * values_[j];
        return o / z;
      }
      case kMechs: break;
    }
    return {};
  }

  double state_norm() const {
    switch (mech_) {
      case kLA: return la_.memory().s.norm();
      case kVLA:
      case kVLAIdentity: return vla_.memory().s.norm();
      case kSoftmax: return 0;
      default: return delta_.matrix().norm();
    }
  }

 private:
  static la::Options<double> la_options() { return {la::FeatureMap::elu_plus_one, true, 1e-6, 1.0}; }
  static vla::Options<double> vla_options(Mech m) {
    vla::Options<double> o;
    if (m == kVLAIdentity) o.feature = vla::FeatureMap::identity;
    return o;
  }

  Mech mech_;
  Rng gates_;
  Mat<double> w_u_;
  la::State<double> la_;
  dr::State<double> delta_;
  vla::Options<double> vla_opt_;
  vla::State<double> vla_;
  std::vector<Vec<double>> keys_, values_;
};

Mat<double> authors_w_u(std::uint64_t seed) {
  Rng rng(seed ^ 0x77755ull);
  return gaussian(rng, kDim, kDim, 1 / std::sqrt(double(kDim)));
}

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
    const std::uint64_t trial_seed = seed * 1000003 + static_cast<std::uint64_t>(s);
    for (int m = 0; m < kSoftmax; ++m) {
      Rng rng(trial_seed);
      Memory mem(Mech(m), trial_seed ^ 0x9a7e5ull, authors_w_u(trial_seed));
      std::size_t next = 0;
      for (int t = 1; t <= kCheckpoints.back(); ++t) {
        mem.write(clipped_gaussian(rng, kDim, 1), clipped_gaussian(rng, kDim, 1, value_mean));
        if (t == kCheckpoints[next]) {
          const double n = mem.state_norm();
          c.mean[m][next] += n / trials;
          c.worst[m][next] = std::max(c.worst[m][next], n);
          ++next;
        }
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

namespace {

// Writes n pairs at evenly spread positions of a sequence of T tokens (fillers elsewhere), reads with
// every pair's key; returns the number of reads whose output is nearest (cosine) to the pair's value
// among the n pair values.
int recalled(Mech m, std::uint64_t seed, int n, int T) {
  Rng rng(seed);
  const Mat<double> keys = clipped_gaussian(rng, n, kDim), values = clipped_gaussian(rng, n, kDim);
  Memory mem(m, seed ^ 0x9a7e5ull, authors_w_u(seed));
  int next_pair = 0;
  for (int t = 0; t < T; ++t) {
    const bool pair_here = next_pair < n && t == static_cast<int>(static_cast<long>(next_pair) * T / n);
    if (pair_here) {
      mem.write(keys.row(next_pair).transpose(), values.row(next_pair).transpose());
      ++next_pair;
    } else {
      mem.write(clipped_gaussian(rng, kDim, 1), clipped_gaussian(rng, kDim, 1));
    }
  }
  int hits = 0;
  for (int i = 0; i < n; ++i) {
    const Vec<double> o = mem.read(keys.row(i).transpose());
    int best = 0;
    double best_cos = -2;
    for (int j = 0; j < n; ++j) {
      const double c = o.dot(values.row(j).transpose()) / (o.norm() * values.row(j).norm() + 1e-300);
      if (c > best_cos) best_cos = c, best = j;
    }
    hits += best == i;
  }
  return hits;
}

constexpr std::array<int, 6> kPairs = {8, 16, 24, 32, 48, 64};
constexpr std::array<int, 7> kLengths = {8, 16, 32, 64, 128, 256, 512};

}  // namespace

ClaimOutcome vla_c8(const ClaimConfig& cfg) {
  std::array<std::array<double, kPairs.size()>, kMechs> by_pairs{};
  std::array<std::array<double, kLengths.size()>, kMechs> by_length{};
  std::string vla_miss;  // first trial where VLA missed at n = 24 or at n = 8 with fillers
  for (int s = 0; s < cfg.trials; ++s) {
    const std::uint64_t seed = cfg.seed * 7919 + static_cast<std::uint64_t>(s);
    for (int m = 0; m < kMechs; ++m) {
      for (std::size_t i = 0; i < kPairs.size(); ++i) {
        const int hits = recalled(Mech(m), seed, kPairs[i], kPairs[i]);
        by_pairs[m][i] += double(hits) / kPairs[i] / cfg.trials;
        if (m == kVLA && kPairs[i] == 24 && hits < 24 && vla_miss.empty())
          vla_miss = "n = 24 pairs, d_h = 32, no fillers, trial seed " + std::to_string(seed) + ": VLA recalled " +
                     std::to_string(hits) + "/24 (predicted 24/24)";
      }
      for (std::size_t i = 0; i < kLengths.size(); ++i) {
        const int hits = recalled(Mech(m), seed + 1, 8, kLengths[i]);
        by_length[m][i] += double(hits) / 8 / cfg.trials;
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
