#include "larc/cases/rng.h"

#include <cmath>
#include <numbers>

namespace larc::cases {

std::uint64_t Rng::bits() { return splitmix::next(state_); }

double Rng::uniform() { return static_cast<double>(bits() >> 11) * 0x1.0p-53; }

double Rng::normal() {
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * std::numbers::pi * uniform());
}

double Rng::log_uniform(double lo, double hi) { return std::exp(uniform(std::log(lo), std::log(hi))); }

std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) {
  Rng r(seed ^ (stream * 0xd1b54a32d192ed03ull));
  r.bits();
  return r.bits();
}

}  // namespace larc::cases
