// Honest roundings of a quantity a float algorithm derives from its inputs before its recurrence (the
// decays α = e^g, KLA's β = η / (‖k‖² + ε)): as honest as an exp or a division with one ulp of error.
// Draw 0 leaves the values as computed. Draw r ≥ 1 moves about half of the entries one ulp up or down,
// each entry's choice a fixed function of (r, the inputs it derives from, index), so a draw is reproducible
// everywhere and does not depend on how the heads are batched. The
// values 0 and 1 stay (exp is exact at −∞ and 0; a zero step is exact), as does anything non-finite.
// The gate's gradient baselines run under several draws where one run's error at a cancelling slice is
// one sample of a wide spread (docs/gate.md "Gradient baselines over honest roundings").
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>

#include "larc/common/splitmix.h"
#include "larc/reference/types.h"

namespace larc::ref {

// A stream named by `values` themselves (their bits, with `salt`): the same wherever the same values are
// computed, whole or split over heads, and another for another head's values.
template <class S>
std::uint64_t stream_of_values(const Vec<S>& values, std::uint64_t salt) {
  std::uint64_t h = splitmix::mix(salt + splitmix::kIncrement);
  if constexpr (std::is_floating_point_v<S>) {
    for (Eigen::Index i = 0; i < values.size(); ++i) {
      std::uint64_t bits = 0;
      std::memcpy(&bits, &values(i), sizeof(S));
      h = splitmix::mix(h ^ bits);
    }
  }
  return h;
}

// x under rounding draw `draw` of the stream named by `names` (the inputs x derives from, e.g. a head's
// log-decays) and `salt` (which quantity): entry i's move is a function of (draw, stream_of_values(names,
// salt), i). Draw 0 returns x untouched, names unread. Binary floating-point S alone: the oracle's exact and
// multi-word scalars never take a draw.
template <class S>
Vec<S> in_rounding_draw(Vec<S> x, std::uint64_t draw, const Vec<S>& names, std::uint64_t salt) {
  if (draw == 0) return x;
  if constexpr (std::is_floating_point_v<S>) {
    const std::uint64_t stream = stream_of_values(names, salt);
    const std::uint64_t base = splitmix::mix(splitmix::mix(draw) ^ (stream * splitmix::kIncrement));
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      const S v = x(i);
      if (!std::isfinite(v) || v == S(0) || v == S(1)) continue;
      const std::uint64_t bits = splitmix::mix(base + static_cast<std::uint64_t>(i));
      const S toward = bits & 2 ? std::numeric_limits<S>::infinity() : -std::numeric_limits<S>::infinity();
      if (bits & 1) x(i) = std::nextafter(v, toward);
    }
    return x;
  } else {
    throw std::invalid_argument("a rounding draw applies to binary floating-point scalars only");
  }
}

}  // namespace larc::ref
