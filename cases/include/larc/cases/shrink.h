// The one shrinker: greedy descent from a failing case. The claims' counterexample search
// (properties/search.h, over RapidCheck's shrink trees) and the fuzzer (harness/fuzz.h, over a failing
// case's reductions) both shrink with it, so a counterexample is minimised the same way wherever it
// was found.
#pragma once

#include <climits>
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

namespace larc::cases {

struct ShrinkCount {
  int steps = 0;  // moves to a simpler failing case
  int tries = 0;  // candidates tried
};

// From `current` (a failing case), repeatedly try the candidates of the current case in order and move
// to the first that still fails, until none does or `max_tries` candidates were tried.
// candidates_of(current) returns a sequence whose next() yields each candidate (an rc::Seq, or
// CandidateList below) and ends with an empty value; try_candidate(candidate) returns the case to move
// to (contextually true) when the candidate still fails, and an empty value otherwise.
template <class Node, class CandidatesOf, class TryCandidate>
ShrinkCount shrink_greedily(Node& current, CandidatesOf&& candidates_of, TryCandidate&& try_candidate,
                            int max_tries = INT_MAX) {
  ShrinkCount n;
  for (bool moved = true; moved;) {
    moved = false;
    auto candidates = candidates_of(current);
    while (auto candidate = candidates.next()) {
      if (n.tries >= max_tries) return n;
      ++n.tries;
      if (auto next = try_candidate(*candidate)) {
        current = std::move(*next);
        ++n.steps;
        moved = true;
        break;
      }
    }
  }
  return n;
}

// Candidates held in a vector, as a sequence for shrink_greedily.
template <class T>
class CandidateList {
 public:
  explicit CandidateList(std::vector<T> items) : items_(std::move(items)) {}
  std::optional<T> next() {
    if (i_ == items_.size()) return std::nullopt;
    return items_[i_++];
  }

 private:
  std::vector<T> items_;
  std::size_t i_ = 0;
};

}  // namespace larc::cases
