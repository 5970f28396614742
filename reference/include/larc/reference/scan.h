// Generic work-efficient (Blelloch) scan over any associative operator, evaluated serially in the
// order the parallel algorithm uses: an up-sweep that builds segment summaries over a balanced tree,
// then a down-sweep that hands every leaf the summary of everything before it. Used by VLA (affine
// maps S ↦ S F + G, SPEC §1, claim VLA-C9) and HLA (segment summaries, SPEC §5, HLA-C4/C5/C8).
//
// Convention: combine(a, b) is the summary of segment a followed by segment b (a is earlier).
// The operator must be associative and `identity` a two-sided identity for it; nothing here assumes
// commutativity. Because the tree groups the operands differently from a left fold, comparing these
// results with a serial fold is exactly a test of associativity of the operator on those inputs.
#pragma once

#include <cstddef>
#include <vector>

namespace larc::ref::scan {

// Exclusive scan: out[i] = x[0] ⊕ … ⊕ x[i-1] (out[0] = identity), grouped as Blelloch's tree groups it.
// The input is padded with the identity up to a power of two.
template <class T, class Combine>
std::vector<T> blelloch_exclusive(std::vector<T> x, const Combine& combine, const T& identity) {
  const std::size_t n = x.size();
  if (n == 0) return x;
  std::size_t m = 1;
  while (m < n) m <<= 1;
  x.resize(m, identity);
  // Up-sweep: x[i] becomes the summary of the 2d leaves ending at i.
  for (std::size_t d = 1; d < m; d <<= 1)
    for (std::size_t i = 2 * d - 1; i < m; i += 2 * d) x[i] = combine(x[i - d], x[i]);
  // Down-sweep: x[i] holds the summary of everything before its subtree; the left child inherits it,
  // the right child gets it followed by the left child's segment.
  x[m - 1] = identity;
  for (std::size_t d = m / 2; d >= 1; d >>= 1) {
    for (std::size_t i = 2 * d - 1; i < m; i += 2 * d) {
      T left_segment = x[i - d];
      x[i - d] = x[i];
      x[i] = combine(x[i], left_segment);
    }
    if (d == 1) break;
  }
  x.resize(n);
  return x;
}

// Inclusive scan: out[i] = x[0] ⊕ … ⊕ x[i], from the exclusive scan followed by including the local
// element (the way SPEC §5 says HLA's inclusive states are formed).
template <class T, class Combine>
std::vector<T> blelloch_inclusive(const std::vector<T>& x, const Combine& combine, const T& identity) {
  std::vector<T> out = blelloch_exclusive(x, combine, identity);
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = combine(out[i], x[i]);
  return out;
}

// Left fold in token order, the serial counterpart: out[i] = (…(x[0] ⊕ x[1]) ⊕ …) ⊕ x[i].
template <class T, class Combine>
std::vector<T> serial_inclusive(const std::vector<T>& x, const Combine& combine) {
  std::vector<T> out;
  out.reserve(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) out.push_back(i == 0 ? x[0] : combine(out.back(), x[i]));
  return out;
}

}  // namespace larc::ref::scan
