// Counterexample search with RapidCheck's generators and shrink trees, usable outside a test: the
// ledger (`larc claims`) and the property tests search the same way, from the same seed.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <optional>
#include <string>

namespace larc::props {

template <class Case>
struct Counterexample {
  Case value;
  std::string failure;  // what the check saw on the shrunk case
  int trial = 0;        // which trial first failed
  int shrink_steps = 0;
};

// Draws `trials` cases from gen (seeded, sizes growing like RapidCheck's), runs check on each
// (check returns a failure description or nullopt) and greedily shrinks the first failure.
template <class Case, class Check>
std::optional<Counterexample<Case>> find_counterexample(const rc::Gen<Case>& gen, std::uint64_t seed, int trials,
                                                        Check&& check) {
  rc::Random random(seed);
  for (int i = 0; i < trials; ++i) {
    const int size = trials > 1 ? i * 100 / (trials - 1) : 100;
    rc::Shrinkable<Case> current = gen(random.split(), size);
    std::optional<std::string> failure = check(current.value());
    if (!failure) continue;
    Counterexample<Case> cx{current.value(), *failure, i, 0};
    for (bool progress = true; progress;) {
      progress = false;
      auto shrinks = current.shrinks();
      while (auto candidate = shrinks.next()) {
        if (auto f = check(candidate->value())) {
          current = *candidate;
          cx = {current.value(), *f, i, cx.shrink_steps + 1};
          progress = true;
          break;
        }
      }
    }
    return cx;
  }
  return std::nullopt;
}

}  // namespace larc::props
