// Every mechanism's reference computation split over its (sequence, head) pairs (cores.h): the pairs
// are independent, so each runs as a case of its own (B = H = 1) and the outputs are put back in
// place — bitwise those of one call over all of them.
#pragma once

#include "larc/harness/mechanism.h"

namespace larc::harness::detail {

// Wraps m.compute, m.compute_io and m.compute_rounding_draw so that a call over B·H > 1 pairs runs them
// on the core budget's idle cores (one call over all of them when none is idle). A pair is a sequence and
// a query/key head with its value heads (W dims, Shape::HV); an input without a B (or head) axis — one
// head shared by all, as log-linear's q — is given whole to every pair.
void split_compute_over_heads(Mechanism& m);

}  // namespace larc::harness::detail
