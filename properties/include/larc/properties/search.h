// Counterexample search with RapidCheck's generators and shrink trees, usable outside a test: the
// ledger (`larc claims`) and the property tests search the same way, from the same seed.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <optional>
#include <string>

#include "larc/cases/shrink.h"

namespace larc::props {

template <class Case>
struct Counterexample {
  Case value;
  std::string failure;  // what the check saw on the shrunk case
  int trial = 0;        // which trial first failed
  int shrink_steps = 0;
};

// Draws `trials` cases from gen (seeded, sizes growing like RapidCheck's), runs check on each
// (check returns a failure description or nullopt) and shrinks the first failure through its shrink
// tree with the one shrinker (cases::shrink_greedily).
template <class Case, class Check>
std::optional<Counterexample<Case>> find_counterexample(const rc::Gen<Case>& gen, std::uint64_t seed, int trials,
                                                        Check&& check) {
  rc::Random random(seed);
  for (int i = 0; i < trials; ++i) {
    const int size = trials > 1 ? i * 100 / (trials - 1) : 100;
    rc::Shrinkable<Case> current = gen(random.split(), size);
    std::optional<std::string> failure = check(current.value());
    if (!failure) continue;
    const cases::ShrinkCount n = cases::shrink_greedily(
        current, [](const rc::Shrinkable<Case>& c) { return c.shrinks(); },
        [&](const rc::Shrinkable<Case>& candidate) -> std::optional<rc::Shrinkable<Case>> {
          std::optional<std::string> f = check(candidate.value());
          if (!f) return std::nullopt;
          failure = std::move(f);
          return candidate;
        });
    return Counterexample<Case>{current.value(), *failure, i, n.steps};
  }
  return std::nullopt;
}

}  // namespace larc::props
