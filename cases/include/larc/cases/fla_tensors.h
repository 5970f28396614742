// Inputs in FLA's layout ([B,T,H,D] sequences, [B,T,H] or [B,T,H,K] gates) drawn from the regimes
// of regimes.h with the seekable cases::Rng: what the gate's and the fuzzer's case generators build
// every mechanism's inputs from.
#pragma once

#include <cstdint>
#include <vector>

#include "larc/cases/rng.h"
#include "larc/reference/tensor.h"

namespace larc::cases {

// Entries of q and v (and of unnormalised keys): Gaussian, or Student's t(3) scaled to unit variance
// (rare huge entries, the heavy tails of trained activations).
enum class Entries { gaussian = 0, heavy_tailed = 1 };

// Entries of the given shape: sigma · N(0, 1), or sigma · t(3)/√3.
ref::Tensor<double> entries_tensor(Rng& rng, std::vector<std::int64_t> shape, double sigma, Entries kind);
ref::Tensor<double> normal_tensor(Rng& rng, std::vector<std::int64_t> shape, double sigma);
ref::Tensor<double> uniform_tensor(Rng& rng, std::vector<std::int64_t> shape, double lo, double hi);

// How the keys of one (sequence, head) relate to each other.
enum class KeySet {
  collinear = 0,     // random unit directions pulled toward one shared direction u by the collinearity c
  orthonormal = 1,   // the rows of a random orthogonal matrix, K of them, repeated cyclically over t
  heavy_tailed = 2,  // directions of t(3) vectors: a few coordinates dominate
};
inline constexpr int kKeySets = 3;

// Keys [B,T,H,K], each of norm `norm`. For KeySet::collinear each key is
// norm · unit((1 − c) z + c u), z a random unit vector and u one unit direction per (b, h).
ref::Tensor<double> keys_tensor(Rng& rng, std::int64_t B, std::int64_t T, std::int64_t H, std::int64_t K, KeySet set,
                                double collinearity, double norm);

// Rescales every row of x (its last axis: one token of one head) to a norm of its own, drawn
// log-uniformly between lo and hi (either order; both > 0): the spread norms of raw queries and keys
// that a kernel normalises itself. A zero row stays zero.
void scale_rows_to_log_uniform_norms(Rng& rng, ref::Tensor<double>& x, double lo, double hi);

// Edge regimes of log-decays, applied in place to g (any shape): each entry independently becomes −∞
// (α = 0: the token forgets everything before it) with probability hard_fraction, else exactly 0
// (α = 1: no decay) with probability zero_fraction. Drawn from `rng` alone, so the rest of a case's
// inputs do not depend on the fractions.
void apply_decay_regimes(Rng& rng, ref::Tensor<double>& g, double hard_fraction, double zero_fraction);

}  // namespace larc::cases
