// The memory-level experiments of the VLA paper (larc/properties/vla_memory.h: declared inputs).
#include "larc/properties/vla_memory.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "larc/properties/generators.h"
#include "larc/reference/delta_rule.h"
#include "larc/reference/linear_attention.h"
#include "larc/reference/vla.h"

namespace larc::props::vla_memory {
namespace {

namespace la = ref::linear_attention;
namespace dr = ref::delta_rule;
namespace vla = ref::vla;

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

}  // namespace

std::vector<double> state_norms(Mech m, std::uint64_t seed, int trial, double value_mean, int T) {
  if (m == kSoftmax) throw std::invalid_argument("state_norms: softmax attention keeps no state");
  const std::uint64_t trial_seed = seed * 1000003 + static_cast<std::uint64_t>(trial);
  Rng rng(trial_seed);
  Memory mem(m, trial_seed ^ 0x9a7e5ull, authors_w_u(trial_seed));
  std::vector<double> norms;
  norms.reserve(static_cast<std::size_t>(T));
  for (int t = 1; t <= T; ++t) {
    mem.write(clipped_gaussian(rng, kDim, 1), clipped_gaussian(rng, kDim, 1, value_mean));
    norms.push_back(mem.state_norm());
  }
  return norms;
}

int recalled(Mech m, std::uint64_t trial_seed, int n, int T) {
  Rng rng(trial_seed);
  const Mat<double> keys = clipped_gaussian(rng, n, kDim), values = clipped_gaussian(rng, n, kDim);
  Memory mem(m, trial_seed ^ 0x9a7e5ull, authors_w_u(trial_seed));
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

}  // namespace larc::props::vla_memory
