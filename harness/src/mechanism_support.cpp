#include "mechanism_support.h"

#include <cmath>
#include <numbers>

namespace larc::harness::detail {

std::uint64_t CaseRng::bits() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double CaseRng::uniform() { return static_cast<double>(bits() >> 11) * 0x1.0p-53; }

double CaseRng::normal() {
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * uniform());
}

double CaseRng::log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }

namespace {
constexpr std::uint64_t kInitialStateStream = 0x50;  // mix_seed stream of the initial state
}  // namespace

TensorSpec initial_state_spec() {
  return {.name = "initial_state", .dims = "BHKV", .meaning = "the state before the first token (zero when absent)",
          .always_fp32 = true, .optional = true};
}

void add_initial_state(ValueMap& in, const Shape& s, std::uint64_t seed, const KnobValues& knobs) {
  const InitialState choice = initial_state_of(knobs);
  if (choice == InitialState::none) return;
  CaseRng rng(mix_seed(seed, kInitialStateStream));
  in["initial_state"] = choice == InitialState::zero ? ref::Tensor<double>({s.B, s.H, s.K, s.V})
                                                     : normal_tensor(rng, {s.B, s.H, s.K, s.V}, 1.0);
}

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) {
  CaseRng r(seed ^ (stream * 0xd1b54a32d192ed03ull));
  r.bits();
  return r.bits();
}

ref::Tensor<double> normal_tensor(CaseRng& rng, std::vector<std::int64_t> shape, double sigma) {
  ref::Tensor<double> t(std::move(shape));
  for (double& x : t.data) x = sigma * rng.normal();
  return t;
}

ref::Tensor<double> uniform_tensor(CaseRng& rng, std::vector<std::int64_t> shape, double lo, double hi) {
  ref::Tensor<double> t(std::move(shape));
  for (double& x : t.data) x = rng.uniform(lo, hi);
  return t;
}

namespace {
std::vector<double> random_unit(CaseRng& rng, std::int64_t d) {
  std::vector<double> u(static_cast<std::size_t>(d));
  double n2 = 0;
  while (n2 == 0) {
    n2 = 0;
    for (double& x : u) {
      x = rng.normal();
      n2 += x * x;
    }
  }
  for (double& x : u) x /= std::sqrt(n2);
  return u;
}
}  // namespace

ref::Tensor<double> keys_tensor(CaseRng& rng, const Shape& s, double collinearity, double norm) {
  ref::Tensor<double> k({s.B, s.T, s.H, s.K});
  for (std::int64_t b = 0; b < s.B; ++b) {
    for (std::int64_t h = 0; h < s.H; ++h) {
      const std::vector<double> u = random_unit(rng, s.K);
      for (std::int64_t t = 0; t < s.T; ++t) {
        std::vector<double> z = random_unit(rng, s.K);
        double n2 = 0;
        for (std::int64_t d = 0; d < s.K; ++d) {
          z[d] = (1 - collinearity) * z[d] + collinearity * u[d];
          n2 += z[d] * z[d];
        }
        if (n2 == 0) z = u, n2 = 1;  // z = −u at c = 1/2: measure zero, never divide by it
        for (std::int64_t d = 0; d < s.K; ++d)
          k.data[((b * s.T + t) * s.H + h) * s.K + d] = norm * z[d] / std::sqrt(n2);
      }
    }
  }
  return k;
}

}  // namespace larc::harness::detail
