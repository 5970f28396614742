// Inputs in FLA's layout ([B,T,H,D] sequences, [B,T,H] or [B,T,H,K] gates) drawn from the regimes
// of regimes.h with the seekable cases::Rng: what the gate's and the fuzzer's case generators build
// every mechanism's inputs from.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "larc/cases/rng.h"
#include "larc/reference/tensor.h"

namespace larc::cases {

// Entries of q and v (and of unnormalised keys): Gaussian, or Student's t(3) scaled to unit variance
// (rare huge entries, the heavy tails of trained activations).
enum class Entries { gaussian = 0, heavy_tailed = 1 };

// Runs fn(begin, end) over [0, n) cut into runs of `run` indices, in any order and possibly at once: how
// the generators below may spread one tensor's draws over cores (the harness lends its idle ones).
// `in_order` runs them one after another on the calling thread.
using Runs = std::function<void(std::size_t n, std::size_t run, const std::function<void(std::size_t, std::size_t)>& fn)>;
void in_order(std::size_t n, std::size_t run, const std::function<void(std::size_t, std::size_t)>& fn);

// Values [0, n) of rng's stream, value i by draw(r, i), which takes `draws` draws of r unless a rejection
// loop takes more (Box–Muller's u1 = 0, an all-zero random vector: 2^-53 a draw). Each run starts where
// the stream would be had the values before it taken no more (Rng::skip); a run that ends anywhere else
// saw a rejection, and then every value is drawn again in order. So the values and rng's state after are
// those of one pass in order, whatever `runs` does.
template <class Draw>
void draw_in_runs(Rng& rng, std::size_t n, std::size_t run, std::uint64_t draws, const Runs& runs, Draw draw) {
  std::atomic<bool> misplaced{false};
  runs(n, run, [&](std::size_t begin, std::size_t end) {
    Rng r = rng;
    r.skip(begin * draws);
    for (std::size_t i = begin; i < end; ++i) draw(r, i);
    Rng expected = rng;
    expected.skip(end * draws);
    if (!(r == expected)) misplaced = true;
  });
  if (!misplaced) {
    rng.skip(n * draws);
    return;
  }
  for (std::size_t i = 0; i < n; ++i) draw(rng, i);
}

// Entries of the given shape: sigma · N(0, 1), or sigma · t(3)/√3. Whatever `runs` does, the values and
// rng's state after are those of one pass in order (Gaussian and uniform draws, and collinear keys, are
// drawn by draw_in_runs).
ref::Tensor<double> entries_tensor(Rng& rng, std::vector<std::int64_t> shape, double sigma, Entries kind,
                                   const Runs& runs);
ref::Tensor<double> normal_tensor(Rng& rng, std::vector<std::int64_t> shape, double sigma, const Runs& runs);
ref::Tensor<double> uniform_tensor(Rng& rng, std::vector<std::int64_t> shape, double lo, double hi,
                                   const Runs& runs);

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
                                double collinearity, double norm, const Runs& runs);

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
