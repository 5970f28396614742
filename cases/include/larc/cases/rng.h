// The gate's and the fuzzer's random numbers: splitmix64 over a counter, portable and seekable, so a
// case's inputs depend only on its seed (and streams mixed from one seed are independent).
#pragma once

#include <cstdint>

#include "larc/common/splitmix.h"

namespace larc::cases {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t bits();
  double uniform();                         // [0, 1)
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal();                          // Box–Muller, one value per call
  double log_uniform(double lo, double hi);  // lo, hi > 0
  // Moves the stream `draws` draws ahead, where that many bits() calls would leave it (the state is a
  // counter), so that runs of one stream can be drawn apart.
  void skip(std::uint64_t draws) { state_ += draws * splitmix::kIncrement; }
  bool operator==(const Rng&) const = default;

 private:
  std::uint64_t state_;
};

// Mixes a seed with a stream id (so q, k, v, ... and cases drawn from one base seed are independent).
std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream);

}  // namespace larc::cases
