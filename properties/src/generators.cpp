#include "larc/properties/generators.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace larc::props {

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = uniform();
  while (u1 <= 0) u1 = uniform();
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2 * std::numbers::pi * u2);
  has_spare_ = true;
  return r * std::cos(2 * std::numbers::pi * u2);
}

std::string DeltaCase::describe() const {
  return "DeltaCase{seed=" + std::to_string(seed) + ", T=" + std::to_string(T) + ", dk=" + std::to_string(dk) +
         ", dv=" + std::to_string(dv) + ", keys=" + key_kind_name(keys) + ", gates=" + gate_kind_name(gates) +
         ", initial_state=" + (with_initial_state ? "yes" : "no") + "}";
}

ref::delta_rule::Problem<double> gdn_problem(const DeltaCase& c) {
  Rng rng(c.seed);
  ref::delta_rule::Problem<double> p;
  p.q = gaussian(rng, c.T, c.dk, 1.0);
  p.k = keys(rng, c.keys, c.T, c.dk);
  p.v = gaussian(rng, c.T, c.dv, 1.0);
  p.alpha = ref::delta_rule::decays_from_log(log_decays(rng, c.gates, c.T));
  p.beta = betas(rng, c.gates, c.T);
  p.scale = 1.0 / std::sqrt(double(c.dk));
  if (c.with_initial_state) p.initial_state = gaussian(rng, c.dk, c.dv, 1.0);
  return p;
}

}  // namespace larc::props
