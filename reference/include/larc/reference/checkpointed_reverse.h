// The reverse sweep every backward verb shares (docs/gradients.md): a reverse pass needs the state
// before and after each token, but keeps only the states before tokens 0, C, 2C, … (C = checkpoint);
// each segment's states are recomputed from its checkpoint with the forward's own step, so memory is
// O((T/C + C)·|state|) and the cost about two forwards and one reverse. No state is ever recovered by
// inverting a step: that divides by the decay, which may be 0.
#pragma once

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "larc/reference/types.h"

namespace larc::ref {

// Calls visit(t, before, after) for t = T − 1 down to 0, with the state before and after token t;
// step(t, state) advances `state` over token t exactly as the forward form does.
template <class State, class Step, class Visit>
void reverse_over_states(State start, Eigen::Index T, Eigen::Index checkpoint, Step step, Visit visit) {
  if (checkpoint < 1) throw std::invalid_argument("backward: checkpoint must be >= 1");
  std::vector<State> checkpoints{std::move(start)};  // the states before tokens 0, C, 2C, …
  for (Eigen::Index c0 = checkpoint; c0 < T; c0 += checkpoint) {
    State state = checkpoints.back();
    for (Eigen::Index t = c0 - checkpoint; t < c0; ++t) step(t, state);
    checkpoints.push_back(std::move(state));
  }
  for (auto seg = static_cast<Eigen::Index>(checkpoints.size()) - 1; seg >= 0; --seg) {
    const Eigen::Index c0 = seg * checkpoint, n = std::min(checkpoint, T - c0);
    std::vector<State> states{checkpoints[static_cast<std::size_t>(seg)]};  // before c0, …, after c0 + n − 1
    states.reserve(static_cast<std::size_t>(n + 1));
    for (Eigen::Index t = c0; t < c0 + n; ++t) {
      states.push_back(states.back());
      step(t, states.back());
    }
    for (Eigen::Index j = n - 1; j >= 0; --j)
      visit(c0 + j, states[static_cast<std::size_t>(j)], states[static_cast<std::size_t>(j + 1)]);
  }
}

// The cotangents of a sequence's outputs and final state: do (T×d_v, or empty for zero) and dht
// (d_k×d_v, or absent). Throws std::invalid_argument naming `family` and the cotangent whose shape is wrong.
template <class S>
void validate_output_cotangents(const std::string& family, Eigen::Index T, Eigen::Index dk, Eigen::Index dv,
                                const Mat<S>& d_o, const std::optional<Mat<S>>& d_final_state) {
  if (d_o.size() != 0 && (d_o.rows() != T || d_o.cols() != dv))
    throw std::invalid_argument(family + "::backward: d_o must be T×d_v (or empty for zero)");
  if (d_final_state && (d_final_state->rows() != dk || d_final_state->cols() != dv))
    throw std::invalid_argument(family + "::backward: d_final_state must be d_k×d_v");
}

}  // namespace larc::ref
